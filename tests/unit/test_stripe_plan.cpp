#include <catch2/catch.hpp>

#include <random>

#include "stripe_plan.hpp"

using namespace pfs::client;

namespace {

StripeLayout layout(uint32_t chunk, uint32_t n) {
    StripeLayout l;
    l.chunk_size = chunk;
    for (uint32_t i = 0; i < n; ++i) l.targets.push_back(100 + i);
    return l;
}

// Byte-by-byte reference: where does each byte of the file live?
std::pair<uint32_t, uint64_t> locate(const StripeLayout& l, uint64_t off) {
    uint64_t stripe = off / l.chunk_size;
    auto n = l.targets.size();
    return {static_cast<uint32_t>(stripe % n), (stripe / n) * l.chunk_size + off % l.chunk_size};
}

}  // namespace

TEST_CASE("plan_io covers a range exactly, piece by piece where the bytes live", "[libpfs]") {
    std::mt19937_64 rng(42);
    for (int round = 0; round < 300; ++round) {
        auto l = layout(64u << 10 << (rng() % 4), 1 + rng() % 6);
        uint64_t offset = rng() % (1ull << 34);
        uint64_t length = rng() % (3u << 20);
        uint32_t max_piece = (rng() % 2) ? 1u << 20 : 48u << 10;
        auto pieces = plan_io(l, offset, length, max_piece);
        uint64_t covered = offset;
        for (const auto& p : pieces) {
            REQUIRE(p.file_offset == covered);
            REQUIRE(p.length > 0);
            REQUIRE(p.length <= max_piece);
            // First and last byte of the piece live where the piece says.
            for (uint64_t b : {p.file_offset, p.file_offset + p.length - 1}) {
                auto [target, chunk_off] = locate(l, b);
                REQUIRE(target == p.target_index);
                REQUIRE(chunk_off == p.chunk_offset + (b - p.file_offset));
            }
            covered += p.length;
        }
        REQUIRE(covered == offset + length);
    }
}

TEST_CASE("plan_io keeps pieces within one chunk and merges on a single target", "[libpfs]") {
    auto l = layout(64u << 10, 4);
    auto pieces = plan_io(l, 0, 256u << 10, 1u << 20);
    REQUIRE(pieces.size() == 4);
    for (uint32_t i = 0; i < 4; ++i) {
        CHECK(pieces[i].target_index == i);
        CHECK(pieces[i].chunk_offset == 0);
        CHECK(pieces[i].length == 64u << 10);
    }
    auto single = plan_io(layout(64u << 10, 1), 10, (1u << 20) + 10, 1u << 20);
    REQUIRE(single.size() == 2);  // split only by max_piece
    CHECK(single[0].length == 1u << 20);
    CHECK(single[1].length == 10);
    CHECK(plan_io(l, 5, 0, 1u << 20).empty());
}

TEST_CASE("target sizes add up to the file size", "[libpfs]") {
    auto l = layout(64u << 10, 3);
    for (uint64_t size : {0ull, 1ull, 65535ull, 65536ull, 65537ull, 200000ull, 5ull << 30}) {
        auto sizes = target_sizes(l, size);
        uint64_t sum = 0;
        for (auto s : sizes) sum += s;
        CHECK(sum == size);
    }
    CHECK(target_sizes(l, 65537) == std::vector<uint64_t>{65536, 1, 0});
}

TEST_CASE("layouts are validated", "[libpfs]") {
    CHECK(check_layout(layout(64u << 10, 1)));
    CHECK_FALSE(check_layout(layout(1000, 2)));
    CHECK_FALSE(check_layout(layout(64u << 10, 0)));
    CHECK_FALSE(check_layout(layout(1u << 31, 2)));
}

TEST_CASE("a file range is one chunk file range per target, and maps back", "[libpfs]") {
    std::mt19937_64 rng(7);
    for (int round = 0; round < 200; ++round) {
        auto l = layout(64u << 10 << (rng() % 3), 1 + rng() % 5);
        const auto n = static_cast<uint32_t>(l.targets.size());
        const uint64_t span = uint64_t{l.chunk_size} * n * 4;
        const uint64_t start = rng() % span, length = 1 + rng() % span;
        // Reference: every byte of the range, on its target.
        std::vector<uint64_t> lo(n, UINT64_MAX), hi(n, 0), count(n, 0);
        for (uint64_t off = start; off < start + length; ++off) {
            auto [t, c] = locate(l, off);
            lo[t] = std::min(lo[t], c);
            hi[t] = std::max(hi[t], c + 1);
            ++count[t];
            REQUIRE(pfs_stripe_file_offset(l.chunk_size, n, t, c) == off);
        }
        auto ranges = chunk_ranges(l, start, length);
        uint64_t total = 0;
        for (const auto& r : ranges) {
            INFO("target " << r.target_index << " chunk " << l.chunk_size << " targets " << n);
            CHECK(r.offset == lo[r.target_index]);
            CHECK(r.offset + r.length == hi[r.target_index]);
            CHECK(r.length == count[r.target_index]);  // contiguous in the chunk file
            total += r.length;
        }
        CHECK(total == length);
        // The chunk file's end for a file of a size is where its range from 0 ends.
        for (uint32_t t = 0; t < n; ++t)
            CHECK(pfs_stripe_target_from(l.chunk_size, n, t, start + length) ==
                  pfs_stripe_target_size(l.chunk_size, n, t, start + length));
    }
}
