// Renames between directories of two metadata servers: the entry moves,
// the inode stays with its owner (same id, same data, open handles keep
// working), and a kill -9 of either server in the middle of many moves
// leaves every file named exactly once, where its acknowledged rename put it.
#include <catch2/catch.hpp>

#include <linux/fs.h>

#include <map>

#include "gather.hpp"
#include "two_meta.hpp"

using namespace pfs;
using namespace pfs::client;
using namespace pfs::test;
using namespace std::chrono_literals;

namespace {

std::span<const uint8_t> bytes(const std::string& s) {
    return std::span(reinterpret_cast<const uint8_t*>(s.data()), s.size());
}

}  // namespace

TEST_CASE("renames move files and directories between metadata servers", "[system][remote][move]") {
    TwoMeta t;
    auto& fs = *t.fs;
    bool ok = test::run(t.io, [&]() -> awaitable<void> {
        REQUIRE(co_await t.ready());
        REQUIRE_OK(co_await fs.mkdir("/a", 0755, t.root_node));
        REQUIRE_OK(co_await fs.mkdir("/b", 0755, t.other_node));

        // A file moves out: same inode, same data, gone from the source.
        REQUIRE_OK(co_await put(fs, "/a/f", "moved file"));
        auto before = co_await fs.stat("/a/f");
        REQUIRE_OK(before);
        REQUIRE_OK(co_await fs.rename("/a/f", "/b/f"));
        auto after = co_await fs.stat("/b/f");
        REQUIRE_OK(after);
        CHECK(after->id.ino == before->id.ino);
        CHECK(after->id.owner_node == t.root_node);
        CHECK(after->nlink == 1);
        CHECK_ERRNO(co_await fs.stat("/a/f"), -ENOENT);
        auto data = co_await get(fs, "/b/f");
        REQUIRE_OK(data);
        CHECK(*data == "moved file");
        auto listing = co_await fs.readdir("/b");
        REQUIRE_OK(listing);
        CHECK(names(*listing) == std::set<std::string>{"f"});

        // An open handle outlives a move back home.
        auto open = co_await fs.open("/b/f", O_RDWR);
        REQUIRE_OK(open);
        REQUIRE_OK(co_await fs.rename("/b/f", "/a/home"));
        REQUIRE_OK(co_await fs.write(*open, 0, bytes("MOVED")));
        REQUIRE_OK(co_await fs.close(*open));
        data = co_await get(fs, "/a/home");
        REQUIRE_OK(data);
        CHECK(*data == "MOVED file");
        CHECK_ERRNO(co_await fs.stat("/b/f"), -ENOENT);

        // Replacing a target on the other server, unless told not to.
        REQUIRE_OK(co_await put(fs, "/b/old", "old data"));
        REQUIRE_OK(co_await put(fs, "/a/new", "new data"));
        REQUIRE_OK(co_await fs.rename("/a/new", "/b/old"));
        data = co_await get(fs, "/b/old");
        REQUIRE_OK(data);
        CHECK(*data == "new data");
        REQUIRE_OK(co_await put(fs, "/a/x", "x"));
        REQUIRE_OK(co_await put(fs, "/b/y", "y"));
        CHECK_ERRNO(co_await fs.rename("/a/x", "/b/y", RENAME_NOREPLACE), -EEXIST);
        CHECK_ERRNO(co_await fs.rename("/a/x", "/b/y", RENAME_EXCHANGE), -EXDEV);
        data = co_await get(fs, "/a/x");
        REQUIRE_OK(data);
        CHECK(*data == "x");
        CHECK_ERRNO(co_await fs.rename("/a/x", "/b"), -EISDIR);

        // A moved file unlinked through its new entry is gone on its owner.
        REQUIRE_OK(co_await fs.rename("/a/x", "/b/x"));
        auto x = co_await fs.stat("/b/x");
        REQUIRE_OK(x);
        CHECK_ERRNO(co_await fs.rmdir("/b/x"), -ENOTDIR);
        REQUIRE_OK(co_await fs.unlink("/b/x"));
        CHECK_ERRNO(co_await fs.stat("/b/x"), -ENOENT);
        auto gone = co_await t.cluster->call_meta_ok(t.root_node, PFS_MSG_GETATTR, encode(pfs_x_entry_id, x->id));
        REQUIRE_FALSE(gone);
        CHECK(gone.error().code == -ESTALE);

        // Symlinks move too.
        REQUIRE_OK(co_await fs.symlink("some/target", "/a/link"));
        REQUIRE_OK(co_await fs.rename("/a/link", "/b/link"));
        auto target = co_await fs.readlink("/b/link");
        REQUIRE_OK(target);
        CHECK(*target == "some/target");

        // A directory tree moves with its entries; not below itself, even
        // where the way up crosses servers.
        REQUIRE_OK(co_await fs.mkdir("/a/tree", 0755, t.root_node));
        REQUIRE_OK(co_await fs.mkdir("/a/tree/sub", 0755, t.root_node));
        REQUIRE_OK(co_await put(fs, "/a/tree/leaf", "leaf"));
        REQUIRE_OK(co_await fs.rename("/a/tree", "/b/tree"));
        data = co_await get(fs, "/b/tree/leaf");
        REQUIRE_OK(data);
        CHECK(*data == "leaf");
        listing = co_await fs.readdir("/b/tree");
        REQUIRE_OK(listing);
        CHECK(names(*listing) == std::set<std::string>{"leaf", "sub"});
        CHECK_ERRNO(co_await fs.rename("/b", "/b/tree/sub/b"), -EINVAL);  // both on the root's server
        REQUIRE_OK(co_await fs.mkdir("/b/tree/deep", 0755, t.other_node));
        CHECK_ERRNO(co_await fs.rename("/b", "/b/tree/deep/b"), -EINVAL);  // across
        REQUIRE_OK(co_await fs.mkdir("/c", 0755, t.root_node));
        REQUIRE_OK(co_await fs.rename("/c", "/b/tree/deep/c"));  // no loop: fine
        REQUIRE_OK(co_await fs.stat("/b/tree/deep/c"));

        // Home again, then removed through an entry on the other server.
        REQUIRE_OK(co_await fs.rename("/b/tree", "/a/tree2"));
        REQUIRE_OK(co_await fs.stat("/a/tree2/sub"));
        REQUIRE_OK(co_await fs.rename("/a/tree2", "/b/tree3"));
        REQUIRE_OK(co_await fs.unlink("/b/tree3/leaf"));
        REQUIRE_OK(co_await fs.rmdir("/b/tree3/sub"));
        REQUIRE_OK(co_await fs.rmdir("/b/tree3/deep/c"));
        REQUIRE_OK(co_await fs.rmdir("/b/tree3/deep"));
        CHECK_ERRNO(co_await fs.rmdir("/b"), -ENOTEMPTY);
        REQUIRE_OK(co_await fs.rmdir("/b/tree3"));
        CHECK_ERRNO(co_await fs.stat("/b/tree3"), -ENOENT);

        REQUIRE(co_await t.settled());
        t.cluster->close();
    });
    INFO(t.tc.logs().substr(0, 20000));
    REQUIRE(ok);
    auto report = test::fsck_json(t.tc, 0);
    CHECK(report["clean"] == true);
}

TEST_CASE("kill -9 of either metadata server amid moves between them leaves every file named once",
          "[system][remote][move]") {
    for (const char* victim : {"m1", "m2"}) {
        DYNAMIC_SECTION("killed: " << victim) {
            TwoMeta t;
            auto& fs = *t.fs;
            constexpr int workers = 4, files_per_worker = 6;
            // Where each file is by its last acknowledged rename; a rename
            // under way at the kill may have gone either way.
            std::map<std::string, std::string> at;
            std::set<std::string> in_doubt;
            int moves = 0;
            bool ok = test::run(t.io, [&]() -> awaitable<void> {
                REQUIRE(co_await t.ready());
                REQUIRE_OK(co_await fs.mkdir("/a", 0755, t.root_node));
                REQUIRE_OK(co_await fs.mkdir("/b", 0755, t.other_node));
                for (int w = 0; w < workers; ++w) {
                    for (int i = 0; i < files_per_worker; ++i) {
                        std::string name = "f" + std::to_string(w) + "_" + std::to_string(i);
                        REQUIRE_OK(co_await put(fs, "/a/" + name, name));
                        at[name] = "/a/";
                    }
                }
                bool killed = false;
                std::vector<Task<Unit>> tasks;
                for (int w = 0; w < workers; ++w) {
                    tasks.push_back([&, w]() -> awaitable<Result<Unit>> {
                        for (int k = 0; !killed; ++k) {
                            std::string name = "f" + std::to_string(w) + "_" + std::to_string(k % files_per_worker);
                            std::string to = at[name] == "/a/" ? "/b/" : "/a/";
                            in_doubt.insert(name);
                            if (!co_await fs.rename(at[name] + name, to + name)) break;
                            in_doubt.erase(name);
                            at[name] = to;
                            ++moves;
                        }
                        co_return Unit{};
                    });
                }
                tasks.push_back([&]() -> awaitable<Result<Unit>> {
                    while (moves < 200) co_await pause(t.io, 5ms);
                    t.tc.daemon(victim).kill(SIGKILL);
                    killed = true;
                    co_return Unit{};
                });
                (void)co_await gather(std::move(tasks));
                t.tc.daemon(victim).start();
                REQUIRE(co_await t.ready());
                REQUIRE(co_await t.settled());

                auto in_a = co_await fs.readdir("/a");
                auto in_b = co_await fs.readdir("/b");
                REQUIRE_OK(in_a);
                REQUIRE_OK(in_b);
                auto a = names(*in_a), b = names(*in_b);
                WARN("acknowledged moves " << moves);
                CHECK(moves >= 200);
                CHECK(a.size() + b.size() == at.size());
                for (const auto& [name, dir] : at) {
                    INFO(name);
                    CHECK(a.count(name) + b.count(name) == 1);
                    if (!in_doubt.count(name)) CHECK((dir == "/a/" ? a : b).count(name) == 1);
                    auto data = co_await get(fs, (a.count(name) ? "/a/" : "/b/") + name);
                    REQUIRE_OK(data);
                    CHECK(*data == name);
                }
                t.cluster->close();
            });
            INFO(t.tc.logs().substr(0, 20000));
            REQUIRE(ok);
            auto report = test::fsck_json(t.tc, 0);
            CHECK(report["clean"] == true);
        }
    }
}
