// The metadata namespace's POSIX semantics: entries, links, rename, attributes,
// xattrs, readdir cookies, open orphans, permissions, and scale.
#include <catch2/catch.hpp>

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <set>

#include "namespace_test_util.hpp"

using namespace pfs;
using namespace pfs::meta;
using namespace pfs::test;

TEST_CASE("a new namespace holds the root directory", "[namespace]") {
    Fs fs;
    pfs_entry_id root = fs.root();
    CHECK(root.ino == 1);
    CHECK(root.owner_node == Fs::kNode);
    Attr a = fs.stat(root);
    CHECK(a.mode == (S_IFDIR | 0755));
    CHECK(a.nlink == 2);
    CHECK(a.ctime == at(1));
    CHECK(fs.stat(root, ".").id.ino == 1);
    CHECK(fs.stat(root, "..").id.ino == 1);
    CHECK(*fs.ns.pattern(root) == StripePattern{1u << 20, 4, 1, 128u << 10});
    Counts c = fs.ns.counts();
    CHECK(c.inodes == 1);
    CHECK(c.directories == 1);
    CHECK(c.files == 0);
}

TEST_CASE("create allocates inodes and stripes new files by the directory pattern", "[namespace]") {
    Fs fs;
    auto r = fs.ns.create(fs.root(), "a", 0640, 1000, 100, at(50), first_targets());
    REQUIRE(r);
    CHECK(r->created);
    CHECK(r->attr.id.ino == 2);
    CHECK(r->attr.mode == (S_IFREG | 0640));
    CHECK(r->attr.uid == 1000);
    CHECK(r->attr.gid == 100);
    CHECK(r->attr.nlink == 1);
    CHECK(r->attr.size == 0);
    CHECK(r->attr.mtime == at(50));
    CHECK(fs.stat(fs.root()).mtime == at(50));
    CHECK(fs.stat(fs.root()).size == 1);
    CHECK(*fs.ns.layout(r->attr.id) == StripeLayout{1u << 20, 1, {1, 2, 3, 4}});
    CHECK(fs.stat(fs.root(), "a").id.ino == 2);

    SECTION("an existing name") {
        CHECK(err(fs.ns.create(fs.root(), "a", 0644, 0, 0, at(60), first_targets())) == -EEXIST);
        auto again = fs.ns.create(fs.root(), "a", 0644, 0, 0, at(60), first_targets(), false);
        REQUIRE(again);
        CHECK_FALSE(again->created);
        CHECK(again->attr.id.ino == 2);
        CHECK(again->attr.mtime == at(50));
        fs.dir(fs.root(), "d");
        CHECK(err(fs.ns.create(fs.root(), "d", 0644, 0, 0, at(60), first_targets(), false)) == -EISDIR);
    }
    SECTION("target choice fails or is unusable") {
        auto none = [](const StripePattern&) -> Result<std::vector<uint32_t>> {
            return Error{-ENOSPC, "full"};
        };
        CHECK(err(fs.ns.create(fs.root(), "b", 0644, 0, 0, at(60), none)) == -ENOSPC);
        auto fixed = [](std::vector<uint32_t> t) {
            return [t](const StripePattern&) -> Result<std::vector<uint32_t>> { return t; };
        };
        CHECK(err(fs.ns.create(fs.root(), "b", 0644, 0, 0, at(60), fixed({}))) == -EINVAL);
        CHECK(err(fs.ns.create(fs.root(), "b", 0644, 0, 0, at(60), fixed({3, 3}))) == -EINVAL);
        CHECK(err(fs.ns.create(fs.root(), "b", 0644, 0, 0, at(60), fixed({0}))) == -EINVAL);
        CHECK(fs.ns.lookup(fs.root(), "b").error().code == -ENOENT);
        // Failed creates use up no inode numbers.
        CHECK(fs.file(fs.root(), "b").ino == 3);
        // Fewer targets than the pattern asks for is the chooser's call.
        CHECK(fs.ns.create(fs.root(), "c", 0644, 0, 0, at(60), fixed({9}))->attr.nlink == 1);
    }
    SECTION("only regular files") {
        CHECK(err(fs.ns.create(fs.root(), "b", S_IFDIR | 0755, 0, 0, at(60), first_targets())) == -EINVAL);
        CHECK(fs.ns.create(fs.root(), "b", S_IFREG | 0600, 0, 0, at(60), first_targets())->attr.mode ==
              (S_IFREG | 0600));
    }
    SECTION("a set-group-ID directory hands down its group") {
        auto shared = fs.dir(fs.root(), "shared", 02775);
        REQUIRE(fs.ns.setattr(shared, AttrChanges{.gid = 500}, at(70)));
        Attr f = fs.stat(fs.file(shared, "f"));
        CHECK(f.gid == 500);
        CHECK(f.mode == (S_IFREG | 0644));
        Attr sub = fs.stat(fs.dir(shared, "sub"));
        CHECK(sub.gid == 500);
        CHECK((sub.mode & S_ISGID) != 0);
    }
}

TEST_CASE("names and handles are validated like Linux does", "[namespace]") {
    Fs fs;
    auto root = fs.root();
    auto f = fs.file(root, "f");
    std::string long_name(256, 'x');
    CHECK(err(fs.ns.create(root, long_name, 0644, 0, 0, at(5), first_targets())) == -ENAMETOOLONG);
    CHECK(fs.ns.create(root, std::string(255, 'x'), 0644, 0, 0, at(5), first_targets()));
    CHECK(err(fs.ns.mkdir(root, "a/b", 0755, 0, 0, at(5))) == -EINVAL);
    CHECK(err(fs.ns.mkdir(root, std::string("a\0b", 3), 0755, 0, 0, at(5))) == -EINVAL);
    CHECK(err(fs.ns.mkdir(root, "", 0755, 0, 0, at(5))) == -ENOENT);
    CHECK(err(fs.ns.mkdir(root, ".", 0755, 0, 0, at(5))) == -EEXIST);
    CHECK(err(fs.ns.mkdir(root, "..", 0755, 0, 0, at(5))) == -EEXIST);
    CHECK(err(fs.ns.create(root, "..", 0644, 0, 0, at(5), first_targets())) == -EEXIST);
    CHECK(err(fs.ns.lookup(root, "missing")) == -ENOENT);
    CHECK(err(fs.ns.lookup(f, "x")) == -ENOTDIR);
    CHECK(err(fs.ns.mkdir(f, "x", 0755, 0, 0, at(5))) == -ENOTDIR);
    CHECK(err(fs.ns.readdir(f, 0, 10)) == -ENOTDIR);
    // Handles that name nothing here are stale.
    CHECK(err(fs.ns.getattr(pfs_entry_id{f.ino, f.owner_node, f.generation + 1})) == -ESTALE);
    CHECK(err(fs.ns.getattr(pfs_entry_id{f.ino, f.owner_node + 1, f.generation})) == -ESTALE);
    CHECK(err(fs.ns.getattr(pfs_entry_id{999, f.owner_node, f.generation})) == -ESTALE);
    CHECK(err(fs.ns.mkdir(pfs_entry_id{999, Fs::kNode, 1}, "x", 0755, 0, 0, at(5))) == -ESTALE);
    CHECK(err(fs.ns.mkdir(root, "x", 0755, 0, 0, at(5, 1000000000))) == -EINVAL);
}

TEST_CASE("directories count their links and hand down stripe patterns", "[namespace]") {
    Fs fs;
    auto root = fs.root();
    auto a = fs.dir(root, "a");
    CHECK(fs.stat(a).nlink == 2);
    CHECK(fs.stat(a).mode == (S_IFDIR | 0755));
    CHECK(fs.stat(root).nlink == 3);
    CHECK(fs.stat(a, "..").id.ino == root.ino);
    fs.dir(root, "b");
    CHECK(fs.stat(root).nlink == 4);
    fs.file(root, "f");
    CHECK(fs.stat(root).nlink == 4);

    StripePattern wide{1u << 20, 8, 2};
    REQUIRE(fs.ns.set_pattern(a, wide, at(300)));
    CHECK(fs.stat(a).ctime == at(300));
    auto sub = fs.dir(a, "sub");
    CHECK(*fs.ns.pattern(sub) == wide);
    auto layout = fs.ns.layout(fs.file(sub, "f"));
    CHECK(layout->chunk_size == (1u << 20));
    CHECK(layout->pool_id == 2);
    CHECK(layout->targets.size() == 8);
    CHECK(*fs.ns.pattern(root) == default_root_pattern());  // unchanged above

    CHECK(err(fs.ns.set_pattern(a, StripePattern{1000, 4, 1}, at(301))) == -EINVAL);
    CHECK(err(fs.ns.set_pattern(a, StripePattern{1u << 20, 0, 1}, at(301))) == -EINVAL);
    CHECK(err(fs.ns.set_pattern(a, StripePattern{1u << 20, 4, 0}, at(301))) == -EINVAL);
    CHECK(err(fs.ns.set_pattern(fs.file(root, "g"), wide, at(301))) == -ENOTDIR);
    CHECK(err(fs.ns.mkdir(root, "x", S_IFDIR | 0755, 0, 0, at(5))) == 0);  // type bits are ignored
    CHECK(fs.ns.counts().directories == 5);
}

TEST_CASE("symlinks", "[namespace]") {
    Fs fs;
    auto root = fs.root();
    auto l = fs.ns.symlink(root, "l", "../some/where", 1000, 100, at(10));
    REQUIRE(l);
    CHECK(l->mode == (S_IFLNK | 0777));
    CHECK(l->size == 13);
    CHECK(l->nlink == 1);
    CHECK(*fs.ns.readlink(l->id) == "../some/where");
    CHECK(err(fs.ns.readlink(fs.file(root, "f"))) == -EINVAL);
    CHECK(err(fs.ns.symlink(root, "e", "", 0, 0, at(10))) == -ENOENT);
    CHECK(err(fs.ns.symlink(root, "e", std::string(4096, 'x'), 0, 0, at(10))) == -ENAMETOOLONG);
    CHECK(fs.ns.symlink(root, "e", std::string(4095, 'x'), 0, 0, at(10)));
    CHECK(err(fs.ns.symlink(root, "l", "x", 0, 0, at(10))) == -EEXIST);
    CHECK(err(fs.ns.setattr(l->id, AttrChanges{.size = 0}, at(11))) == -EINVAL);
    CHECK(fs.ns.counts().symlinks == 2);
    auto gone = fs.ns.unlink(root, "l", at(12));
    REQUIRE(gone);
    CHECK_FALSE(gone->freed);  // no chunks to delete
    CHECK(err(fs.ns.readlink(l->id)) == -ESTALE);
    CHECK(fs.ns.counts().symlinks == 1);
}

TEST_CASE("hard links and unlink", "[namespace]") {
    Fs fs;
    auto root = fs.root();
    auto d = fs.dir(root, "d");
    auto f = fs.file(root, "f");
    auto linked = fs.ns.link(f, d, "g", at(500));
    REQUIRE(linked);
    CHECK(linked->nlink == 2);
    CHECK(linked->ctime == at(500));
    CHECK(fs.stat(d, "g").id.ino == f.ino);
    CHECK(fs.stat(d).mtime == at(500));
    CHECK(err(fs.ns.link(f, d, "g", at(501))) == -EEXIST);
    CHECK(err(fs.ns.link(d, root, "d2", at(501))) == -EPERM);
    CHECK(err(fs.ns.link(f, f, "x", at(501))) == -ENOTDIR);

    CHECK(err(fs.ns.unlink(root, "missing", at(502))) == -ENOENT);
    CHECK(err(fs.ns.unlink(root, "d", at(502))) == -EISDIR);
    CHECK(err(fs.ns.unlink(root, ".", at(502))) == -EISDIR);
    auto first = fs.ns.unlink(root, "f", at(503));
    REQUIRE(first);
    CHECK(first->attr.nlink == 1);
    CHECK_FALSE(first->freed);
    CHECK(fs.stat(f).ctime == at(503));
    auto last = fs.ns.unlink(d, "g", at(504));
    REQUIRE(last);
    CHECK(last->attr.nlink == 0);
    REQUIRE(last->freed);
    CHECK(last->freed->id.ino == f.ino);
    CHECK(last->freed->layout.targets == std::vector<uint32_t>{1, 2, 3, 4});
    CHECK(err(fs.ns.getattr(f)) == -ESTALE);
    CHECK(fs.ns.counts().files == 0);
    CHECK(fs.ns.orphans().empty());
}

TEST_CASE("an unlinked open file lives until its last close", "[namespace]") {
    Fs fs;
    auto root = fs.root();
    auto f = fs.file(root, "f");
    REQUIRE(fs.ns.setattr(f, AttrChanges{.size = 12345}, at(200)));
    REQUIRE(fs.ns.open(f));
    REQUIRE(fs.ns.open(f));

    SECTION("unlink") {
        auto gone = fs.ns.unlink(root, "f", at(201));
        REQUIRE(gone);
        CHECK_FALSE(gone->freed);
        CHECK(err(fs.ns.lookup(root, "f")) == -ENOENT);
    }
    SECTION("rename over it") {
        fs.file(root, "new");
        auto r = fs.ns.rename(root, "new", root, "f", 0, at(201));
        REQUIRE(r);
        REQUIRE(r->replaced);
        CHECK(r->replaced->ino == f.ino);
        CHECK_FALSE(r->freed);
        CHECK(fs.stat(root, "f").id.ino != f.ino);
    }
    CHECK(fs.stat(f).nlink == 0);  // still reachable through its handle
    REQUIRE(fs.ns.orphans().size() == 1);
    CHECK(fs.ns.orphans()[0].ino == f.ino);
    CHECK(fs.ns.counts().orphans == 1);
    CHECK(err(fs.ns.link(f, root, "back", at(202))) == -ENOENT);
    CHECK(err(fs.ns.purge_orphan(f)) == -EBUSY);

    auto first = fs.ns.close(f);
    REQUIRE(first);
    CHECK_FALSE(*first);
    auto last = fs.ns.close(f);
    REQUIRE(last);
    REQUIRE(*last);
    CHECK((*last)->id.ino == f.ino);
    CHECK((*last)->size == 12345);
    CHECK((*last)->layout.targets.size() == 4);
    CHECK(fs.ns.orphans().empty());
    CHECK(err(fs.ns.close(f)) == -ESTALE);

    auto g = fs.file(root, "g");
    CHECK(err(fs.ns.close(g)) == -EBADF);
    CHECK(err(fs.ns.purge_orphan(g)) == -EINVAL);
    REQUIRE(fs.ns.open(g));
    REQUIRE(fs.ns.close(g));
    CHECK(fs.stat(g).nlink == 1);  // closing a linked file frees nothing
}

TEST_CASE("rmdir", "[namespace]") {
    Fs fs;
    auto root = fs.root();
    auto d = fs.dir(root, "d");
    fs.file(d, "f");
    fs.file(root, "file");
    CHECK(err(fs.ns.rmdir(root, "d", at(5))) == -ENOTEMPTY);
    CHECK(err(fs.ns.rmdir(root, "file", at(5))) == -ENOTDIR);
    CHECK(err(fs.ns.rmdir(root, "none", at(5))) == -ENOENT);
    CHECK(err(fs.ns.rmdir(root, ".", at(5))) == -EINVAL);
    CHECK(err(fs.ns.rmdir(d, "..", at(5))) == -ENOTEMPTY);
    REQUIRE(fs.ns.unlink(d, "f", at(6)));
    CHECK(fs.stat(root).nlink == 3);
    auto gone = fs.ns.rmdir(root, "d", at(7));
    REQUIRE(gone);
    CHECK(gone->attr.id.ino == d.ino);
    CHECK(gone->attr.nlink == 0);
    CHECK(fs.stat(root).nlink == 2);
    CHECK(fs.stat(root).mtime == at(7));
    CHECK(err(fs.ns.getattr(d)) == -ESTALE);
    CHECK(fs.ns.counts().directories == 1);
}

TEST_CASE("rename follows POSIX in every corner", "[namespace]") {
    Fs fs;
    auto root = fs.root();
    auto a = fs.dir(root, "a");
    auto b = fs.dir(root, "b");
    auto f = fs.file(a, "f");

    SECTION("a move to a new name") {
        auto r = fs.ns.rename(a, "f", b, "g", 0, at(900));
        REQUIRE(r);
        CHECK(r->attr.id.ino == f.ino);
        CHECK_FALSE(r->replaced);
        CHECK(err(fs.ns.lookup(a, "f")) == -ENOENT);
        CHECK(fs.stat(b, "g").id.ino == f.ino);
        CHECK(fs.stat(f).ctime == at(900));
        CHECK(fs.stat(a).mtime == at(900));
        CHECK(fs.stat(b).mtime == at(900));
    }
    SECTION("replacing a file") {
        auto g = fs.file(b, "g");
        auto r = fs.ns.rename(a, "f", b, "g", 0, at(900));
        REQUIRE(r);
        REQUIRE(r->replaced);
        CHECK(r->replaced->ino == g.ino);
        REQUIRE(r->freed);
        CHECK(r->freed->id.ino == g.ino);
        CHECK(fs.stat(b, "g").id.ino == f.ino);
        CHECK(fs.ns.counts().files == 1);
    }
    SECTION("two links to one inode: nothing happens") {
        REQUIRE(fs.ns.link(f, b, "h", at(800)));
        auto r = fs.ns.rename(a, "f", b, "h", 0, at(900));
        REQUIRE(r);
        CHECK(fs.stat(a, "f").id.ino == f.ino);
        CHECK(fs.stat(b, "h").id.ino == f.ino);
        CHECK(fs.stat(f).nlink == 2);
        CHECK(fs.stat(a).mtime != at(900));
        CHECK(fs.ns.rename(a, "f", a, "f", 0, at(900)));
        CHECK(err(fs.ns.rename(a, "f", a, "f", kRenameNoReplace, at(900))) == -EEXIST);
    }
    SECTION("directories: replacing an empty one, not a full one") {
        auto c = fs.dir(b, "c");
        fs.dir(a, "sub");
        CHECK(fs.stat(root).nlink == 4);
        auto r = fs.ns.rename(root, "a", b, "c", 0, at(900));
        REQUIRE(r);
        REQUIRE(r->replaced);
        CHECK(r->replaced->ino == c.ino);
        CHECK_FALSE(r->freed);
        CHECK(err(fs.ns.getattr(c)) == -ESTALE);
        CHECK(fs.stat(root).nlink == 3);
        CHECK(fs.stat(b).nlink == 3);
        CHECK(fs.stat(a, "..").id.ino == b.ino);
        fs.dir(root, "x");
        CHECK(err(fs.ns.rename(root, "x", b, "c", 0, at(901))) == -ENOTEMPTY);
    }
    SECTION("kind mismatches") {
        CHECK(err(fs.ns.rename(a, "f", root, "b", 0, at(900))) == -EISDIR);
        CHECK(err(fs.ns.rename(root, "b", a, "f", 0, at(900))) == -ENOTDIR);
    }
    SECTION("a directory cannot move below itself") {
        auto deep = fs.dir(fs.dir(a, "x"), "y");
        CHECK(err(fs.ns.rename(root, "a", deep, "z", 0, at(900))) == -EINVAL);
        CHECK(err(fs.ns.rename(root, "a", a, "z", 0, at(900))) == -EINVAL);
        CHECK(err(fs.ns.rename(root, "a", deep, "z", kRenameExchange, at(900))) == -ENOENT);
        // Onto its own ancestor: the target is not empty.
        CHECK(err(fs.ns.rename(deep, "..", root, "a", 0, at(900))) == -EBUSY);
        CHECK(err(fs.ns.rename(a, "x", root, "a", 0, at(900))) == -ENOTEMPTY);
        CHECK(err(fs.ns.rename(a, "f", root, "a", kRenameExchange, at(900))) == -EINVAL);
    }
    SECTION("a directory moves to another parent") {
        auto d = fs.dir(a, "d");
        REQUIRE(fs.ns.rename(a, "d", b, "d", 0, at(900)));
        CHECK(fs.stat(a).nlink == 2);
        CHECK(fs.stat(b).nlink == 3);
        CHECK(fs.stat(d, "..").id.ino == b.ino);
        // Within one directory nothing changes in the link counts.
        REQUIRE(fs.ns.rename(b, "d", b, "e", 0, at(901)));
        CHECK(fs.stat(b).nlink == 3);
    }
    SECTION("RENAME_NOREPLACE") {
        fs.file(b, "g");
        CHECK(err(fs.ns.rename(a, "f", b, "g", kRenameNoReplace, at(900))) == -EEXIST);
        CHECK(fs.ns.rename(a, "f", b, "new", kRenameNoReplace, at(900)));
    }
    SECTION("RENAME_EXCHANGE of a file and a directory across parents") {
        auto d = fs.dir(b, "d");
        auto r = fs.ns.rename(a, "f", b, "d", kRenameExchange, at(900));
        REQUIRE(r);
        REQUIRE(r->replaced);
        CHECK(r->replaced->ino == d.ino);
        CHECK(fs.stat(a, "f").id.ino == d.ino);
        CHECK(fs.stat(b, "d").id.ino == f.ino);
        CHECK(fs.stat(d, "..").id.ino == a.ino);
        CHECK(fs.stat(a).nlink == 3);
        CHECK(fs.stat(b).nlink == 2);
        CHECK(fs.stat(d).ctime == at(900));
        CHECK(err(fs.ns.rename(a, "f", b, "none", kRenameExchange, at(901))) == -ENOENT);
    }
    SECTION("bad requests") {
        CHECK(err(fs.ns.rename(a, "none", b, "x", 0, at(900))) == -ENOENT);
        CHECK(err(fs.ns.rename(a, "f", b, "x", kRenameExchange | kRenameNoReplace, at(900))) == -EINVAL);
        CHECK(err(fs.ns.rename(a, "f", b, "x", 1u << 2, at(900))) == -EINVAL);  // RENAME_WHITEOUT
        CHECK(err(fs.ns.rename(a, ".", b, "x", 0, at(900))) == -EBUSY);
        CHECK(err(fs.ns.rename(a, "f", b, "..", 0, at(900))) == -EBUSY);
        CHECK(err(fs.ns.rename(a, "f", b, "..", kRenameNoReplace, at(900))) == -EEXIST);
        CHECK(err(fs.ns.rename(a, "f", f, "x", 0, at(900))) == -ENOTDIR);
        CHECK(err(fs.ns.rename(a, "f", b, std::string(256, 'n'), 0, at(900))) == -ENAMETOOLONG);
    }
}

TEST_CASE("setattr", "[namespace]") {
    Fs fs;
    auto root = fs.root();
    auto f = fs.file(root, "f");
    auto r = fs.ns.setattr(f, AttrChanges{.mode = 04711, .uid = 5, .gid = 6}, at(400));
    REQUIRE(r);
    CHECK(r->attr.mode == (S_IFREG | 04711));
    CHECK(r->attr.uid == 5);
    CHECK(r->attr.gid == 6);
    CHECK(r->attr.ctime == at(400));
    CHECK(r->attr.mtime != at(400));
    CHECK_FALSE(r->size_change);

    auto grow = fs.ns.setattr(f, AttrChanges{.size = 1u << 30}, at(401));
    REQUIRE(grow);
    REQUIRE(grow->size_change);
    CHECK(grow->size_change->old_size == 0);
    CHECK(grow->size_change->new_size == 1u << 30);
    CHECK(grow->attr.size == 1u << 30);
    CHECK(grow->attr.mtime == at(401));

    auto shrink = fs.ns.setattr(f, AttrChanges{.size = 10, .atime = at(3), .mtime = at(4, 5)}, at(402));
    REQUIRE(shrink);
    CHECK(shrink->size_change->old_size == 1u << 30);
    CHECK(shrink->attr.mtime == at(4, 5));
    CHECK(shrink->attr.atime == at(3));
    CHECK(shrink->attr.ctime == at(402));

    CHECK(err(fs.ns.setattr(root, AttrChanges{.size = 0}, at(403))) == -EISDIR);
    CHECK(err(fs.ns.setattr(f, AttrChanges{.size = kMaxFileSize + 1}, at(403))) == -EFBIG);
    CHECK(err(fs.ns.setattr(f, AttrChanges{.mode = S_IFDIR | 0755}, at(403))) == -EINVAL);
    CHECK(err(fs.ns.setattr(f, AttrChanges{.mtime = at(1, 1000000000)}, at(403))) == -EINVAL);
    CHECK(fs.stat(f).ctime == at(402));  // failures change nothing
    CHECK(fs.ns.setattr(root, AttrChanges{.mode = 0700}, at(404))->attr.mode == (S_IFDIR | 0700));
}

TEST_CASE("extended attributes", "[namespace]") {
    Fs fs;
    auto root = fs.root();
    auto f = fs.file(root, "f");
    std::string binary("a\0b\xff", 4);
    REQUIRE(fs.ns.set_xattr(f, "user.one", binary, 0, at(600)));
    CHECK(fs.stat(f).ctime == at(600));
    CHECK(*fs.ns.get_xattr(f, "user.one") == binary);
    REQUIRE(fs.ns.set_xattr(f, "trusted.two", "", 0, at(601)));
    CHECK(*fs.ns.list_xattrs(f) == std::vector<std::string>{"trusted.two", "user.one"});

    CHECK(err(fs.ns.set_xattr(f, "user.one", "x", kXattrCreate, at(602))) == -EEXIST);
    CHECK(err(fs.ns.set_xattr(f, "user.new", "x", kXattrReplace, at(602))) == -ENODATA);
    CHECK(err(fs.ns.set_xattr(f, "user.one", "x", kXattrCreate | kXattrReplace, at(602))) == -EINVAL);
    CHECK(err(fs.ns.set_xattr(f, "user.one", "x", 4, at(602))) == -EINVAL);
    REQUIRE(fs.ns.set_xattr(f, "user.one", "x", kXattrReplace, at(602)));
    CHECK(*fs.ns.get_xattr(f, "user.one") == "x");
    CHECK(err(fs.ns.get_xattr(f, "user.none")) == -ENODATA);

    CHECK(err(fs.ns.set_xattr(f, "", "x", 0, at(603))) == -ERANGE);
    CHECK(err(fs.ns.set_xattr(f, "user." + std::string(251, 'n'), "x", 0, at(603))) == -ERANGE);
    CHECK(fs.ns.set_xattr(f, "user." + std::string(250, 'n'), "x", 0, at(603)));
    CHECK(err(fs.ns.get_xattr(f, std::string(256, 'n'))) == -ERANGE);
    CHECK(err(fs.ns.set_xattr(f, "user.big", std::string(65537, 'v'), 0, at(603))) == -E2BIG);
    CHECK(fs.ns.set_xattr(f, "user.big", std::string(65536, 'v'), 0, at(603)));
    CHECK(err(fs.ns.set_xattr(f, "other.x", "x", 0, at(603))) == -EOPNOTSUPP);
    CHECK(err(fs.ns.set_xattr(f, "user.", "x", 0, at(603))) == -EINVAL);

    auto l = fs.ns.symlink(root, "l", "f", 0, 0, at(604))->id;
    CHECK(err(fs.ns.set_xattr(l, "user.x", "x", 0, at(605))) == -EPERM);
    CHECK(fs.ns.set_xattr(l, "trusted.x", "x", 0, at(605)));
    CHECK(err(fs.ns.set_xattr(fs.root(), "user.x", "x", 0, at(605))) == 0);

    REQUIRE(fs.ns.remove_xattr(f, "user.one", at(606)));
    CHECK(fs.stat(f).ctime == at(606));
    CHECK(err(fs.ns.remove_xattr(f, "user.one", at(607))) == -ENODATA);
    CHECK(err(fs.ns.get_xattr(f, "user.one")) == -ENODATA);

    // The list of names is capped like XATTR_LIST_MAX.
    auto g = fs.file(root, "g");
    int added = 0;
    Status st = ok_status();
    for (; st; ++added)
        st = fs.ns.set_xattr(g, "user." + std::string(200, 'a') + std::to_string(added), "", 0, at(608));
    CHECK(st.error().code == -ENOSPC);
    CHECK(added > 300);
}

TEST_CASE("attributes say which ACLs and security xattrs an entry has", "[namespace]") {
    Fs fs;
    auto root = fs.root();
    auto f = fs.file(root, "f");
    auto d = fs.dir(root, "d");
    // The smallest ACL: owner, group, others (tags 1, 4, 0x20; no ids).
    std::string acl("\x02\0\0\0"
                    "\x01\0\x06\0\xff\xff\xff\xff"
                    "\x04\0\x04\0\xff\xff\xff\xff"
                    "\x20\0\x04\0\xff\xff\xff\xff",
                    28);
    CHECK(fs.stat(f).xattrs == 0);
    REQUIRE(fs.ns.set_xattr(f, "user.a", "x", 0, at(700)));
    REQUIRE(fs.ns.set_xattr(f, "trusted.b", "x", 0, at(700)));
    CHECK(fs.stat(f).xattrs == 0);
    REQUIRE(fs.ns.set_xattr(f, "security.selinux", "label", 0, at(701)));
    CHECK(fs.stat(f).xattrs == PFS_ATTR_SECURITY);
    REQUIRE(fs.ns.set_xattr(f, kAclAccess, acl, 0, at(702)));
    CHECK(fs.stat(f).xattrs == (PFS_ATTR_SECURITY | PFS_ATTR_ACL_ACCESS));
    REQUIRE(fs.ns.remove_xattr(f, "security.selinux", at(703)));
    CHECK(fs.stat(f).xattrs == PFS_ATTR_ACL_ACCESS);
    REQUIRE(fs.ns.set_xattr(d, kAclDefault, acl, 0, at(704)));
    CHECK(fs.stat(d).xattrs == PFS_ATTR_ACL_DEFAULT);
    REQUIRE(fs.ns.set_xattr(d, "trusted.security.x", "x", 0, at(705)));
    CHECK(fs.stat(d).xattrs == PFS_ATTR_ACL_DEFAULT);
    CHECK(fs.stat(root, "d").xattrs == PFS_ATTR_ACL_DEFAULT);  // LOOKUP too
}

TEST_CASE("readdir lists dots first and resumes stably by cookie", "[namespace]") {
    Fs fs;
    auto root = fs.root();
    auto d = fs.dir(root, "d");
    for (int i = 0; i < 10; ++i) fs.file(d, "f" + std::to_string(i));

    auto first = fs.ns.readdir(d, 0, 3);
    REQUIRE(first);
    REQUIRE(first->entries.size() == 3);
    CHECK(first->entries[0].name == ".");
    CHECK(first->entries[0].cookie == 1);
    CHECK(first->entries[0].id.ino == d.ino);
    CHECK(first->entries[1].name == "..");
    CHECK(first->entries[1].cookie == 2);
    CHECK(first->entries[1].id.ino == root.ino);
    CHECK(first->entries[1].type == DT_DIR);
    CHECK(first->entries[2].name == "f0");
    CHECK(first->entries[2].type == DT_REG);
    CHECK_FALSE(first->eof);
    CHECK(first->next_cookie == first->entries[2].cookie);

    auto one = fs.ns.readdir(d, 0, 1);
    CHECK(one->entries.size() == 1);
    CHECK_FALSE(one->eof);
    auto empty = fs.dir(root, "empty");
    auto dots = fs.ns.readdir(empty, 0, 2);
    CHECK(dots->entries.size() == 2);
    CHECK(dots->eof);
    CHECK(fs.ns.readdir(empty, 1, 1)->entries[0].name == "..");
    CHECK(fs.ns.readdir(empty, 2, 10)->eof);
    CHECK(fs.ns.readdir(empty, 999, 10)->entries.empty());
    CHECK(err(fs.ns.readdir(d, 0, 0)) == -EINVAL);

    // Changes between pages: removed entries that were not listed yet do
    // not appear, survivors appear exactly once, whatever the order.
    auto all = fs.names(d, 4);
    CHECK(all.size() == 12);
    auto page = fs.ns.readdir(d, 0, 6);  // ".", "..", f0..f3
    REQUIRE(fs.ns.unlink(d, "f1", at(700)));  // listed already
    REQUIRE(fs.ns.unlink(d, "f5", at(700)));  // not yet
    REQUIRE(fs.ns.rename(d, "f7", d, "f2", 0, at(700)));  // f2 listed; f7 gone
    fs.file(d, "new");
    std::vector<std::string> seen;
    for (const auto& e : page->entries) seen.push_back(e.name);
    for (uint64_t cookie = page->next_cookie;;) {
        auto next = fs.ns.readdir(d, cookie, 2);
        REQUIRE(next);
        for (const auto& e : next->entries) seen.push_back(e.name);
        cookie = next->next_cookie;
        if (next->eof) break;
    }
    std::multiset<std::string> got(seen.begin(), seen.end());
    for (const char* name : {"f0", "f2", "f3", "f4", "f6", "f8", "f9"}) CHECK(got.count(name) == 1);
    CHECK(got.count("f5") == 0);
    CHECK(got.count("f7") == 0);
    CHECK(got.count("new") == 1);
}

TEST_CASE("may_access applies the owner, group and other bits", "[namespace]") {
    Fs fs;
    auto f = fs.file(fs.root(), "f", 0640);  // owner 1000, group 100
    std::vector<uint32_t> in_group{7, 100};
    std::vector<uint32_t> outside{7};
    CHECK(fs.ns.may_access(f, Caller{1000, 7, outside}, R_OK | W_OK));
    CHECK(err(fs.ns.may_access(f, Caller{1000, 7, outside}, X_OK)) == -EACCES);
    CHECK(fs.ns.may_access(f, Caller{2000, 7, in_group}, R_OK));
    CHECK(err(fs.ns.may_access(f, Caller{2000, 7, in_group}, W_OK)) == -EACCES);
    CHECK(err(fs.ns.may_access(f, Caller{2000, 7, outside}, R_OK)) == -EACCES);
    CHECK(fs.ns.may_access(f, Caller{2000, 7, outside}, F_OK));
    // The owner class decides even when the group would allow more.
    REQUIRE(fs.ns.setattr(f, AttrChanges{.mode = 0070}, at(5)));
    CHECK(err(fs.ns.may_access(f, Caller{1000, 7, in_group}, R_OK)) == -EACCES);
    CHECK(fs.ns.may_access(f, Caller{2000, 7, in_group}, R_OK | W_OK | X_OK));
    // Root reads and writes anything, but executes only what has an x bit.
    REQUIRE(fs.ns.setattr(f, AttrChanges{.mode = 0600}, at(6)));
    CHECK(fs.ns.may_access(f, Caller{0, 7, outside}, R_OK | W_OK));
    CHECK(err(fs.ns.may_access(f, Caller{0, 7, outside}, X_OK)) == -EACCES);
    REQUIRE(fs.ns.setattr(f, AttrChanges{.mode = 0001}, at(7)));
    CHECK(fs.ns.may_access(f, Caller{0, 7, outside}, X_OK));
    auto d = fs.dir(fs.root(), "d", 0700);
    REQUIRE(fs.ns.setattr(d, AttrChanges{.mode = 0}, at(8)));
    CHECK(fs.ns.may_access(d, Caller{0, 7, outside}, X_OK | R_OK));
    CHECK(err(fs.ns.may_access(f, Caller{0, 7, outside}, 8)) == -EINVAL);
    CHECK(err(fs.ns.may_access(pfs_entry_id{99, Fs::kNode, 1}, Caller{0, 7, outside}, R_OK)) == -ESTALE);
}

TEST_CASE("a hundred thousand files in one directory", "[namespace]") {
    Fs fs;
    auto root = fs.root();
    auto d = fs.dir(root, "big");
    constexpr int kFiles = 100000;
    auto choose = first_targets();
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kFiles; ++i)
        REQUIRE(fs.ns.create(d, "file-" + std::to_string(i), 0644, 1, 1, at(1000 + i), choose));
    auto created = std::chrono::steady_clock::now();
    for (int i = 0; i < kFiles; ++i) {
        auto a = fs.ns.lookup(d, "file-" + std::to_string(i));
        REQUIRE(a);
        REQUIRE(fs.ns.getattr(a->id));
    }
    auto stated = std::chrono::steady_clock::now();
    CHECK(fs.names(d, 1000).size() == kFiles + 2);
    auto listed = std::chrono::steady_clock::now();
    for (int i = 0; i < kFiles; i += 2) REQUIRE(fs.ns.unlink(d, "file-" + std::to_string(i), at(1)));
    CHECK(fs.names(d, 1000).size() == kFiles / 2 + 2);
    auto done = std::chrono::steady_clock::now();
    CHECK(fs.ns.counts().files == kFiles / 2);

    auto ms = [](auto from, auto to) {
        return std::chrono::duration_cast<std::chrono::milliseconds>(to - from).count();
    };
    WARN("100k files: create " << ms(start, created) << " ms, lookup+getattr " << ms(created, stated)
                               << " ms, readdir " << ms(stated, listed) << " ms, unlink half + readdir "
                               << ms(listed, done) << " ms");
    // Generous, for debug and sanitizer builds: quadratic behaviour would take minutes.
    CHECK(ms(start, done) < 30000);
}

TEST_CASE("an inline file whose move never began is freed with nothing for its targets to delete", "[namespace]") {
    Fs fs;
    const auto root = fs.root();
    auto inline_file = [&](const std::string& name) {
        auto made = fs.ns.create(root, name, 0644, 0, 0, at(50), first_targets(), true, true);
        REQUIRE(made);
        REQUIRE(*fs.ns.inline_max(made->attr.id) != 0);
        return made->attr.id;
    };
    auto reaping = [&](const pfs_entry_id& id) { return fs.ns.reaping().count(EntryKey::of(id)) > 0; };

    // Never moved: no chunk anywhere but the inline store.
    const auto a = inline_file("a");
    auto gone = fs.ns.unlink(root, "a", at(51));
    REQUIRE(gone);
    REQUIRE(gone->freed);
    CHECK(gone->freed->was_inline);
    CHECK(gone->freed->layout.targets.empty());
    CHECK_FALSE(reaping(a));

    // A move that began (and may have been cut short) or ended: the targets
    // are asked.
    const auto b = inline_file("b");
    REQUIRE(fs.ns.uninline(b, true));
    CHECK(*fs.ns.inline_max(b) != 0);  // still inline until the move ends
    const auto c = inline_file("c");
    REQUIRE(fs.ns.uninline(c, true));
    REQUIRE(fs.ns.uninline(c));
    CHECK(*fs.ns.inline_max(c) == 0);
    CHECK(err(fs.ns.uninline(c, true)) == -EINVAL);  // inline no more
    // A restart keeps what began (the snapshot says so).
    auto snap = fs.ns.snapshot();
    REQUIRE(snap);
    auto back = Namespace::restore(*snap);
    REQUIRE(back);
    for (const char* name : {"b", "c"}) {
        auto out = back->unlink(root, name, at(52));
        REQUIRE(out);
        REQUIRE(out->freed);
        CHECK_FALSE(out->freed->layout.targets.empty());
    }
    CHECK(back->reaping().count(EntryKey::of(b)) == 1);
    CHECK(back->reaping().count(EntryKey::of(c)) == 1);
}
