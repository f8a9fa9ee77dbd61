// pfs-meta's chunk reaper against real pfs-storage processes: the chunks
// of removed files go in batches (far fewer requests than files), every
// chunk file is gone afterwards; files removed one by one within the linger
// go in one request per target.
#include <catch2/catch.hpp>

#include <filesystem>

#include "chunk_reaper.hpp"
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
