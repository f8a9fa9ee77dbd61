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

// After a run: it passed, and fsck finds nothing wrong.
void require_clean(TwoMeta& t, bool ok) {
    INFO(t.tc.logs().substr(0, 20000));
    REQUIRE(ok);
    auto report = test::fsck_json(t.tc, 0);
    INFO(report.dump());
    CHECK(report["clean"] == true);
}

// A task that kills victim (SIGKILL) once `done` reaches `at`, and then
// sets `killed` for the workers to stop.
auto kill_at(TwoMeta& t, const char* victim, const int& done, int at, bool& killed) {
    return [&t, victim, &done, at, &killed]() -> awaitable<Result<Unit>> {
        while (done < at) co_await pause(t.io, 5ms);
        t.tc.daemon(victim).kill(SIGKILL);
        killed = true;
        co_return Unit{};
    };
}

// victim started again, both servers back and every move settled.
awaitable<bool> restarted(TwoMeta& t, const char* victim) {
    t.tc.daemon(victim).start();
    const bool ready = co_await t.ready();
    if (!ready) co_return false;
    co_return co_await t.settled();
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
    require_clean(t, ok);
}

TEST_CASE("a rename replaces an entry naming another server's inode, which its owner then removes",
          "[system][remote][move]") {
    TwoMeta t;
    auto& fs = *t.fs;
    bool ok = test::run(t.io, [&]() -> awaitable<void> {
        REQUIRE(co_await t.ready());
        REQUIRE_OK(co_await fs.mkdir("/a", 0755, t.root_node));
        REQUIRE_OK(co_await fs.mkdir("/b", 0755, t.other_node));
        auto gone = [&](const pfs_entry_id& id) -> awaitable<bool> {
            auto r = co_await t.cluster->call_meta_ok(id.owner_node, PFS_MSG_GETATTR, encode(pfs_x_entry_id, id));
            co_return !r && r.error().code == -ESTALE;
        };
        auto content = [&](const std::string& path) -> awaitable<std::string> {
            auto data = co_await get(fs, path);
            co_return data ? *data : "error " + std::to_string(data.error().code);
        };

        // Saved twice from the other server (a temporary file renamed over
        // the last save): the second replaces the first's inode, of /a's
        // server, from /b's (REMOTE_LINK over a remote entry).
        REQUIRE_OK(co_await put(fs, "/a/tmp1", "save 1"));
        REQUIRE_OK(co_await fs.rename("/a/tmp1", "/b/file"));
        auto first = co_await fs.stat("/b/file");
        REQUIRE_OK(first);
        REQUIRE(first->id.owner_node == t.root_node);
        REQUIRE_OK(co_await put(fs, "/a/tmp2", "save 2"));
        auto reader = co_await fs.open("/b/file", O_RDONLY);  // keeps the first save readable
        REQUIRE_OK(reader);
        REQUIRE_OK(co_await fs.rename("/a/tmp2", "/b/file"));
        auto now = co_await content("/b/file");
        CHECK(now == "save 2");
        std::vector<uint8_t> buf(64);
        auto kept = co_await fs.read(*reader, 0, buf);
        REQUIRE_OK(kept);
        CHECK(std::string(buf.begin(), buf.begin() + static_cast<long>(*kept)) == "save 1");
        REQUIRE_OK(co_await fs.close(*reader));
        CHECK(co_await gone(first->id));

        // Then from a file of /b's own (RENAME within /b's server over the
        // entry naming the second save's inode, still /a's server's).
        auto second = co_await fs.stat("/b/file");
        REQUIRE_OK(second);
        REQUIRE(second->id.owner_node == t.root_node);
        REQUIRE_OK(co_await put(fs, "/b/tmp3", "save 3"));
        REQUIRE_OK(co_await fs.rename("/b/tmp3", "/b/file"));
        now = co_await content("/b/file");
        CHECK(now == "save 3");
        CHECK(co_await gone(second->id));
        auto listing = co_await fs.readdir("/b");
        REQUIRE_OK(listing);
        CHECK(names(*listing) == std::set<std::string>{"file"});

        // An empty directory of the other server is replaced; a full one,
        // or one of the other kind, is not, and stays as it was.
        REQUIRE_OK(co_await fs.mkdir("/b/empty", 0755, t.root_node));
        auto empty = co_await fs.stat("/b/empty");
        REQUIRE_OK(empty);
        REQUIRE(empty->id.owner_node == t.root_node);
        REQUIRE_OK(co_await fs.mkdir("/b/mine", 0755, t.other_node));
        auto b_before = co_await fs.stat("/b");
        REQUIRE_OK(b_before);
        REQUIRE_OK(co_await fs.rename("/b/mine", "/b/empty"));
        auto replaced = co_await fs.stat("/b/empty");
        REQUIRE_OK(replaced);
        CHECK(replaced->id.owner_node == t.other_node);
        CHECK(co_await gone(empty->id));
        auto b_after = co_await fs.stat("/b");
        REQUIRE_OK(b_after);
        CHECK(b_after->nlink == b_before->nlink - 1);
        REQUIRE_OK(co_await fs.mkdir("/b/full", 0755, t.root_node));
        REQUIRE_OK(co_await put(fs, "/b/full/x", "x"));
        REQUIRE_OK(co_await fs.mkdir("/b/other", 0755, t.other_node));
        CHECK_ERRNO(co_await fs.rename("/b/other", "/b/full"), -ENOTEMPTY);
        CHECK_ERRNO(co_await fs.rename("/b/file", "/b/full"), -EISDIR);
        REQUIRE_OK(co_await put(fs, "/b/full/y", "takes entries again"));
        REQUIRE_OK(co_await put(fs, "/a/f", "f"));
        REQUIRE_OK(co_await fs.rename("/a/f", "/b/moved"));
        CHECK_ERRNO(co_await fs.rename("/b/other", "/b/moved"), -ENOTDIR);
        CHECK(co_await content("/b/full/x") == "x");
        CHECK(co_await content("/b/moved") == "f");

        REQUIRE(co_await t.settled());
        t.cluster->close();
    });
    require_clean(t, ok);
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
                tasks.push_back(kill_at(t, victim, moves, 200, killed));
                (void)co_await gather(std::move(tasks));
                REQUIRE(co_await restarted(t, victim));

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
            require_clean(t, ok);
        }
    }
}

TEST_CASE("kill -9 of either metadata server amid saves over the other's files keeps each file's last save",
          "[system][remote][move]") {
    for (const char* victim : {"m1", "m2"}) {
        DYNAMIC_SECTION("killed: " << victim) {
            TwoMeta t;
            auto& fs = *t.fs;
            constexpr int workers = 4;
            auto save = [](int w, int k) { return "save " + std::to_string(w) + " " + std::to_string(k); };
            auto file = [](int w) { return "/b/file" + std::to_string(w); };
            // Each worker's last acknowledged save, and the one under way at
            // the kill (-1: none), which may have gone either way.
            std::map<int, int> saved, in_doubt;
            int saves = 0;
            bool ok = test::run(t.io, [&]() -> awaitable<void> {
                REQUIRE(co_await t.ready());
                REQUIRE_OK(co_await fs.mkdir("/a", 0755, t.root_node));
                REQUIRE_OK(co_await fs.mkdir("/b", 0755, t.other_node));
                for (int w = 0; w < workers; ++w) {
                    REQUIRE_OK(co_await put(fs, file(w), save(w, -1)));
                    saved[w] = in_doubt[w] = -1;
                }
                bool killed = false;
                std::vector<Task<Unit>> tasks;
                for (int w = 0; w < workers; ++w) {
                    tasks.push_back([&, w]() -> awaitable<Result<Unit>> {
                        // Written beside it or on the other server, then
                        // renamed over it: the file it replaces is of
                        // either server, whichever the last save came from.
                        for (int k = 0; !killed; ++k) {
                            const std::string tmp = std::string(k % 3 ? "/a/" : "/b/") + "tmp" + std::to_string(w) +
                                                    "_" + std::to_string(k);
                            if (!co_await put(fs, tmp, save(w, k))) break;
                            in_doubt[w] = k;
                            if (!co_await fs.rename(tmp, file(w))) break;
                            saved[w] = k;
                            in_doubt[w] = -1;
                            ++saves;
                        }
                        co_return Unit{};
                    });
                }
                tasks.push_back(kill_at(t, victim, saves, 120, killed));
                (void)co_await gather(std::move(tasks));
                REQUIRE(co_await restarted(t, victim));

                WARN("acknowledged saves " << saves);
                CHECK(saves >= 120);
                for (int w = 0; w < workers; ++w) {
                    INFO("worker " << w << " saved " << saved[w] << ", in doubt " << in_doubt[w]);
                    auto data = co_await get(fs, file(w));
                    REQUIRE_OK(data);
                    CHECK((*data == save(w, saved[w]) || (in_doubt[w] >= 0 && *data == save(w, in_doubt[w]))));
                }
                t.cluster->close();
            });
            require_clean(t, ok);
        }
    }
}
