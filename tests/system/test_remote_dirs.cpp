// Two metadata servers: new directories spread over both, each directory's
// entries live with its owner, and every operation works across them as on
// one server (or says EXDEV: hard links between servers; renames across
// them are test_moves.cpp's). kill -9 of either server in the middle
// of mkdirs and rmdirs placed on the other leaves, once settled, no entry
// naming a missing directory and no directory without its entry.
#include <catch2/catch.hpp>

#include <set>

#include "gather.hpp"
#include "two_meta.hpp"

using namespace pfs;
using namespace pfs::client;
using namespace pfs::test;
using namespace std::chrono_literals;

TEST_CASE("directories spread over two metadata servers and work across them", "[system][remote]") {
    TwoMeta t;
    auto& fs = *t.fs;
    bool ok = test::run(t.io, [&]() -> awaitable<void> {
        REQUIRE(co_await t.ready());
        REQUIRE(t.root_node != t.other_node);

        // Spread: consecutive mkdirs land on both servers.
        std::set<uint32_t> owners;
        for (int i = 0; i < 4; ++i) {
            auto d = co_await fs.mkdir("/d" + std::to_string(i));
            REQUIRE_OK(d);
            owners.insert(d->id.owner_node);
        }
        CHECK(owners == std::set<uint32_t>{t.root_node, t.other_node});

        // Placed on the other server on request; a server not in the map is refused.
        auto away = co_await fs.mkdir("/away", 0750, t.other_node);
        REQUIRE_OK(away);
        CHECK(away->id.owner_node == t.other_node);
        CHECK((away->mode & 07777) == 0750);
        // Its server removes it only when a removal was prepared, and only
        // when another metadata server (or fsck --repair) asks.
        pfs_rmdir_detached commit{away->id, PFS_RMDIR_COMMIT};
        auto refused = co_await t.cluster->call_meta_ok(t.other_node, PFS_MSG_RMDIR_DETACHED,
                                                        encode(pfs_x_rmdir_detached, commit));
        REQUIRE_FALSE(refused);
        CHECK(refused.error().code == -EBUSY);
        Cluster as_client(t.io.get_executor(), t.tc.mgmtd(), t.tc.secret());
        REQUIRE_OK(co_await as_client.start());
        refused = co_await as_client.call_meta_ok(t.other_node, PFS_MSG_RMDIR_DETACHED,
                                                  encode(pfs_x_rmdir_detached, commit));
        REQUIRE_FALSE(refused);
        CHECK(refused.error().code == -EPERM);
        as_client.close();
        auto unknown = co_await fs.mkdir("/nowhere", 0755, 999);
        REQUIRE_FALSE(unknown);
        CHECK(unknown.error().code == PFS_E_UNKNOWN_NODE);

        // The parent's server answers for the name with the owner's attributes.
        auto looked = co_await fs.stat("/away");
        REQUIRE_OK(looked);
        CHECK(looked->id.ino == away->id.ino);
        CHECK(looked->id.owner_node == t.other_node);
        CHECK(S_ISDIR(looked->mode));

        // Files, subdirectories and data inside it.
        REQUIRE_OK(co_await put(fs, "/away/f", "across servers"));
        auto back = co_await get(fs, "/away/f");
        REQUIRE_OK(back);
        CHECK(*back == "across servers");
        auto f = co_await fs.stat("/away/f");
        REQUIRE_OK(f);
        CHECK(f->id.owner_node == t.other_node);  // files live with their directory
        REQUIRE_OK(co_await fs.mkdir("/away/sub", 0755, t.root_node));  // and back again
        REQUIRE_OK(co_await put(fs, "/away/sub/g", "nested"));
        auto nested = co_await get(fs, "/away/sub/g");
        REQUIRE_OK(nested);
        CHECK(*nested == "nested");
        auto listing = co_await fs.readdir("/away");
        REQUIRE_OK(listing);
        CHECK(names(*listing) == std::set<std::string>{"f", "sub"});
        auto root_listing = co_await fs.readdir("/");
        REQUIRE_OK(root_listing);
        CHECK(names(*root_listing).count("away") == 1);

        // rmdir: not while it has entries; then gone from both servers.
        auto busy = co_await fs.rmdir("/away");
        REQUIRE_FALSE(busy);
        CHECK(busy.error().code == -ENOTEMPTY);
        auto still = co_await get(fs, "/away/f");
        REQUIRE_OK(still);
        CHECK_ERRNO(co_await fs.rmdir("/away/sub"), -ENOTEMPTY);
        REQUIRE_OK(co_await fs.unlink("/away/sub/g"));
        REQUIRE_OK(co_await fs.rmdir("/away/sub"));
        REQUIRE_OK(co_await fs.unlink("/away/f"));

        // Renamed in place it stays the same directory; hard links: EXDEV.
        REQUIRE_OK(co_await fs.rename("/away", "/moved"));
        auto moved = co_await fs.stat("/moved");
        REQUIRE_OK(moved);
        CHECK(moved->id.ino == away->id.ino);
        auto local = co_await fs.mkdir("/here", 0755, t.root_node);
        REQUIRE_OK(local);
        REQUIRE_OK(co_await put(fs, "/here/file", "x"));
        CHECK_ERRNO(co_await fs.link("/here/file", "/moved/link"), -EXDEV);

        REQUIRE_OK(co_await fs.rmdir("/moved"));
        CHECK_ERRNO(co_await fs.stat("/moved"), -ENOENT);
        auto gone = co_await t.cluster->call_meta_ok(t.other_node, PFS_MSG_GETATTR, encode(pfs_x_entry_id, away->id));
        REQUIRE_FALSE(gone);
        CHECK(gone.error().code == -ESTALE);
        REQUIRE(co_await t.settled());
        t.cluster->close();
    });
    INFO(t.tc.logs().substr(0, 20000));
    REQUIRE(ok);
    auto report = test::fsck_json(t.tc, 0);
    CHECK(report["clean"] == true);
    CHECK(report["directories"] == 6);  // "/", /d0../d3 and /here
}

TEST_CASE("kill -9 of either metadata server amid mkdirs and rmdirs across them leaves nothing dangling",
          "[system][remote]") {
    for (const char* victim : {"parent's server", "directories' server"}) {
        DYNAMIC_SECTION("killed: the " << victim) {
            TwoMeta t;
            auto& fs = *t.fs;
            const bool kill_parent_owner = std::string(victim) == "parent's server";
            std::set<std::string> made, removed;  // acknowledged
            std::set<std::string> removing;       // rmdir sent: either outcome is right until acknowledged
            constexpr int workers = 6;
            bool ok = test::run(t.io, [&]() -> awaitable<void> {
                REQUIRE(co_await t.ready());
                REQUIRE_OK(co_await fs.mkdir("/crash", 0755, t.root_node));
                bool killed = false;
                std::vector<Task<Unit>> tasks;
                for (int w = 0; w < workers; ++w) {
                    tasks.push_back([&, w]() -> awaitable<Result<Unit>> {
                        for (int k = 0; !killed; ++k) {
                            std::string name = "/crash/d" + std::to_string(w) + "_" + std::to_string(k);
                            auto d = co_await fs.mkdir(name, 0755, t.other_node);
                            if (!d) break;
                            made.insert(name);
                            if (k % 2) continue;
                            removing.insert(name);
                            if (!co_await fs.rmdir(name)) break;
                            removed.insert(name);
                        }
                        co_return Unit{};
                    });
                }
                tasks.push_back([&]() -> awaitable<Result<Unit>> {
                    while (made.size() < 300) co_await pause(t.io, 5ms);
                    t.tc.daemon(kill_parent_owner ? "m1" : "m2").kill(SIGKILL);
                    killed = true;
                    co_return Unit{};
                });
                (void)co_await gather(std::move(tasks));
                t.tc.daemon(kill_parent_owner ? "m1" : "m2").start();

                Result<std::vector<Entry>> listing = Error{};
                for (int i = 0; i < 300 && !listing; ++i) {
                    co_await pause(t.io, 50ms);
                    listing = co_await fs.readdir("/crash");
                }
                REQUIRE_OK(listing);
                REQUIRE(co_await t.settled());
                listing = co_await fs.readdir("/crash");
                REQUIRE_OK(listing);
                auto present = names(*listing);
                WARN("acknowledged mkdirs " << made.size() << ", rmdirs " << removed.size() << ", entries "
                                            << present.size());
                CHECK(made.size() >= 300);
                for (const auto& name : made) {
                    INFO(name);
                    if (removed.count(name)) CHECK(present.count(name.substr(7)) == 0);
                    else if (!removing.count(name)) CHECK(present.count(name.substr(7)) == 1);
                }
                size_t unexplained = 0;
                for (const auto& name : present)
                    if (!made.count("/crash/" + name)) ++unexplained;
                CHECK(unexplained <= workers);  // a mkdir under way at the kill
                // Every entry names a live directory of the other server,
                // and every directory there is named by exactly one entry.
                std::set<uint64_t> named;
                for (const auto& e : *listing) {
                    if (e.name == "." || e.name == "..") continue;
                    CHECK(e.id.owner_node == t.other_node);
                    auto attr = co_await t.cluster->call_meta_ok(t.other_node, PFS_MSG_GETATTR,
                                                                 encode(pfs_x_entry_id, e.id));
                    CHECK(attr);
                    named.insert(e.id.ino);
                }
                auto detached = co_await list_detached(*t.cluster, t.other_node);
                REQUIRE_OK(detached);
                std::set<uint64_t> living;
                for (const auto& d : *detached) living.insert(d.id.ino);
                CHECK(living == named);
                t.cluster->close();
            });
            INFO(t.tc.logs().substr(0, 20000));
            REQUIRE(ok);
            auto report = test::fsck_json(t.tc, 0);
            CHECK(report["clean"] == true);
        }
    }
}
