// A chunk store of one target over a temporary directory, with a ring and
// a loop to run coroutines in: shared by the chunk store's unit tests.
#pragma once

#include <catch2/catch.hpp>

#include <filesystem>
#include <memory>
#include <random>

#include "chunk_store.hpp"
#include "coro_test.hpp"
#include "temp_dir.hpp"

namespace pfs::test {

inline constexpr uint64_t kBeyond4G = (5ull << 30) + 7;

inline Bytes random_bytes(size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    Bytes out(n);
    for (auto& b : out) b = static_cast<uint8_t>(rng());
    return out;
}

inline pfs_entry_id entry(uint64_t ino, uint32_t owner = 1, uint32_t generation = 0) {
    return pfs_entry_id{ino, owner, generation};
}

inline ChunkStoreOptions with_direct_io(bool direct) {
    ChunkStoreOptions options;
    options.direct_io = direct;
    return options;
}

inline std::unique_ptr<Uring> make_ring() {
    auto ring = Uring::create();
    if (!ring) FAIL(ring.error().message);
    return std::move(*ring);
}

// A target directory, a ring and the store over them, with a loop to run in.
struct Fixture {
    explicit Fixture(ChunkStoreOptions options = {}) : ring(make_ring()) {
        auto opened = ChunkStore::open(*ring, dir.path(), options);
        if (!opened) FAIL(opened.error().message);
        store = std::move(*opened);
    }

    template <class F>
    void run(F&& body) {
        run_coro(io, std::forward<F>(body));
    }

    std::filesystem::path file_of(const pfs_entry_id& id) const {
        return dir.path() / ChunkStore::chunk_path(id);
    }

    // count registered buffers of 64 KiB for the store's I/O.
    std::shared_ptr<BufferPool> register_pool(size_t count) {
        auto pool = BufferPool::create(count, 64u << 10);
        if (!pool) FAIL(pool.error().message);
        auto st = ring->register_buffers(*pool);
        if (!st) FAIL("cannot register buffers: " << st.error().message);
        return *pool;
    }

    TempDir dir;
    asio::io_context io;
    std::unique_ptr<Uring> ring;
    std::unique_ptr<ChunkStore> store;
};

}  // namespace pfs::test
