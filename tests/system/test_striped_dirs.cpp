// Striped directories over three metadata servers: one directory whose
// entries (and so its files' inodes) spread over all three by name hash,
// used through libpfs as one directory; kill -9 of a shard's server amid
// creates loses no acknowledged entry, and fsck finds nothing wrong.
#include <catch2/catch.hpp>

#include <dirent.h>

#include <map>
#include <set>

#include "gather.hpp"
#include "two_meta.hpp"

using namespace pfs;
using namespace pfs::client;
using namespace pfs::test;
using namespace std::chrono_literals;

namespace {

struct ThreeMeta {
    TestCluster tc;
    asio::io_context io;
    std::unique_ptr<Cluster> cluster;
    std::unique_ptr<FileSystem> fs;

    ThreeMeta() {
        tc.start_mgmtd();
        for (const char* m : {"m1", "m2", "m3"}) tc.start_meta(m);
        tc.start_storage("s1", 2);
        ClientConfig cfg;
        cfg.request_timeout = 3s;
        cfg.connect_timeout = 1s;
        cfg.role = auth::Role::admin;  // LIST_DETACHED
        cluster = std::make_unique<Cluster>(io.get_executor(), tc.mgmtd(), tc.secret(), cfg);
        fs = std::make_unique<FileSystem>(*cluster, FileSystemOptions{0ms});
    }

    // Every metadata server ONLINE and serving.
    awaitable<bool> ready() {
        if (!co_await test::wait_ready(io, *cluster, *fs, 2)) co_return false;
        co_return co_await test::eventually(io, 15s, [&]() -> awaitable<bool> {
            (void)co_await cluster->start();
            const auto& nodes = cluster->meta_nodes();
            if (nodes.size() != 3) co_return false;
            for (const auto& n : nodes) {
                if (n.reachability != PFS_REACH_ONLINE) co_return false;
                if (!co_await list_detached(*cluster, n.node_id)) co_return false;
            }
            co_return true;
        });
    }

    // Until no server has a directory left CREATED or REMOVING.
    awaitable<bool> settled() {
        std::vector<uint32_t> nodes;
        for (const auto& n : cluster->meta_nodes()) nodes.push_back(n.node_id);
        co_return co_await all_settled(io, *cluster, std::move(nodes));
    }

    awaitable<Result<pfs_attr>> attr_of(const pfs_entry_id& id) {
        auto body = co_await cluster->call_meta_ok(id.owner_node, PFS_MSG_GETATTR, encode(pfs_x_entry_id, id));
        if (!body) co_return body.error();
        co_return decode(*body, pfs_x_attr);
    }
};

uint32_t shard_of(const std::string& name, size_t count) {
    return pfs_dir_shard(name.data(), static_cast<uint32_t>(name.size()), static_cast<uint32_t>(count));
}

}  // namespace

TEST_CASE("a striped directory spreads its entries over three metadata servers and works as one directory",
          "[system][shards]") {
    ThreeMeta t;
    auto& fs = *t.fs;
    bool ok = test::run(t.io, [&]() -> awaitable<void> {
        REQUIRE(co_await t.ready());
        auto made = co_await fs.mkdir("/s", 0755, 0, 3);
        REQUIRE_OK(made);
        CHECK((made->xattrs & PFS_ATTR_STRIPED) != 0);
        CHECK_ERRNO(co_await fs.mkdir("/four", 0755, 0, 4), -EINVAL);  // three servers online
        auto shards = co_await fs.shards("/s");
        REQUIRE_OK(shards);
        REQUIRE(shards->size() == 3);
        CHECK(shards->at(0).ino == made->id.ino);
        std::set<uint32_t> nodes;
        for (const auto& s : *shards) nodes.insert(s.owner_node);
        CHECK(nodes.size() == 3);
        auto info = ctl(t.tc, "--json entry info /s");
        INFO(info.out << info.err);
        REQUIRE(info.status == 0);
        auto doc = nlohmann::json::parse(info.out);
        REQUIRE(doc["shards"].size() == 3);
        CHECK(doc["shards"][1]["node_id"] == shards->at(1).owner_node);
        CHECK(doc["pattern"]["dir_stripes"] == 3);

        // Each file's inode lives with its name's shard.
        std::set<std::string> expect;
        std::set<uint32_t> owners;
        for (int i = 0; i < 48; ++i) {
            const std::string name = "f" + std::to_string(i);
            REQUIRE_OK(co_await put(fs, "/s/" + name, name));
            auto st = co_await fs.stat("/s/" + name);
            REQUIRE_OK(st);
            CHECK(st->id.owner_node == shards->at(shard_of(name, 3)).owner_node);
            owners.insert(st->id.owner_node);
            expect.insert(name);
        }
        CHECK(owners.size() == 3);
        auto back = co_await get(fs, "/s/f7");
        REQUIRE_OK(back);
        CHECK(*back == "f7");

        // Subdirectories are striped as their parent's pattern says.
        REQUIRE_OK(co_await fs.mkdir("/s/sub"));
        expect.insert("sub");
        auto sub = co_await fs.stat("/s/sub");
        REQUIRE_OK(sub);
        CHECK((sub->xattrs & PFS_ATTR_STRIPED) != 0);
        REQUIRE_OK(co_await put(fs, "/s/sub/deep", "deep"));
        auto deep = co_await get(fs, "/s/sub/deep");
        REQUIRE_OK(deep);
        CHECK(*deep == "deep");

        // One listing over every shard.
        auto listing = co_await fs.readdir("/s");
        REQUIRE_OK(listing);
        CHECK(names(*listing) == expect);
        auto plus = co_await fs.readdir_plus("/s");
        REQUIRE_OK(plus);
        // Each file's attributes come from its shard's server (a
        // subdirectory may be placed on another).
        size_t files_with_attrs = 0;
        for (const auto& e : *plus) files_with_attrs += e.type == DT_REG && e.attr.has_value();
        CHECK(files_with_attrs == 48);

        // Renames between shards (and servers), out of the directory and back.
        for (int i = 0; i < 12; ++i) {
            const std::string from = "f" + std::to_string(i), to = "g" + std::to_string(i);
            REQUIRE_OK(co_await fs.rename("/s/" + from, "/s/" + to));
            expect.erase(from);
            expect.insert(to);
        }
        REQUIRE_OK(co_await fs.rename("/s/g0", "/outside"));
        CHECK_ERRNO(co_await fs.stat("/s/g0"), -ENOENT);
        REQUIRE_OK(co_await fs.rename("/outside", "/s/back"));
        expect.erase("g0");
        expect.insert("back");
        auto moved = co_await get(fs, "/s/back");
        REQUIRE_OK(moved);
        CHECK(*moved == "f0");
        listing = co_await fs.readdir("/s");
        REQUIRE_OK(listing);
        CHECK(names(*listing) == expect);

        // A striped directory made on another server than its parent's
        // (detached), used and removed the same way.
        const uint32_t root_node = *t.cluster->root_meta();
        uint32_t away_node = 0;
        for (const auto& n : t.cluster->meta_nodes())
            if (n.node_id != root_node) away_node = n.node_id;
        auto away = co_await fs.mkdir("/away", 0755, away_node, 3);
        REQUIRE_OK(away);
        CHECK(away->id.owner_node == away_node);
        REQUIRE_OK(co_await put(fs, "/away/x", "x"));
        REQUIRE_OK(co_await put(fs, "/away/y", "y"));
        CHECK_ERRNO(co_await fs.rmdir("/away"), -ENOTEMPTY);
        REQUIRE_OK(co_await fs.unlink("/away/x"));
        REQUIRE_OK(co_await fs.unlink("/away/y"));
        REQUIRE_OK(co_await fs.rmdir("/away"));

        // rename over an empty striped directory replaces it, and its
        // shards go; over one with entries it is ENOTEMPTY.
        REQUIRE_OK(co_await fs.mkdir("/victim", 0755, 0, 3));
        auto victim_shards = co_await fs.shards("/victim");
        REQUIRE_OK(victim_shards);
        REQUIRE_OK(co_await put(fs, "/victim/in", "in"));
        REQUIRE_OK(co_await fs.mkdir("/newer"));
        CHECK_ERRNO(co_await fs.rename("/newer", "/victim"), -ENOTEMPTY);
        REQUIRE_OK(co_await fs.unlink("/victim/in"));
        REQUIRE_OK(co_await fs.rename("/newer", "/victim"));
        CHECK_ERRNO(co_await fs.stat("/newer"), -ENOENT);
        auto replaced = co_await fs.stat("/victim");
        REQUIRE_OK(replaced);
        CHECK((replaced->xattrs & PFS_ATTR_STRIPED) == 0);
        REQUIRE(co_await t.settled());
        for (const auto& s : *victim_shards) CHECK_ERRNO(co_await t.attr_of(s), -ESTALE);
        REQUIRE_OK(co_await fs.rmdir("/victim"));

        // Its mode is every shard's: a create in any shard is checked by it.
        pfs_setattr chmod{};
        chmod.valid = PFS_SET_MODE;
        chmod.mode = 0700;
        REQUIRE_OK(co_await fs.setattr("/s", chmod));
        for (const auto& s : *shards) {
            auto a = co_await t.attr_of(s);
            REQUIRE_OK(a);
            CHECK((a->mode & 07777) == 0700);
        }

        // rmdir: not while any shard has an entry; then every shard goes.
        REQUIRE_OK(co_await fs.unlink("/s/sub/deep"));
        REQUIRE_OK(co_await fs.rmdir("/s/sub"));
        expect.erase("sub");
        std::string kept;  // a name in another shard than the directory's own
        for (const auto& name : expect) {
            if (kept.empty() && shard_of(name, 3) != 0) kept = name;
            else REQUIRE_OK(co_await fs.unlink("/s/" + name));
        }
        REQUIRE_FALSE(kept.empty());
        CHECK_ERRNO(co_await fs.rmdir("/s"), -ENOTEMPTY);
        // The refused rmdir left every shard taking entries.
        for (int i = 0; i < 12; ++i) REQUIRE_OK(co_await put(fs, "/s/again" + std::to_string(i), "x"));
        for (int i = 0; i < 12; ++i) REQUIRE_OK(co_await fs.unlink("/s/again" + std::to_string(i)));
        REQUIRE_OK(co_await fs.unlink("/s/" + kept));
        REQUIRE_OK(co_await fs.rmdir("/s"));
        CHECK_ERRNO(co_await fs.stat("/s"), -ENOENT);
        REQUIRE(co_await t.settled());
        for (const auto& s : *shards) CHECK_ERRNO(co_await t.attr_of(s), -ESTALE);
        t.cluster->close();
    });
    INFO(t.tc.logs().substr(0, 20000));
    REQUIRE(ok);
    // Nothing dangling, no orphan directory.
    auto report = test::fsck_json(t.tc, 0);
    CHECK(report["problems"].empty());
}

TEST_CASE("kill -9 of a shard's server amid creates in a striped directory loses no acknowledged entry",
          "[system][shards]") {
    ThreeMeta t;
    auto& fs = *t.fs;
    std::set<std::string> made;
    constexpr int workers = 6;
    bool ok = test::run(t.io, [&]() -> awaitable<void> {
        REQUIRE(co_await t.ready());
        REQUIRE_OK(co_await fs.mkdir("/flat", 0755, 0, 3));
        auto shards = co_await fs.shards("/flat");
        REQUIRE_OK(shards);
        // The server of shard 1 dies; which daemon that is, its node says.
        const uint32_t victim_node = shards->at(1).owner_node;
        std::string victim;
        for (const auto& n : t.cluster->meta_nodes())
            if (n.node_id == victim_node) victim = n.alias;
        REQUIRE_FALSE(victim.empty());
        bool killed = false;
        std::vector<Task<Unit>> tasks;
        for (int w = 0; w < workers; ++w) {
            tasks.push_back([&, w]() -> awaitable<Result<Unit>> {
                for (int k = 0; !killed; ++k) {
                    const std::string name = "/flat/w" + std::to_string(w) + "_" + std::to_string(k);
                    auto f = co_await fs.open(name, O_CREAT | O_EXCL | O_WRONLY);
                    if (!f) {
                        if (killed) break;
                        continue;  // another shard's server may answer still
                    }
                    made.insert(name);
                    (void)co_await fs.close(*f);
                }
                co_return Unit{};
            });
        }
        tasks.push_back([&]() -> awaitable<Result<Unit>> {
            while (made.size() < 300) co_await pause(t.io, 5ms);
            t.tc.daemon(victim).kill(SIGKILL);
            co_await pause(t.io, 200ms);  // creates in the other shards go on meanwhile
            killed = true;
            co_return Unit{};
        });
        (void)co_await gather(std::move(tasks));
        t.tc.daemon(victim).start();
        REQUIRE(co_await t.ready());
        Result<std::vector<Entry>> listing = Error{};
        for (int i = 0; i < 300 && !listing; ++i) {
            listing = co_await fs.readdir("/flat");
            if (!listing) co_await pause(t.io, 50ms);
        }
        REQUIRE_OK(listing);
        REQUIRE(co_await t.settled());
        auto present = names(*listing);
        WARN("acknowledged creates " << made.size() << ", entries " << present.size());
        for (const auto& name : made) {
            INFO(name);
            CHECK(present.count(name.substr(6)) == 1);
        }
        // Every name listed is found where its hash says.
        for (const auto& name : present) REQUIRE_OK(co_await fs.stat("/flat/" + name));
        t.cluster->close();
    });
    INFO(t.tc.logs().substr(0, 20000));
    REQUIRE(ok);
    auto report = test::fsck_json(t.tc, 0);
    CHECK(report["problems"].empty());
}
