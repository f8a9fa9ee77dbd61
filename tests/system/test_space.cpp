// The space of striped files against a real pfs-storage: CHUNK_FALLOCATE
// (punch and zero across stripes, as pfs-meta sends it for FALLOCATE),
// CHUNK_SEEK mapped back to file offsets, allocation from CHUNK_STAT, and
// CHUNK_COPY between chunk files of one target. CHUNK_FALLOCATE is a
// server's message: a client connection is refused.
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>

#include "striped_io.hpp"
#include "two_targets.hpp"

using namespace pfs;
using namespace pfs::client;

namespace {

constexpr uint64_t KiB = 1024;

Bytes random_bytes(size_t n, uint64_t seed) {
    std::mt19937_64 rng(seed);
    Bytes b(n);
    for (auto& x : b) x = static_cast<uint8_t>(rng());
    return b;
}

bool all_zero(const Bytes& b, size_t from, size_t to) {
    return std::all_of(b.begin() + from, b.begin() + to, [](uint8_t x) { return x == 0; });
}

}  // namespace

TEST_CASE("punch, zero, seek and allocation of a file striped over two targets", "[system]") {
    test::TwoTargets t;
    auto& [tc, io, cluster, layout] = t;
    StripedIo files(*cluster);
    const uint64_t chunk = layout.chunk_size;  // 64 KiB over targets 1, 2
    const pfs_entry_id file{7, 1, 1};
    const Bytes data = random_bytes(10 * chunk, 7);

    bool ok = test::run(io, [&]() -> awaitable<void> {
        bool routed = co_await t.routed();
        REQUIRE(routed);
        REQUIRE_OK(co_await files.write(layout, file, 0, data));
        auto before = co_await files.allocated(layout, file);
        REQUIRE(before);
        CHECK(*before >= data.size());

        // A hole over three stripe boundaries, unaligned at both ends.
        const uint64_t lo = chunk + 100, hi = 4 * chunk + 5000;
        REQUIRE_OK(co_await files.fallocate(layout, file, PFS_FALLOC_PUNCH_HOLE | PFS_FALLOC_KEEP_SIZE, lo, hi - lo));
        Bytes back(data.size());
        REQUIRE_OK(co_await files.read(layout, file, 0, back));
        CHECK(std::equal(data.begin(), data.begin() + lo, back.begin()));
        CHECK(all_zero(back, lo, hi));
        CHECK(std::equal(data.begin() + hi, data.end(), back.begin() + hi));
        auto after = co_await files.allocated(layout, file);
        REQUIRE(after);
        CHECK(*after <= *before - 2 * chunk);

        // Data and holes in file offsets: whole blocks of the hole only.
        auto hole = co_await files.seek(layout, file, PFS_SEEK_HOLE, 0);
        REQUIRE(hole);
        CHECK(**hole == (lo + 4095) / 4096 * 4096);
        auto next = co_await files.seek(layout, file, PFS_SEEK_DATA, **hole);
        REQUIRE(next);
        CHECK(**next == hi / 4096 * 4096);
        auto end = co_await files.seek(layout, file, PFS_SEEK_HOLE, hi);
        REQUIRE(end);
        CHECK(**end == data.size());
        auto none = co_await files.seek(layout, file, PFS_SEEK_DATA, data.size());
        REQUIRE(none);
        CHECK_FALSE(none->has_value());

        // ZERO_RANGE over the rest of the second half.
        REQUIRE_OK(co_await files.fallocate(layout, file, PFS_FALLOC_ZERO_RANGE | PFS_FALLOC_KEEP_SIZE,
                                            6 * chunk + 1, 3 * chunk));
        REQUIRE_OK(co_await files.read(layout, file, 0, back));
        CHECK(all_zero(back, 6 * chunk + 1, 9 * chunk + 1));
        CHECK(std::equal(data.begin() + 9 * chunk + 1, data.end(), back.begin() + 9 * chunk + 1));

        // A copy between two files' chunks on target 1, done there.
        const pfs_entry_id copy{8, 1, 1};
        pfs_chunk_copy m{{file, 1}, copy, 0, 5 * KiB, static_cast<uint32_t>(chunk)};
        auto copied = co_await cluster->call_target_ok(1, PFS_MSG_CHUNK_COPY, encode(pfs_x_chunk_copy, m));
        REQUIRE(copied);
        Bytes head(chunk);
        const StripeLayout one{layout.chunk_size, layout.pool_id, {1}};
        REQUIRE_OK(co_await files.read(one, copy, 5 * KiB, head));
        CHECK(std::equal(data.begin(), data.begin() + chunk, head.begin()));
        cluster->close();
    });
    CHECK(ok);
}

// No ';' in the name: ctest's test discovery would cut it in two.
TEST_CASE("clients may not send CHUNK_FALLOCATE, they ask pfs-meta", "[system]") {
    test::TwoTargets t;
    auto& [tc, io, cluster, layout] = t;
    client::Cluster as_client(io.get_executor(), tc.mgmtd(), tc.secret(), ClientConfig{});
    bool ok = test::run(io, [&]() -> awaitable<void> {
        bool routed = co_await t.routed();
        REQUIRE(routed);
        bool client_routed = co_await test::wait_routes(io, as_client, layout.targets);
        REQUIRE(client_routed);
        pfs_chunk_falloc m{{{9, 1, 1}, 1}, PFS_FALLOC_PUNCH_HOLE | PFS_FALLOC_KEEP_SIZE, 0, 4096};
        auto r = co_await as_client.call_target_ok(1, PFS_MSG_CHUNK_FALLOCATE, encode(pfs_x_chunk_falloc, m));
        REQUIRE_FALSE(r);
        CHECK(r.error().code == -EPERM);
        as_client.close();
        cluster->close();
    });
    CHECK(ok);
}
