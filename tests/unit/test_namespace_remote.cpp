// Directories across metadata servers, as one server's namespace sees them:
// detached directories (named by another server) and entries naming
// another server's directories.
#include <catch2/catch.hpp>

#include <dirent.h>

#include "namespace_test_util.hpp"

using namespace pfs;
using namespace pfs::meta;
using namespace pfs::test;

namespace {

pfs_entry_id detached(Fs& fs, const pfs_entry_id& parent = other_id(1)) {
    auto r = fs.ns.mkdir_detached(parent, 02750, 1000, 100, StripePattern{1u << 16, 2, 1}, fs.tick());
    REQUIRE(r);
    return r->id;
}

uint8_t state_of(const Fs& fs, const pfs_entry_id& id) {
    auto s = fs.ns.detached_state(id);
    REQUIRE(s);
    return s->state;
}

}  // namespace

TEST_CASE("a detached directory lives here while its entry lives elsewhere", "[namespace][remote]") {
    Fs fs;
    auto d = detached(fs);
    auto a = fs.stat(d);
    CHECK(a.mode == (S_IFDIR | 02750));
    CHECK(a.nlink == 2);
    CHECK(a.uid == 1000);
    CHECK(fs.ns.pattern(d)->chunk_size == 1u << 16);
    CHECK(state_of(fs, d) == PFS_DETACHED_CREATED);
    REQUIRE(fs.ns.unsettled().size() == 1);
    CHECK(fs.ns.unsettled()[0].remote.dir.owner_node == kOtherNode);

    // ".." is the parent on the other server.
    auto page = fs.ns.readdir(d, 0, 10);
    REQUIRE(page);
    REQUIRE(page->entries.size() == 2);
    CHECK(page->entries[1].id.owner_node == kOtherNode);
    auto dotdot = fs.ns.resolve(d, "..");
    REQUIRE(dotdot);
    CHECK(same_id(dotdot->id, other_id(1)));
    CHECK(err(fs.ns.lookup(d, "..")) == -EREMOTE);

    // It takes entries at once, and the root's tree does not name it.
    fs.file(d, "f");
    CHECK(fs.names(fs.root()) == std::vector<std::string>{".", ".."});
    REQUIRE(fs.ns.set_detached_state(d, PFS_DETACHED_CONFIRMED));
    CHECK(fs.ns.unsettled().empty());
    CHECK(fs.ns.detached(0, 10).size() == 1);

    // Its parent must be another server's; its own id a fresh one here.
    CHECK(err(fs.ns.mkdir_detached(fs.root(), 0755, 0, 0, StripePattern{}, fs.tick())) == -EINVAL);
    CHECK(err(fs.ns.set_detached_state(fs.root(), PFS_DETACHED_CONFIRMED)) == -EINVAL);
    CHECK(err(fs.ns.remove_detached(fs.root())) == -EINVAL);
}

TEST_CASE("a detached directory is removed only empty, and takes no entries once removal is prepared",
          "[namespace][remote]") {
    Fs fs;
    auto d = detached(fs);
    fs.file(d, "f");
    CHECK(err(fs.ns.set_detached_state(d, PFS_DETACHED_REMOVING)) == -ENOTEMPTY);
    CHECK(err(fs.ns.remove_detached(d)) == -ENOTEMPTY);
    REQUIRE(fs.ns.unlink(d, "f", fs.tick()));

    REQUIRE(fs.ns.set_detached_state(d, PFS_DETACHED_REMOVING));
    CHECK(err(fs.ns.create(d, "g", 0644, 0, 0, fs.tick(), first_targets())) == -ENOENT);
    CHECK(err(fs.ns.mkdir(d, "g", 0755, 0, 0, fs.tick())) == -ENOENT);
    CHECK(err(fs.ns.symlink(d, "g", "t", 0, 0, fs.tick())) == -ENOENT);
    auto f = fs.file(fs.root(), "f");
    CHECK(err(fs.ns.link(f, d, "g", fs.tick())) == -ENOENT);
    CHECK(err(fs.ns.rename(fs.root(), "f", d, "g", 0, fs.tick())) == -ENOENT);

    // Aborted: entries again.
    REQUIRE(fs.ns.set_detached_state(d, PFS_DETACHED_CONFIRMED));
    fs.file(d, "g");
    REQUIRE(fs.ns.unlink(d, "g", fs.tick()));

    REQUIRE(fs.ns.set_detached_state(d, PFS_DETACHED_REMOVING));
    auto before = fs.ns.counts().directories;
    REQUIRE(fs.ns.remove_detached(d));
    CHECK(fs.ns.counts().directories == before - 1);
    CHECK(err(fs.ns.getattr(d)) == -ESTALE);
    CHECK(err(fs.ns.remove_detached(d)) == -ESTALE);
    CHECK(fs.ns.detached(0, 10).empty());
}

TEST_CASE("an entry naming another server's directory", "[namespace][remote]") {
    Fs fs;
    auto root = fs.root();
    auto remote = other_id(42);
    auto nlink = fs.stat(root).nlink;
    REQUIRE(fs.ns.add_remote_dir(root, "r", remote, fs.tick()));
    CHECK(fs.stat(root).nlink == nlink + 1);
    CHECK(fs.ns.names(remote));
    auto slot = fs.ns.resolve(root, "r");
    REQUIRE(slot);
    CHECK(same_id(slot->id, remote));
    CHECK(slot->type == DT_DIR);
    CHECK(err(fs.ns.lookup(root, "r")) == -EREMOTE);
    auto page = fs.ns.readdir(root, 2, 10);
    REQUIRE(page->entries.size() == 1);
    CHECK(same_id(page->entries[0].id, remote));

    // The name is a directory's: taken, and not a file.
    CHECK(err(fs.ns.mkdir(root, "r", 0755, 0, 0, fs.tick())) == -EEXIST);
    CHECK(err(fs.ns.create(root, "r", 0644, 0, 0, fs.tick(), first_targets(), false)) == -EISDIR);
    CHECK(err(fs.ns.unlink(root, "r", fs.tick())) == -EISDIR);
    CHECK(err(fs.ns.add_remote_dir(root, "r2", remote, fs.tick())) == -EEXIST);  // one entry per directory
    CHECK(err(fs.ns.add_remote_dir(root, "mine", fs.root(), fs.tick())) == -EINVAL);

    // Renamed in place and moved to another directory of this server.
    auto d = fs.dir(root, "d");
    REQUIRE(fs.ns.rename(root, "r", root, "r2", 0, fs.tick()));
    REQUIRE(fs.ns.rename(root, "r2", d, "r3", 0, fs.tick()));
    CHECK(fs.stat(d).nlink == 3);
    CHECK(fs.stat(root).nlink == nlink + 1);  // d, not r, now
    CHECK(fs.ns.names(remote));
    // It may replace an empty local directory, not be replaced by one.
    fs.dir(root, "empty");
    REQUIRE(fs.ns.rename(d, "r3", root, "empty", 0, fs.tick()));
    CHECK(same_id(fs.ns.resolve(root, "empty")->id, remote));
    fs.dir(root, "x");
    CHECK(err(fs.ns.rename(root, "x", root, "empty", 0, fs.tick())) == -EXDEV);

    REQUIRE(fs.ns.rmdir(root, "empty", fs.tick()));
    CHECK_FALSE(fs.ns.names(remote));
    CHECK(err(fs.ns.resolve(root, "empty")) == -ENOENT);
}

TEST_CASE("a rename replaces another server's inode its owner holds", "[namespace][remote]") {
    Fs fs;
    auto root = fs.root();
    const auto remote = other_id(7);
    REQUIRE(fs.ns.add_remote_dir(root, "r", remote, fs.tick()));
    const uint32_t nlink = fs.stat(root).nlink;
    auto f = fs.file(root, "f");
    auto x = fs.dir(root, "x");
    // Not held: EXDEV; the types are checked here all the same.
    CHECK(err(fs.ns.rename(root, "x", root, "r", 0, fs.tick())) == -EXDEV);
    CHECK(err(fs.ns.rename(root, "f", root, "r", kRenameVictimHeld, fs.tick())) == -EISDIR);
    CHECK(err(fs.ns.rename(root, "x", root, "r", kRenameExchange | kRenameVictimHeld, fs.tick())) == -EXDEV);
    // Held (its owner checked it is empty): only the entry goes here.
    auto out = fs.ns.rename(root, "x", root, "r", kRenameVictimHeld, fs.tick());
    REQUIRE(out);
    CHECK(same_id(*out->replaced, remote));
    CHECK_FALSE(out->freed);
    CHECK_FALSE(fs.ns.names(remote));
    CHECK(same_id(fs.ns.resolve(root, "r")->id, x));
    CHECK(fs.stat(root).nlink == nlink);  // x replaced r
    CHECK(err(fs.ns.resolve(root, "x")) == -ENOENT);
    // A file over an entry naming another server's file (a moved-in one).
    REQUIRE(fs.ns.link_moved(root, "moved", other_id(8), DT_REG, false, fs.tick()));
    CHECK(err(fs.ns.rename(root, "f", root, "moved", 0, fs.tick())) == -EXDEV);
    REQUIRE(fs.ns.rename(root, "f", root, "moved", kRenameVictimHeld, fs.tick()));
    CHECK_FALSE(fs.ns.names(other_id(8)));
    CHECK(same_id(fs.ns.resolve(root, "moved")->id, f));
    // As after a restart: neither is named.
    auto snap = fs.ns.snapshot();
    REQUIRE(snap);
    auto back = Namespace::restore(*snap);
    REQUIRE(back);
    CHECK_FALSE(back->names(remote));
    CHECK_FALSE(back->names(other_id(8)));
}

TEST_CASE("a directory is not moved where this server cannot rule out a loop", "[namespace][remote]") {
    Fs fs;
    auto root = fs.root();
    auto d = detached(fs);
    auto sub = fs.dir(d, "sub");
    fs.dir(sub, "deeper");
    auto x = fs.dir(root, "x");
    fs.file(root, "f");
    // Below a detached directory the way up leaves this server: the moved
    // directory might be an ancestor there.
    CHECK(err(fs.ns.rename(root, "x", sub, "x", 0, fs.tick())) == -EXDEV);
    // Files carry no such risk; renames within one directory neither.
    REQUIRE(fs.ns.rename(root, "f", sub, "f", 0, fs.tick()));
    REQUIRE(fs.ns.rename(sub, "deeper", sub, "deep", 0, fs.tick()));
    // Up and out of it is fine when the target's way up reaches the root.
    REQUIRE(fs.ns.rename(sub, "deep", x, "deep", 0, fs.tick()));
    CHECK(err(fs.ns.rename(root, "x", x, "deep2", 0, fs.tick())) == -EINVAL);
}

TEST_CASE("a snapshot keeps detached directories and remote entries", "[namespace][remote]") {
    Fs fs;
    auto d = detached(fs);
    fs.file(d, "f");
    auto removing = detached(fs, other_id(2));
    REQUIRE(fs.ns.set_detached_state(removing, PFS_DETACHED_REMOVING));
    REQUIRE(fs.ns.add_remote_dir(fs.root(), "r", other_id(77), fs.tick()));
    auto snap = fs.ns.snapshot();
    REQUIRE(snap);
    auto back = Namespace::restore(*snap);
    REQUIRE(back);
    CHECK(*back->snapshot() == *snap);
    CHECK(back->names(other_id(77)));
    CHECK(back->detached_state(removing)->state == PFS_DETACHED_REMOVING);
    CHECK(back->detached_state(d)->state == PFS_DETACHED_CREATED);
    CHECK(back->unsettled().size() == 2);
    CHECK(back->counts().directories == fs.ns.counts().directories);
    CHECK(err(back->create(removing, "g", 0644, 0, 0, at(9999), first_targets())) == -ENOENT);
}
