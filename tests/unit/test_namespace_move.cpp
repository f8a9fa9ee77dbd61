// Entries moving between metadata servers, as one server's namespace sees
// them: an inode of this server whose entry moves out (and back), and
// entries naming inodes of another server that move in.
#include <catch2/catch.hpp>

#include <dirent.h>

#include "namespace_test_util.hpp"

using namespace pfs;
using namespace pfs::meta;
using namespace pfs::test;

namespace {

RemoteParent moving(const pfs_entry_id& from, const pfs_entry_id& to) {
    return RemoteParent{.dir = to, .state = PFS_DETACHED_MOVING, .from = from};
}

RemoteParent confirmed(const pfs_entry_id& dir) {
    return RemoteParent{.dir = dir, .state = PFS_DETACHED_CONFIRMED};
}

// The namespace survives a snapshot and its checks, as after a restart.
Namespace restored(const Fs& fs) {
    auto snap = fs.ns.snapshot();
    REQUIRE(snap);
    auto back = Namespace::restore(*snap);
    REQUIRE(back);
    CHECK(*back->snapshot() == *snap);
    return std::move(*back);
}

}  // namespace

TEST_CASE("a file moves out to another server's directory and is removed from there", "[namespace][move]") {
    Fs fs;
    auto root = fs.root();
    auto f = fs.file(root, "f");
    const auto to = other_id(5);

    REQUIRE(fs.ns.set_remote(f, moving(root, to)));
    // While it moves, its entry stays and nothing else may touch it.
    CHECK(fs.ns.unsettled().size() == 1);
    CHECK(err(fs.ns.unlink(root, "f", fs.tick())) == -EBUSY);
    CHECK(err(fs.ns.rename(root, "f", root, "g", 0, fs.tick())) == -EBUSY);
    CHECK(err(fs.ns.link(f, root, "hard", fs.tick())) == -EXDEV);
    restored(fs);

    REQUIRE(fs.ns.drop_entry(root, "f", f, fs.tick()));
    CHECK(err(fs.ns.resolve(root, "f")) == -ENOENT);
    restored(fs);  // MOVING with neither entry here: a crash can leave that
    REQUIRE(fs.ns.set_remote(f, confirmed(to)));
    CHECK(fs.ns.unsettled().empty());
    CHECK(fs.stat(f).nlink == 1);
    CHECK(fs.ns.orphans().empty());
    auto back = restored(fs);
    CHECK(back.orphans().empty());
    CHECK(back.detached_state(f)->state == PFS_DETACHED_CONFIRMED);

    // Unlinked there while open here: an orphan until the last close.
    REQUIRE(fs.ns.open(f));
    CHECK(err(fs.ns.remove_detached(f)) == 0);  // not prepared is the service's check
    CHECK(fs.stat(f).nlink == 0);
    CHECK(fs.ns.orphans().size() == 1);
    auto freed = fs.ns.close(f);
    REQUIRE(freed);
    REQUIRE(*freed);
    CHECK(same_id((*freed)->id, f));
}

TEST_CASE("a detached file's removal is prepared and frees it", "[namespace][move]") {
    Fs fs;
    auto f = fs.file(fs.root(), "f");
    REQUIRE(fs.ns.set_remote(f, moving(fs.root(), other_id(5))));
    REQUIRE(fs.ns.drop_entry(fs.root(), "f", f, fs.tick()));
    // Moving: neither removal nor another move until settled.
    CHECK(err(fs.ns.set_detached_state(f, PFS_DETACHED_REMOVING)) == -EBUSY);
    CHECK(err(fs.ns.remove_detached(f)) == -EBUSY);
    REQUIRE(fs.ns.set_remote(f, confirmed(other_id(5))));
    CHECK(err(fs.ns.set_detached_state(f, PFS_DETACHED_CREATED)) == -EINVAL);  // directories only
    REQUIRE(fs.ns.set_detached_state(f, PFS_DETACHED_REMOVING));
    auto freed = fs.ns.remove_detached(f);
    REQUIRE(freed);
    REQUIRE(*freed);
    CHECK((*freed)->layout.targets.size() == 4);
    CHECK(err(fs.ns.getattr(f)) == -ESTALE);
    CHECK(fs.ns.detached(0, 10).empty());
}

TEST_CASE("a move is aborted while the entry is still here", "[namespace][move]") {
    Fs fs;
    auto root = fs.root();
    auto d = fs.dir(root, "d");
    auto nlink = fs.stat(root).nlink;
    REQUIRE(fs.ns.set_remote(d, moving(root, other_id(5))));
    CHECK(same_id(fs.ns.resolve(d, "..")->id, root));
    // Neither removed nor renamed while it moves; no local moves below it.
    CHECK(err(fs.ns.rmdir(root, "d", fs.tick())) == -EBUSY);
    restored(fs);
    REQUIRE(fs.ns.set_remote(d, std::nullopt));
    CHECK(fs.ns.detached(0, 10).empty());
    REQUIRE(fs.ns.rename(root, "d", root, "e", 0, fs.tick()));
    CHECK(fs.stat(root).nlink == nlink);
    // Not back to a local entry that does not exist, and the root stays.
    CHECK(err(fs.ns.set_remote(d, std::nullopt)) == -EINVAL);
    CHECK(err(fs.ns.set_remote(root, moving(root, other_id(5)))) == -EBUSY);
    CHECK(err(fs.ns.set_remote(d, confirmed(root))) == -EINVAL);  // a remote place is another server's
    auto hard = fs.file(root, "hard");
    REQUIRE(fs.ns.link(hard, root, "hard2", fs.tick()));
    CHECK(err(fs.ns.set_remote(hard, moving(root, other_id(5)))) == -EXDEV);
}

TEST_CASE("a directory moves out and comes back home", "[namespace][move]") {
    Fs fs;
    auto root = fs.root();
    auto d = fs.dir(root, "d");
    fs.file(d, "inside");
    auto x = fs.dir(root, "x");
    auto nlink = fs.stat(root).nlink;

    REQUIRE(fs.ns.set_remote(d, moving(root, other_id(5))));
    REQUIRE(fs.ns.drop_entry(root, "d", d, fs.tick()));
    CHECK(fs.stat(root).nlink == nlink - 1);
    REQUIRE(fs.ns.set_remote(d, confirmed(other_id(5))));
    CHECK(same_id(fs.ns.resolve(d, "..")->id, other_id(5)));
    CHECK(fs.names(d) == std::vector<std::string>{".", "..", "inside"});
    restored(fs);

    // Back, into x: the entry comes first, then the owner's record.
    REQUIRE(fs.ns.set_remote(d, moving(other_id(5), x)));
    CHECK(err(fs.ns.link_moved(root, "d", d, DT_DIR, false, fs.tick())) == -EINVAL);  // not moving there
    CHECK(err(fs.ns.link_moved(x, "d", d, DT_REG, false, fs.tick())) == -EINVAL);  // not its type
    REQUIRE(fs.ns.link_moved(x, "d", d, DT_DIR, false, fs.tick()));
    CHECK(same_id(fs.ns.resolve(d, "..")->id, other_id(5)));  // still the old place's until settled
    CHECK(fs.stat(x).nlink == 3);
    restored(fs);
    REQUIRE(fs.ns.set_remote(d, std::nullopt));
    CHECK(same_id(fs.ns.resolve(d, "..")->id, x));
    CHECK(fs.ns.detached(0, 10).empty());
    auto back = restored(fs);
    CHECK(back.counts().directories == fs.ns.counts().directories);
    // A local tree again: it cannot go below itself.
    CHECK(err(fs.ns.rename(x, "d", d, "loop", 0, fs.tick())) == -EINVAL);
}

TEST_CASE("a directory does not move in below itself", "[namespace][move]") {
    Fs fs;
    auto root = fs.root();
    auto d = fs.dir(root, "d");
    auto sub = fs.dir(d, "sub");
    REQUIRE(fs.ns.set_remote(d, moving(root, other_id(5))));
    REQUIRE(fs.ns.drop_entry(root, "d", d, fs.tick()));
    REQUIRE(fs.ns.set_remote(d, confirmed(other_id(5))));
    REQUIRE(fs.ns.set_remote(d, moving(other_id(5), sub)));
    CHECK(err(fs.ns.link_moved(sub, "d", d, DT_DIR, false, fs.tick())) == -EINVAL);
}

TEST_CASE("entries naming another server's inodes move in, replace and go", "[namespace][move]") {
    Fs fs;
    auto root = fs.root();
    const auto in_file = other_id(40), in_dir = other_id(41);
    auto nlink = fs.stat(root).nlink;
    REQUIRE(fs.ns.link_moved(root, "f", in_file, DT_REG, false, fs.tick()));
    REQUIRE(fs.ns.link_moved(root, "d", in_dir, DT_DIR, false, fs.tick()));
    CHECK(fs.stat(root).nlink == nlink + 1);
    CHECK(fs.ns.names(in_file));
    CHECK(same_id(*fs.ns.holder_of(in_file), root));
    CHECK(*fs.ns.entry_name(root, in_file) == "f");
    CHECK(err(fs.ns.link_moved(root, "again", in_file, DT_REG, false, fs.tick())) == -EEXIST);
    CHECK(err(fs.ns.link_moved(root, "bad", other_id(42), 99, false, fs.tick())) == -EINVAL);
    CHECK(err(fs.ns.rmdir(root, "f", fs.tick())) == -ENOTDIR);
    CHECK(err(fs.ns.unlink(root, "d", fs.tick())) == -EISDIR);
    restored(fs);

    // Renamed within this server, the holder follows.
    auto sub = fs.dir(root, "sub");
    REQUIRE(fs.ns.rename(root, "f", sub, "f2", 0, fs.tick()));
    CHECK(same_id(*fs.ns.holder_of(in_file), sub));
    CHECK(fs.ns.resolve(sub, "f2")->type == DT_REG);

    // Replacing: a local file (freed), not a non-empty directory, not an
    // entry of another server's inode, not with noreplace.
    auto victim = fs.file(root, "victim");
    auto out = fs.ns.link_moved(root, "victim", other_id(43), DT_REG, false, fs.tick());
    REQUIRE(out);
    CHECK(same_id(*out->replaced, victim));
    REQUIRE(out->freed);
    CHECK(err(fs.ns.getattr(victim)) == -ESTALE);
    auto full = fs.dir(root, "full");
    fs.file(full, "x");
    CHECK(err(fs.ns.link_moved(root, "full", other_id(44), DT_DIR, false, fs.tick())) == -ENOTEMPTY);
    CHECK(err(fs.ns.link_moved(root, "full", other_id(44), DT_REG, false, fs.tick())) == -EISDIR);
    CHECK(err(fs.ns.link_moved(root, "victim", other_id(44), DT_REG, false, fs.tick())) == -EXDEV);
    // Once its owner holds it for removal: replaced, not freed here.
    CHECK(err(fs.ns.link_moved(root, "victim", other_id(44), DT_DIR, false, fs.tick(), true)) == -ENOTDIR);
    auto over = fs.ns.link_moved(root, "victim", other_id(44), DT_REG, false, fs.tick(), true);
    REQUIRE(over);
    CHECK(same_id(*over->replaced, other_id(43)));
    CHECK_FALSE(over->freed);
    CHECK_FALSE(fs.ns.names(other_id(43)));
    CHECK(same_id(fs.ns.resolve(root, "victim")->id, other_id(44)));
    restored(fs);
    fs.file(root, "kept");
    CHECK(err(fs.ns.link_moved(root, "kept", other_id(44), DT_REG, true, fs.tick())) == -EEXIST);

    // Dropped (a settled move) or unlinked (its owner prepared that).
    REQUIRE(fs.ns.drop_entry(sub, "f2", in_file, fs.tick()));
    CHECK_FALSE(fs.ns.names(in_file));
    CHECK(err(fs.ns.drop_entry(root, "d", in_file, fs.tick())) == -ENOENT);  // names another inode
    REQUIRE(fs.ns.unlink(root, "victim", fs.tick()));
    CHECK_FALSE(fs.ns.names(other_id(44)));
    REQUIRE(fs.ns.drop_entry(root, "d", in_dir, fs.tick()));
    CHECK(fs.stat(root).nlink == nlink + 2);  // sub and full
    restored(fs);
}
