// The chunk store's space operations on a real directory: fallocate
// (allocate, KEEP_SIZE, punch, zero), SEEK_DATA / SEEK_HOLE and copies
// between chunk files, with and without O_DIRECT.
#include <catch2/catch.hpp>

#include <algorithm>

#include "chunk_store_fixture.hpp"

using namespace pfs;
using namespace pfs::test;

namespace {

constexpr uint64_t KiB = 1024;
constexpr uint64_t MiB = 1024 * KiB;

}  // namespace

TEST_CASE("chunk space: allocate, keep size, punch and zero", "[chunks]") {
    const bool direct = GENERATE(false, true);
    INFO("direct-io " << direct);
    Fixture f(with_direct_io(direct));
    const auto id = entry(21);
    const Bytes data = random_bytes(1 * MiB, 21);
    f.run([&]() -> awaitable<void> {
        // Allocating creates the chunk and takes space, KEEP_SIZE or not.
        CO_REQUIRE_OK(co_await f.store->fallocate(entry(22), PFS_FALLOC_KEEP_SIZE, 0, 2 * MiB));
        auto s = co_await f.store->stat(entry(22));
        REQUIRE(s);
        CHECK(s->size == 0);
        CHECK(s->allocated >= 2 * MiB);
        CO_REQUIRE_OK(co_await f.store->fallocate(entry(23), 0, 1 * MiB, 1 * MiB));
        s = co_await f.store->stat(entry(23));
        REQUIRE(s);
        CHECK(s->size == 2 * MiB);

        CO_REQUIRE_OK(co_await f.store->write(id, 0, data));
        s = co_await f.store->stat(id);
        REQUIRE(s);
        const uint64_t before = s->allocated;
        CO_REQUIRE_OK(co_await f.store->fallocate(id, PFS_FALLOC_PUNCH_HOLE | PFS_FALLOC_KEEP_SIZE, 64 * KiB,
                                                  512 * KiB));
        CO_REQUIRE_OK(co_await f.store->fallocate(id, PFS_FALLOC_ZERO_RANGE | PFS_FALLOC_KEEP_SIZE, 768 * KiB + 5,
                                                  100 * KiB));
        auto r = co_await f.store->read(id, 0, static_cast<uint32_t>(data.size()));
        REQUIRE(r);
        Bytes want = data;
        std::fill(want.begin() + 64 * KiB, want.begin() + 576 * KiB, 0);
        std::fill(want.begin() + 768 * KiB + 5, want.begin() + 868 * KiB + 5, 0);
        CHECK(*r == want);
        s = co_await f.store->stat(id);
        REQUIRE(s);
        CHECK(s->size == data.size());
        CHECK(s->allocated <= before - 512 * KiB);

        // Punching a chunk never written creates nothing; unknown modes fail.
        CO_REQUIRE_OK(co_await f.store->fallocate(entry(24), PFS_FALLOC_PUNCH_HOLE | PFS_FALLOC_KEEP_SIZE, 0, MiB));
        auto bad = co_await f.store->fallocate(id, 0x08 /* COLLAPSE_RANGE */, 0, 64 * KiB);
        CHECK(!bad);
    });
    CHECK_FALSE(std::filesystem::exists(f.file_of(entry(24))));
}

TEST_CASE("chunk space: SEEK_DATA and SEEK_HOLE", "[chunks]") {
    Fixture f;
    const auto id = entry(31);
    f.run([&]() -> awaitable<void> {
        CO_REQUIRE_OK(co_await f.store->write(id, 1 * MiB, random_bytes(64 * KiB, 31)));
        auto at = co_await f.store->seek(id, PFS_SEEK_DATA, 0);
        REQUIRE(at);
        CHECK(*at == std::optional<uint64_t>(1 * MiB));
        at = co_await f.store->seek(id, PFS_SEEK_HOLE, 1 * MiB);
        REQUIRE(at);
        CHECK(*at == std::optional<uint64_t>(1 * MiB + 64 * KiB));
        at = co_await f.store->seek(id, PFS_SEEK_HOLE, 0);
        REQUIRE(at);
        CHECK(*at == std::optional<uint64_t>(0));
        // Past the end: no data; the end itself is a hole.
        at = co_await f.store->seek(id, PFS_SEEK_DATA, 2 * MiB);
        REQUIRE(at);
        CHECK_FALSE(at->has_value());
        at = co_await f.store->seek(id, PFS_SEEK_HOLE, 2 * MiB);
        REQUIRE(at);
        CHECK(*at == std::optional<uint64_t>(2 * MiB));
        // A missing chunk is all hole.
        at = co_await f.store->seek(entry(32), PFS_SEEK_DATA, 0);
        REQUIRE(at);
        CHECK_FALSE(at->has_value());
        at = co_await f.store->seek(entry(32), PFS_SEEK_HOLE, 12345);
        REQUIRE(at);
        CHECK(*at == std::optional<uint64_t>(12345));
    });
}

TEST_CASE("chunk space: copies between chunk files, holes past the source's end", "[chunks]") {
    const bool direct = GENERATE(false, true);
    INFO("direct-io " << direct);
    Fixture f(with_direct_io(direct));
    const auto src = entry(41), dst = entry(42);
    const Bytes data = random_bytes(300 * KiB, 41);
    const Bytes old = random_bytes(600 * KiB, 42);
    f.run([&]() -> awaitable<void> {
        CO_REQUIRE_OK(co_await f.store->write(src, 0, data));
        CO_REQUIRE_OK(co_await f.store->write(dst, 0, old));
        auto pair = co_await f.store->copy_pair(src, dst);
        REQUIRE(pair);
        // 200 KiB of data, then 100 KiB past the source's end.
        CO_REQUIRE_OK(ChunkStore::copy(*pair, 100 * KiB + 3, 50 * KiB, 300 * KiB));
        auto r = co_await f.store->read(dst, 0, static_cast<uint32_t>(old.size()));
        REQUIRE(r);
        Bytes want = old;
        std::copy(data.begin() + 100 * KiB + 3, data.end(), want.begin() + 50 * KiB);
        const size_t copied = data.size() - (100 * KiB + 3);
        std::fill(want.begin() + 50 * KiB + copied, want.begin() + 350 * KiB, 0);
        CHECK(*r == want);

        // From a chunk never written: the destination range becomes a hole.
        auto none = co_await f.store->copy_pair(entry(43), dst);
        REQUIRE(none);
        CO_REQUIRE_OK(ChunkStore::copy(*none, 0, 0, 40 * KiB));
        r = co_await f.store->read(dst, 0, 40 * KiB);
        REQUIRE(r);
        CHECK(*r == Bytes(40 * KiB, 0));
    });
}
