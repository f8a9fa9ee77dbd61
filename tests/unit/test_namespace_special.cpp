// Special files (FIFOs, sockets, devices) and birth times in the metadata
// namespace: made, listed, linked, renamed, removed, journaled and
// snapshotted like any inode.
#include <catch2/catch.hpp>

#include <dirent.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "namespace_codec.hpp"
#include "namespace_test_util.hpp"

using namespace pfs;
using namespace pfs::meta;
using namespace pfs::test;

namespace {

uint8_t listed_type(const Fs& fs, const pfs_entry_id& dir, const std::string& name) {
    auto page = fs.ns.readdir(dir, 0, 1000);
    REQUIRE(page);
    for (const auto& e : page->entries)
        if (e.name == name) return e.type;
    FAIL("no entry " << name);
    return 0;
}

std::vector<uint8_t> snapshot_bytes(const Namespace& ns) {
    std::vector<uint8_t> out;
    REQUIRE(ns.snapshot_to([&](std::span<const uint8_t> b) { out.insert(out.end(), b.begin(), b.end()); }));
    return out;
}

}  // namespace

TEST_CASE("mknod makes FIFOs, sockets and devices with their type and number", "[namespace]") {
    Fs fs;
    auto root = fs.root();
    const uint32_t null_dev = pfs_encode_dev(1, 3), big = pfs_encode_dev(4000, 300000);
    auto fifo = fs.ns.mknod(root, "p", S_IFIFO | 0640, 0, 1000, 100, at(10));
    auto sock = fs.ns.mknod(root, "s", S_IFSOCK | 0755, 0, 1000, 100, at(11));
    auto chr = fs.ns.mknod(root, "null", S_IFCHR | 0666, null_dev, 0, 0, at(12));
    auto blk = fs.ns.mknod(root, "big", S_IFBLK | 0600, big, 0, 0, at(13));
    REQUIRE(fifo);
    REQUIRE(sock);
    REQUIRE(chr);
    REQUIRE(blk);
    CHECK(fifo->mode == (S_IFIFO | 0640));
    CHECK(fifo->nlink == 1);
    CHECK(fifo->size == 0);
    CHECK(fifo->rdev == 0);
    CHECK(fifo->uid == 1000);
    CHECK(chr->rdev == null_dev);
    CHECK(pfs_dev_major(blk->rdev) == 4000);
    CHECK(pfs_dev_minor(blk->rdev) == 300000);
    CHECK(pfs_encode_dev(major(makedev(4000, 300000)), minor(makedev(4000, 300000))) == big);
    CHECK(listed_type(fs, root, "p") == DT_FIFO);
    CHECK(listed_type(fs, root, "s") == DT_SOCK);
    CHECK(listed_type(fs, root, "null") == DT_CHR);
    CHECK(listed_type(fs, root, "big") == DT_BLK);
    CHECK(fs.ns.counts().specials == 4);
    // A FIFO or socket keeps no device number.
    CHECK(fs.ns.mknod(root, "p2", S_IFIFO | 0600, null_dev, 0, 0, at(14))->rdev == 0);

    CHECK(err(fs.ns.mknod(root, "p", S_IFIFO | 0600, 0, 0, 0, at(15))) == -EEXIST);
    CHECK(err(fs.ns.mknod(root, "f", S_IFREG | 0600, 0, 0, 0, at(15))) == -EINVAL);
    CHECK(err(fs.ns.mknod(root, "d", S_IFDIR | 0600, 0, 0, 0, at(15))) == -EINVAL);
    CHECK(err(fs.ns.mknod(root, "x", 0600, 0, 0, 0, at(15))) == -EINVAL);
    CHECK(err(fs.ns.mknod(root, "x", S_IFIFO | 010000000, 0, 0, 0, at(15))) == -EINVAL);
    CHECK(err(fs.ns.mknod(fifo->id, "x", S_IFIFO | 0600, 0, 0, 0, at(15))) == -ENOTDIR);
    // No size, no user xattrs, no readlink: it has no contents here.
    CHECK(err(fs.ns.setattr(fifo->id, AttrChanges{.size = 0}, at(16))) == -EINVAL);
    CHECK(err(fs.ns.set_xattr(fifo->id, "user.k", "v", 0, at(16))) == -EPERM);
    CHECK(err(fs.ns.readlink(fifo->id)) == -EINVAL);
}

TEST_CASE("special files link, rename, chmod and unlink like any inode", "[namespace]") {
    Fs fs;
    auto root = fs.root();
    auto d = fs.dir(root, "d");
    auto p = fs.ns.mknod(root, "p", S_IFIFO | 0600, 0, 1000, 100, at(10));
    REQUIRE(p);
    REQUIRE(fs.ns.link(p->id, d, "p2", at(11)));
    CHECK(fs.stat(p->id).nlink == 2);
    CHECK(listed_type(fs, d, "p2") == DT_FIFO);
    REQUIRE(fs.ns.rename(d, "p2", root, "q", 0, at(12)));
    CHECK(listed_type(fs, root, "q") == DT_FIFO);
    // over a file, and a file over it
    fs.file(root, "f");
    REQUIRE(fs.ns.rename(root, "q", root, "f", 0, at(13)));
    CHECK(listed_type(fs, root, "f") == DT_FIFO);
    CHECK(err(fs.ns.rename(root, "d", root, "f", 0, at(14))) == -ENOTDIR);
    CHECK(err(fs.ns.rename(root, "f", root, "d", 0, at(14))) == -EISDIR);
    REQUIRE(fs.ns.setattr(p->id, AttrChanges{.mode = 0644, .uid = 5, .mtime = at(1)}, at(15)));
    auto a = fs.stat(p->id);
    CHECK(a.mode == (S_IFIFO | 0644));
    CHECK(a.uid == 5);
    CHECK(a.mtime == at(1));
    CHECK(a.ctime == at(15));
    REQUIRE(fs.ns.unlink(root, "p", at(16)));
    auto gone = fs.ns.unlink(root, "f", at(17));
    REQUIRE(gone);
    CHECK_FALSE(gone->freed);  // no chunks to delete
    CHECK(err(fs.ns.getattr(p->id)) == -ESTALE);
    CHECK(fs.ns.counts().specials == 0);
}

TEST_CASE("the birth time is the creation's and never moves", "[namespace]") {
    Fs fs;
    auto root = fs.root();
    CHECK(fs.stat(root).btime == at(1));
    auto f = fs.ns.create(root, "f", 0644, 0, 0, at(20), first_targets());
    auto d = fs.ns.mkdir(root, "d", 0755, 0, 0, at(21));
    auto l = fs.ns.symlink(root, "l", "f", 0, 0, at(22));
    auto p = fs.ns.mknod(root, "p", S_IFIFO | 0600, 0, 0, 0, at(23));
    REQUIRE(f);
    REQUIRE(d);
    REQUIRE(l);
    REQUIRE(p);
    CHECK(f->attr.btime == at(20));
    CHECK(d->btime == at(21));
    CHECK(l->btime == at(22));
    CHECK(p->btime == at(23));
    REQUIRE(fs.ns.setattr(f->attr.id, AttrChanges{.mode = 0600, .size = 10, .mtime = at(2)}, at(30)));
    REQUIRE(fs.ns.rename(root, "f", d->id, "g", 0, at(31)));
    REQUIRE(fs.ns.link(f->attr.id, root, "h", at(32)));
    CHECK(fs.stat(f->attr.id).btime == at(20));
}

TEST_CASE("special files and birth times survive the journal and snapshots", "[namespace]") {
    Fs fs;
    auto root = fs.root();
    std::vector<std::vector<uint8_t>> log;
    Namespace start = std::move(Namespace::restore(snapshot_bytes(fs.ns)).value());
    fs.ns.set_observer([&](const Op& op) { log.push_back(encode_op(op).value()); });
    auto chr = fs.ns.mknod(root, "null", S_IFCHR | 0620, pfs_encode_dev(1, 3), 0, 5, at(10));
    auto p = fs.ns.mknod(root, "p", S_IFIFO | 0600, 0, 7, 8, at(11));
    REQUIRE(chr);
    REQUIRE(p);
    REQUIRE(fs.ns.link(p->id, root, "p2", at(12)));
    auto snap = snapshot_bytes(fs.ns);

    // the journal replayed onto the state before
    for (const auto& rec : log) REQUIRE(start.apply(decode_op(rec).value()));
    CHECK(snapshot_bytes(start) == snap);
    // the snapshot restored
    auto back = Namespace::restore(snap);
    REQUIRE(back);
    CHECK(snapshot_bytes(*back) == snap);
    auto a = back->getattr(chr->id);
    REQUIRE(a);
    CHECK(a->mode == (S_IFCHR | 0620));
    CHECK(a->rdev == pfs_encode_dev(1, 3));
    CHECK(a->btime == at(10));
    CHECK(back->getattr(p->id)->nlink == 2);
    CHECK(back->counts().specials == 2);
    auto page = back->readdir(root, 0, 10);
    REQUIRE(page);
    int fifos = 0;
    for (const auto& e : page->entries) fifos += e.type == DT_FIFO;
    CHECK(fifos == 2);
}

TEST_CASE("O_TMPFILE: a file no entry names lives while open, or once linked", "[namespace]") {
    Fs fs;
    auto root = fs.root();
    auto d = fs.dir(root, "d");
    REQUIRE(fs.ns.set_pattern(d, StripePattern{1u << 16, 2, 1}, fs.tick()));
    auto t = fs.ns.tmpfile(d, 0600, 1000, 100, at(50), first_targets());
    REQUIRE(t);
    CHECK(t->mode == (S_IFREG | 0600));
    CHECK(t->nlink == 0);
    CHECK(t->btime == at(50));
    CHECK(fs.ns.layout(t->id)->chunk_size == 1u << 16);
    CHECK(fs.names(d).size() == 2);  // "." and ".." only
    REQUIRE(fs.ns.open(t->id));
    // linkat() gives it a name: a file like any other from then on
    REQUIRE(fs.ns.link(t->id, d, "named", at(51)));
    CHECK(fs.stat(d, "named").nlink == 1);
    CHECK(fs.ns.orphans().empty());
    auto freed = fs.ns.close(t->id);
    REQUIRE(freed);
    CHECK_FALSE(*freed);
    CHECK(fs.stat(t->id).nlink == 1);

    // one never linked goes at its last close, chunks and all
    auto u = fs.ns.tmpfile(d, 0644, 0, 0, at(52), first_targets());
    REQUIRE(u);
    REQUIRE(fs.ns.open(u->id));
    CHECK(fs.ns.orphans().size() == 1);
    auto gone = fs.ns.close(u->id);
    REQUIRE(gone);
    REQUIRE(*gone);
    CHECK((*gone)->id.ino == u->id.ino);
    CHECK(err(fs.ns.getattr(u->id)) == -ESTALE);

    // an ordinary unlinked file cannot be linked back
    auto f = fs.file(d, "f");
    REQUIRE(fs.ns.open(f));
    REQUIRE(fs.ns.unlink(d, "f", at(53)));
    CHECK(err(fs.ns.link(f, d, "back", at(54))) == -ENOENT);
    // nor can a linked O_TMPFILE be linked again once its names are gone
    REQUIRE(fs.ns.open(t->id));
    REQUIRE(fs.ns.unlink(d, "named", at(55)));
    CHECK(err(fs.ns.link(t->id, d, "again", at(56))) == -ENOENT);
    CHECK(err(fs.ns.tmpfile(t->id, 0600, 0, 0, at(57), first_targets())) == -ENOTDIR);
}

TEST_CASE("O_TMPFILE's op replays from the journal", "[namespace]") {
    Fs fs;
    auto root = fs.root();
    std::vector<std::vector<uint8_t>> log;
    Namespace start = std::move(Namespace::restore(snapshot_bytes(fs.ns)).value());
    fs.ns.set_observer([&](const Op& op) { log.push_back(encode_op(op).value()); });
    auto t = fs.ns.tmpfile(root, 0640, 3, 4, at(10), first_targets());
    REQUIRE(t);
    REQUIRE(fs.ns.link(t->id, root, "kept", at(11)));
    for (const auto& rec : log) REQUIRE(start.apply(decode_op(rec).value()));
    CHECK(snapshot_bytes(start) == snapshot_bytes(fs.ns));
    CHECK(start.lookup(root, "kept")->btime == at(10));
}
