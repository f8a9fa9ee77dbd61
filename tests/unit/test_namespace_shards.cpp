// Striped directories as one server's namespace sees them: the directory
// itself (shard 0, which lists its shards) and a shard of another server's
// striped directory. Each keeps only the names that hash to it.
#include <catch2/catch.hpp>

#include <dirent.h>

#include <set>

#include "namespace_test_util.hpp"

using namespace pfs;
using namespace pfs::meta;
using namespace pfs::test;

namespace {

constexpr uint32_t kShards = 3;

uint32_t shard_of(const std::string& name) {
    return pfs_dir_shard(name.data(), static_cast<uint32_t>(name.size()), kShards);
}

// The first name "<prefix>N" that hashes to shard.
std::string name_in(uint32_t shard, const std::string& prefix = "f") {
    for (int i = 0;; ++i) {
        std::string name = prefix + std::to_string(i);
        if (shard_of(name) == shard) return name;
    }
}

// Shards 1 and 2 as the other servers would have made them.
using Bytes = std::vector<uint8_t>;

std::vector<pfs_entry_id> shards_for(const pfs_entry_id& dir) {
    return {dir, pfs_entry_id{50, kOtherNode, 1}, pfs_entry_id{60, kOtherNode + 1, 1}};
}

pfs_entry_id striped(Fs& fs, const std::string& name = "s") {
    const pfs_entry_id id = fs.ns.reserve_dir_id();
    auto made = fs.ns.mkdir(fs.root(), name, 0755, 1000, 100, fs.tick(), shards_for(id), kShards);
    REQUIRE(made);
    CHECK(same_id(made->id, id));
    return id;
}

}  // namespace

TEST_CASE("pfs_dir_shard spreads names over the shards and is the same everywhere", "[namespace][shards]") {
    // FNV-1a: fixed values, so a client and a server never disagree.
    CHECK(pfs_dir_shard("a", 1, 1) == 0);
    CHECK(pfs_dir_shard("", 0, 7) == 2166136261u % 7);
    CHECK(pfs_dir_shard("a", 1, 1000) == 0xe40c292cu % 1000);
    std::vector<int> per_shard(4);
    for (int i = 0; i < 4000; ++i) {
        std::string n = "img_" + std::to_string(i) + ".jpg";
        ++per_shard[pfs_dir_shard(n.data(), static_cast<uint32_t>(n.size()), 4)];
    }
    for (int n : per_shard) CHECK((n > 800 && n < 1200));
}

TEST_CASE("a striped directory keeps only its shard's names and lists its shards", "[namespace][shards]") {
    Fs fs;
    auto d = striped(fs);
    auto a = fs.stat(d);
    CHECK((a.xattrs & PFS_ATTR_STRIPED) != 0);
    CHECK(a.nlink == 1);  // its subdirectories are counted in every shard
    CHECK(fs.ns.pattern(d)->dir_stripes == kShards);
    auto shards = fs.ns.shards(d);
    REQUIRE(shards);
    CHECK(shards->count == kShards);
    CHECK(shards->index == 0);
    REQUIRE(shards->ids.size() == kShards);
    // Its shards count as named here (ENTRY_CHECK answers PRESENT).
    CHECK(fs.ns.names(shards->ids[1]));
    CHECK(fs.ns.names(shards->ids[2]));

    const std::string mine = name_in(0), theirs = name_in(1);
    fs.file(d, mine);
    CHECK(fs.stat(d, mine).nlink == 1);
    CHECK(err(fs.ns.create(d, theirs, 0644, 0, 0, fs.tick(), first_targets())) == PFS_E_WRONG_SHARD);
    CHECK(err(fs.ns.mkdir(d, theirs, 0755, 0, 0, fs.tick())) == PFS_E_WRONG_SHARD);
    CHECK(err(fs.ns.symlink(d, theirs, "t", 0, 0, fs.tick())) == PFS_E_WRONG_SHARD);
    CHECK(err(fs.ns.lookup(d, theirs)) == PFS_E_WRONG_SHARD);
    CHECK(err(fs.ns.unlink(d, theirs, fs.tick())) == PFS_E_WRONG_SHARD);
    CHECK(err(fs.ns.rmdir(d, theirs, fs.tick())) == PFS_E_WRONG_SHARD);
    CHECK(err(fs.ns.rename(d, mine, d, theirs, 0, fs.tick())) == PFS_E_WRONG_SHARD);
    CHECK(err(fs.ns.rename(d, theirs, d, mine, 0, fs.tick())) == PFS_E_WRONG_SHARD);
    CHECK(fs.ns.lookup(d, ".."));  // dots are every shard's

    // Its listing: ".", "..", its own names, then on to shard 1.
    auto page = fs.ns.readdir(d, 0, 100);
    REQUIRE(page);
    REQUIRE(page->entries.size() == 3);
    CHECK(page->entries[2].name == mine);
    CHECK_FALSE(page->eof);
    CHECK(page->next_cookie == 1ull << PFS_COOKIE_SHARD_SHIFT);
    CHECK(err(fs.ns.readdir(d, 1ull << PFS_COOKIE_SHARD_SHIFT, 100)) == PFS_E_WRONG_SHARD);

    // An empty striped directory is replaced by no rename: its other
    // shards may hold entries.
    REQUIRE(fs.ns.unlink(d, mine, fs.tick()));
    fs.dir(fs.root(), "e");
    CHECK(err(fs.ns.rename(fs.root(), "e", fs.root(), "s", 0, fs.tick())) == -EXDEV);

    // Removed, its shards are no longer named here.
    REQUIRE(fs.ns.rmdir(fs.root(), "s", fs.tick()));
    CHECK_FALSE(fs.ns.names(shards->ids[1]));
}

TEST_CASE("a striped directory's id is reserved first, and its shards are checked", "[namespace][shards]") {
    Fs fs;
    // An id not reserved is refused, and so is a shard list that does not
    // start with the directory or names this server or a shard twice.
    auto plain = pfs_entry_id{999, Fs::kNode, 1};
    CHECK(err(fs.ns.mkdir(fs.root(), "x", 0755, 0, 0, fs.tick(), shards_for(plain))) == -EINVAL);
    const auto id = fs.ns.reserve_dir_id();
    auto bad = shards_for(id);
    bad[2] = bad[1];
    CHECK(err(fs.ns.mkdir(fs.root(), "x", 0755, 0, 0, fs.tick(), bad)) == -EINVAL);
    bad = shards_for(id);
    bad[1].owner_node = Fs::kNode;
    CHECK(err(fs.ns.mkdir(fs.root(), "x", 0755, 0, 0, fs.tick(), bad)) == -EINVAL);
    // Ids handed out after the reservation do not take it.
    auto f = fs.file(fs.root(), "f");
    CHECK(f.ino > id.ino);
    REQUIRE(fs.ns.mkdir(fs.root(), "x", 0755, 0, 0, fs.tick(), shards_for(id)));
    // Used once.
    CHECK(err(fs.ns.mkdir(fs.root(), "y", 0755, 0, 0, fs.tick(), shards_for(id))) == -EINVAL);
}

TEST_CASE("a shard of another server's striped directory", "[namespace][shards]") {
    Fs fs;
    const pfs_entry_id master = other_id(9);
    auto made = fs.ns.mkdir_detached(master, 0755, 1000, 100, StripePattern{.dir_stripes = kShards}, fs.tick(), {},
                                     DirShards{.index = 1, .count = kShards});
    REQUIRE(made);
    const pfs_entry_id s = made->id;
    CHECK(fs.ns.unsettled().size() == 1);  // settled by asking the directory's server

    const std::string mine = name_in(1), theirs = name_in(2);
    fs.file(s, mine);
    CHECK(err(fs.ns.create(s, theirs, 0644, 0, 0, fs.tick(), first_targets())) == PFS_E_WRONG_SHARD);
    // A directory made in a shard has the striped directory for its "..".
    const std::string sub = name_in(1, "d");
    auto child = fs.dir(s, sub);
    CHECK(same_id(fs.ns.resolve(child, "..")->id, master));
    auto child_page = fs.ns.readdir(child, 0, 10);
    REQUIRE(child_page);
    CHECK(same_id(child_page->entries[1].id, master));

    // Its listing starts at its own first cookie, has no dots, and its
    // cookies carry its index; its end leads to shard 2.
    const uint64_t first = 1ull << PFS_COOKIE_SHARD_SHIFT;
    CHECK(err(fs.ns.readdir(s, 0, 10)) == PFS_E_WRONG_SHARD);
    std::set<std::string> names;
    uint64_t cookie = first;
    for (;;) {
        auto page = fs.ns.readdir(s, cookie, 1);
        INFO("cookie " << cookie << ": " << (page ? "" : page.error().message));
        REQUIRE(page);
        for (const auto& e : page->entries) {
            CHECK(pfs_cookie_shard(e.cookie) == 1);
            names.insert(e.name);
        }
        CHECK_FALSE(page->eof);
        cookie = page->next_cookie;
        if (pfs_cookie_shard(cookie) != 1) {
            CHECK(cookie == 2ull << PFS_COOKIE_SHARD_SHIFT);
            break;
        }
    }
    CHECK(names == std::set<std::string>{mine, sub});

    // Its removal is prepared (empty) and committed as any detached one's.
    CHECK(err(fs.ns.set_detached_state(s, PFS_DETACHED_REMOVING)) == -ENOTEMPTY);
    REQUIRE(fs.ns.unlink(s, mine, fs.tick()));
    REQUIRE(fs.ns.rmdir(s, sub, fs.tick()));
    REQUIRE(fs.ns.set_detached_state(s, PFS_DETACHED_REMOVING));
    REQUIRE(fs.ns.remove_detached(s));
}

TEST_CASE("striped directories and shards survive snapshots and replay", "[namespace][shards]") {
    Fs fs;
    std::vector<Bytes> log;
    fs.ns.set_observer([&](const Op& op) {
        auto bytes = encode_op(op);
        REQUIRE(bytes);
        log.push_back(*bytes);
    });
    const auto id = fs.ns.reserve_dir_id();
    fs.file(fs.root(), "after");  // applied before the directory of the lower id
    REQUIRE(fs.ns.mkdir(fs.root(), "s", 0755, 0, 0, fs.tick(), shards_for(id), kShards));
    fs.file(id, name_in(0));
    auto shard = fs.ns.mkdir_detached(other_id(9), 0755, 0, 0, StripePattern{}, fs.tick(), {},
                                      DirShards{.index = 2, .count = kShards});
    REQUIRE(shard);

    auto snap = fs.ns.snapshot();
    REQUIRE(snap);
    auto back = Namespace::restore(*snap);
    REQUIRE(back);
    CHECK(back->names(shards_for(id)[1]));
    CHECK(back->shards(id)->count == kShards);
    CHECK(back->shards(shard->id)->index == 2);
    CHECK(back->pattern(id)->dir_stripes == kShards);
    CHECK(err(back->lookup(id, name_in(1))) == PFS_E_WRONG_SHARD);

    Namespace fresh{Fs::kNode, at(1)};
    for (const auto& rec : log) {
        auto op = decode_op(rec);
        REQUIRE(op);
        REQUIRE(fresh.apply(*op));
    }
    auto again = fresh.snapshot();
    REQUIRE(again);
    CHECK(*again == *snap);
}
