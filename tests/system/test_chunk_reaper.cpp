// pfs-meta's chunk reaper against real pfs-storage processes: the chunks
// of removed files go in batches (far fewer requests than files), every
// chunk file is gone afterwards; files removed one by one within the linger
// go in one request per target; chunks a dead target kept are deleted once
// it is back, even when pfs-meta restarted meanwhile.
#include <catch2/catch.hpp>

#include <filesystem>

#include <fcntl.h>
#include <signal.h>

#include "chunk_reaper.hpp"
#include "filesystem.hpp"
#include "fs_waits.hpp"
#include "striped_io.hpp"
#include "two_targets.hpp"

using namespace pfs;
using namespace pfs::client;
using pfs::test::TestCluster;

namespace {

// Until the reaper has nothing pending, at most 30 s.
awaitable<void> drained(asio::io_context& io, meta::ChunkReaper& reaper) {
    for (int i = 0; i < 600 && reaper.pending() > 0; ++i) co_await test::pause(io, std::chrono::milliseconds(50));
}

}  // namespace

TEST_CASE("removed files' chunks are deleted in batches per target", "[system]") {
    test::TwoTargets t;
    auto& [tc, io, cluster, layout] = t;
    StripedIo files(*cluster);
    meta::ChunkReaper reaper(io.get_executor(), *cluster);
    constexpr uint64_t kFiles = 300;
    const Bytes data(layout.chunk_size + 100, 0x5a);  // both targets hold a chunk of each file
    auto chunk_files = [&tc] {
        size_t n = 0;
        for (const char* target : {"s1-t0", "s1-t1"})
            for (const auto& e : std::filesystem::recursive_directory_iterator(tc.dir() / target))
                n += e.is_regular_file() && e.path().parent_path().parent_path().filename() == "chunks";
        return n;
    };

    bool ok = test::run(io, [&]() -> awaitable<void> {
        bool routed = co_await t.routed();
        REQUIRE(routed);
        for (uint64_t ino = 1; ino <= kFiles; ++ino) REQUIRE_OK(co_await files.write(layout, {ino, 1, 0}, 0, data));
        const size_t written = chunk_files();
        REQUIRE(written == 2 * kFiles);

        for (uint64_t ino = 1; ino <= kFiles; ++ino) reaper.remove(layout, {ino, 1, 0});
        co_await drained(io, reaper);
        CHECK(reaper.pending() == 0);
        // One request per target to start, then batches of what queued meanwhile.
        CHECK(reaper.requests() >= 2 * kFiles / PFS_CHUNK_UNLINK_MAX);
        CHECK(reaper.requests() < kFiles);
        cluster->close();
    });
    INFO(tc.logs());
    REQUIRE(ok);
    CHECK(chunk_files() == 0);
}

TEST_CASE("files removed one by one within the linger go in one request per target", "[system]") {
    test::TwoTargets t;
    auto& [tc, io, cluster, layout] = t;
    // Long enough that the removals below, a loop turn apart, all fall in it.
    meta::ChunkReaper reaper(io.get_executor(), *cluster, std::chrono::seconds(1));

    bool ok = test::run(io, [&]() -> awaitable<void> {
        bool routed = co_await t.routed();
        REQUIRE(routed);
        for (uint64_t ino = 1; ino <= 10; ++ino) {
            reaper.remove(layout, {ino, 1, 0});
            co_await asio::post(io, asio::use_awaitable);
        }
        CHECK(reaper.requests() == 0);
        co_await drained(io, reaper);
        CHECK(reaper.pending() == 0);
        CHECK(reaper.requests() == 2);
        // The next removal lingers again, on its own.
        reaper.remove(layout, {11, 1, 0});
        co_await drained(io, reaper);
        CHECK(reaper.requests() == 4);
        cluster->close();
    });
    INFO(tc.logs());
    REQUIRE(ok);
}

namespace {

// Chunk files on a storage server's targets.
size_t chunks_on(const TestCluster& tc, const std::string& server) {
    size_t n = 0;
    for (const auto& dir : std::filesystem::directory_iterator(tc.dir())) {
        if (!dir.is_directory() || !dir.path().filename().string().starts_with(server + "-t")) continue;
        for (const auto& e : std::filesystem::recursive_directory_iterator(dir.path()))
            n += e.is_regular_file() && e.path().parent_path().parent_path().filename() == "chunks";
    }
    return n;
}

}  // namespace

TEST_CASE("chunks of files removed while their target was down are deleted when it is back, across restarts",
          "[system]") {
    using namespace std::chrono_literals;
    TestCluster tc;
    tc.start_mgmtd();
    tc.start_meta("m1");
    tc.start_storage("s1", 1);
    tc.start_storage("s2", 1);
    asio::io_context io;
    Cluster cluster(io.get_executor(), tc.mgmtd(), tc.secret(), test::short_timeouts());
    FileSystem fs(cluster, FileSystemOptions{0ms});
    constexpr int kFiles = 100;

    bool ok = test::run(io, [&]() -> awaitable<void> {
        // (No co_await inside an if's expression statement: GCC 12 may
        // destroy that awaitable even when the branch is not taken.)
        const bool ready = co_await test::wait_ready(io, cluster, fs, 2);
        REQUIRE(ready);
        REQUIRE_OK(co_await fs.mkdir("/r"));
        REQUIRE_OK(co_await fs.set_pattern("/r", pfs_pattern{64u << 10, 2, PFS_DEFAULT_POOL_ID, 0, 0}));
        const Bytes data(100u << 10, 0x3c);  // a chunk on each target
        for (int i = 0; i < kFiles; ++i) {
            auto f = co_await fs.open("/r/f" + std::to_string(i), O_CREAT | O_WRONLY);
            REQUIRE_OK(f);
            REQUIRE_OK(co_await fs.write(*f, 0, data));
            REQUIRE_OK(co_await fs.close(*f));
        }
        REQUIRE(chunks_on(tc, "s1") == kFiles);
        REQUIRE(chunks_on(tc, "s2") == kFiles);

        // s2 dies; the files go; then pfs-meta dies and comes back too.
        tc.daemon("s2").kill(SIGKILL);
        for (int i = 0; i < kFiles; ++i) REQUIRE_OK(co_await fs.unlink("/r/f" + std::to_string(i)));
        bool s1_clean = co_await test::eventually(io, 20s, [&]() -> awaitable<bool> { co_return chunks_on(tc, "s1") == 0; });
        CHECK(s1_clean);
        CHECK(chunks_on(tc, "s2") == kFiles);
        tc.daemon("m1").kill(SIGKILL);
        tc.daemon("m1").start();
        tc.daemon("s2").start();
        // Nothing left behind, on the target that was away too.
        bool s2_clean = co_await test::eventually(io, 60s, [&]() -> awaitable<bool> { co_return chunks_on(tc, "s2") == 0; });
        CHECK(s2_clean);
        cluster.close();
    });
    INFO(tc.logs());
    REQUIRE(ok);
}
