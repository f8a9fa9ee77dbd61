// The chunk store of one target over a real directory: layout on disk,
// byte-exact round trips, holes, truncation, stat, sync, idempotent unlink,
// the bounded descriptor cache, registered buffers, and a full disk.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <random>
#include <set>

#include "chunk_store.hpp"
#include "coro_test.hpp"
#include "temp_dir.hpp"

using namespace pfs;
using namespace std::chrono_literals;

namespace {

constexpr uint64_t kBeyond4G = (5ull << 30) + 7;

Bytes random_bytes(size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    Bytes out(n);
    for (auto& b : out) b = static_cast<uint8_t>(rng());
    return out;
}

pfs_entry_id entry(uint64_t ino, uint32_t owner = 1, uint32_t generation = 0) {
    return pfs_entry_id{ino, owner, generation};
}

std::unique_ptr<Uring> make_ring() {
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
        test::run_coro(io, std::forward<F>(body));
    }

    std::filesystem::path file_of(const pfs_entry_id& id) const {
        return dir.path() / ChunkStore::chunk_path(id);
    }

    test::TempDir dir;
    asio::io_context io;
    std::unique_ptr<Uring> ring;
    std::unique_ptr<ChunkStore> store;
};

}  // namespace

TEST_CASE("chunks: path layout", "[chunks]") {
    CHECK(ChunkStore::chunk_path(entry(0xabc, 2, 0x10)).ends_with("/abc-2-10"));
    CHECK(ChunkStore::chunk_path(entry(~0ull, ~0u, ~0u)).ends_with("/ffffffffffffffff-ffffffff-ffffffff"));
    const std::string p = ChunkStore::chunk_path(entry(1));
    REQUIRE(p.size() > 10);
    CHECK(p.substr(0, 7) == "chunks/");
    CHECK(p[9] == '/');
    // The fan-out is a fixed function of the id (an on-disk format): stable, and spread.
    CHECK(ChunkStore::chunk_path(entry(1)) == p);
    std::set<std::string> dirs;
    for (uint64_t ino = 1; ino <= 2000; ++ino) dirs.insert(ChunkStore::chunk_path(entry(ino)).substr(0, 9));
    CHECK(dirs.size() > 200);
}

TEST_CASE("chunks: write and read back byte-identical", "[chunks]") {
    Fixture f;
    const auto sizes = std::vector<size_t>{0, 1, 4095, 1u << 20, PFS_MAX_IO};
    const auto offsets = std::vector<uint64_t>{0, 12345, kBeyond4G};
    f.run([&]() -> awaitable<void> {
        uint64_t ino = 100;
        for (size_t size : sizes) {
            for (uint64_t offset : offsets) {
                INFO("size " << size << " offset " << offset);
                const auto id = entry(ino++);
                const Bytes data = random_bytes(size, static_cast<uint32_t>(ino));
                auto w = co_await f.store->write(id, offset, data);
                REQUIRE(w);
                CHECK(*w == size);
                auto r = co_await f.store->read(id, offset, static_cast<uint32_t>(size));
                REQUIRE(r);
                CHECK(*r == data);
                // Asking for more gives what is there: short at the end.
                r = co_await f.store->read(id, offset, static_cast<uint32_t>(size + 100));
                REQUIRE(r);
                CHECK(*r == data);
            }
        }
    });
    CHECK(std::filesystem::is_regular_file(f.file_of(entry(100))));
    CHECK((std::filesystem::status(f.file_of(entry(101))).permissions() & std::filesystem::perms::all) ==
          (std::filesystem::perms::owner_read | std::filesystem::perms::owner_write));
}

TEST_CASE("chunks: never written chunks and holes read as empty or zeros", "[chunks]") {
    Fixture f;
    f.run([&]() -> awaitable<void> {
        auto r = co_await f.store->read(entry(1), 0, 4096);
        REQUIRE(r);
        CHECK(r->empty());
        CO_REQUIRE_OK(co_await f.store->write(entry(2), 1000, random_bytes(10, 1)));
        r = co_await f.store->read(entry(2), 0, 100);
        REQUIRE(r);
        CHECK(*r == Bytes(100, 0));
        r = co_await f.store->read(entry(2), 5000, 100);  // past the end
        REQUIRE(r);
        CHECK(r->empty());
        auto s = co_await f.store->stat(entry(1));
        REQUIRE(s);
        CHECK(s->size == 0);
        CHECK(s->allocated == 0);
    });
    CHECK_FALSE(std::filesystem::exists(f.file_of(entry(1))));
}

TEST_CASE("chunks: truncate down and up, stat of sparse chunks", "[chunks]") {
    Fixture f;
    const auto id = entry(7, 3, 9);
    const Bytes data = random_bytes(1u << 20, 7);
    f.run([&]() -> awaitable<void> {
        CO_REQUIRE_OK(co_await f.store->write(id, 0, data));
        auto s = co_await f.store->stat(id);
        REQUIRE(s);
        CHECK(s->size == data.size());
        CHECK(s->allocated >= data.size() / 2);  // written data takes space

        CO_REQUIRE_OK(co_await f.store->truncate(id, 10ull << 30));
        s = co_await f.store->stat(id);
        REQUIRE(s);
        CHECK(s->size == (10ull << 30));
        CHECK(s->allocated < (64u << 20));  // the extension is a hole

        CO_REQUIRE_OK(co_await f.store->truncate(id, 100));
        auto r = co_await f.store->read(id, 0, 1000);
        REQUIRE(r);
        CHECK(*r == Bytes(data.begin(), data.begin() + 100));
        s = co_await f.store->stat(id);
        REQUIRE(s);
        CHECK(s->size == 100);

        // A missing chunk: truncating to 0 creates nothing, to more makes a hole.
        CO_REQUIRE_OK(co_await f.store->truncate(entry(8), 0));
        CO_REQUIRE_OK(co_await f.store->truncate(entry(9), 5000));
        s = co_await f.store->stat(entry(9));
        REQUIRE(s);
        CHECK(s->size == 5000);
        CHECK(s->allocated < 5000);
    });
    CHECK_FALSE(std::filesystem::exists(f.file_of(entry(8))));
    CHECK(std::filesystem::file_size(f.file_of(entry(9))) == 5000);
}

TEST_CASE("chunks: sync and unlink are idempotent", "[chunks]") {
    Fixture f;
    const auto id = entry(11);
    f.run([&]() -> awaitable<void> {
        CO_REQUIRE_OK(co_await f.store->sync(id));  // missing: nothing to do
        CO_REQUIRE_OK(co_await f.store->write(id, 0, random_bytes(100, 11)));
        CO_REQUIRE_OK(co_await f.store->sync(id));
        CO_REQUIRE_OK(co_await f.store->unlink(id));
        auto r = co_await f.store->read(id, 0, 100);
        REQUIRE(r);
        CHECK(r->empty());
        CO_REQUIRE_OK(co_await f.store->unlink(id));  // a retried unlink succeeds
        CO_REQUIRE_OK(co_await f.store->unlink(entry(12)));
        // Written again after the unlink: a fresh file, not the cached old one.
        const Bytes b = random_bytes(1, 12);
        CO_REQUIRE_OK(co_await f.store->write(id, 1, b));
        r = co_await f.store->read(id, 0, 100);
        REQUIRE(r);
        REQUIRE(r->size() == 2);
        CHECK((*r)[0] == 0);
        CHECK((*r)[1] == b[0]);
    });
    CHECK(std::filesystem::file_size(f.file_of(id)) == 2);
}

TEST_CASE("chunks: open descriptors are bounded", "[chunks]") {
    ChunkStoreOptions options;
    options.max_open_files = 4;
    Fixture f(options);
    f.run([&]() -> awaitable<void> {
        for (uint64_t ino = 1; ino <= 20; ++ino) {
            const Bytes data = random_bytes(64, static_cast<uint32_t>(ino));
            CO_REQUIRE_OK(co_await f.store->write(entry(ino), 0, data));
            CHECK(f.store->open_files() <= 4);
        }
        for (uint64_t ino = 1; ino <= 20; ++ino) {
            auto r = co_await f.store->read(entry(ino), 0, 64);
            REQUIRE(r);
            CHECK(*r == random_bytes(64, static_cast<uint32_t>(ino)));
        }
        CHECK(f.store->open_files() == 4);
    });
}

TEST_CASE("chunks: the LRU cache evicts the least recently used", "[chunks]") {
    OpenFileCache cache(2);
    auto a = std::make_shared<UniqueFd>();
    auto b = std::make_shared<UniqueFd>();
    auto c = std::make_shared<UniqueFd>();
    cache.put(entry(1), a);
    cache.put(entry(2), b);
    CHECK(cache.get(entry(1)) == a);  // 2 is now the oldest
    cache.put(entry(3), c);
    CHECK(cache.size() == 2);
    CHECK(cache.get(entry(2)) == nullptr);
    CHECK(cache.get(entry(1)) == a);
    CHECK(cache.get(entry(3)) == c);
    cache.erase(entry(1));
    CHECK(cache.get(entry(1)) == nullptr);
    CHECK(cache.get(entry(1, 2)) == nullptr);  // the owner is part of the key
}

TEST_CASE("chunks: I/O through registered buffers", "[chunks]") {
    Fixture f;
    auto pool = BufferPool::create(2, 64u << 10);
    REQUIRE(pool);
    auto st = f.ring->register_buffers(*pool);
    if (!st) FAIL("cannot register buffers: " << st.error().message);
    const auto sizes = std::vector<size_t>{1, 4095, 64u << 10, (64u << 10) + 1};  // the last one: plain I/O
    f.run([&]() -> awaitable<void> {
        for (size_t size : sizes) {
            const auto id = entry(size);
            const Bytes data = random_bytes(size, static_cast<uint32_t>(size));
            CO_REQUIRE_OK(co_await f.store->write(id, kBeyond4G, data));
            auto r = co_await f.store->read(id, kBeyond4G, static_cast<uint32_t>(size));
            REQUIRE(r);
            CHECK(*r == data);
        }
    });
    CHECK((*pool)->available() == 2);
}

// A full file system without mount privileges: the chunk file is a symlink
// to /dev/full, whose writes fail with ENOSPC as a full disk's do.
TEST_CASE("chunks: a full disk reports ENOSPC and the store keeps serving", "[chunks]") {
    struct stat devfull {};
    if (::stat("/dev/full", &devfull) != 0 || !S_ISCHR(devfull.st_mode) || ::access("/dev/full", W_OK) != 0) {
        WARN("skipped: no writable /dev/full to stand in for a full disk");
        return;
    }
    Fixture f;
    const auto full = entry(21);
    const auto fine = entry(22);
    std::filesystem::create_directories(f.file_of(full).parent_path());
    std::filesystem::create_symlink("/dev/full", f.file_of(full));
    const Bytes data = random_bytes(8192, 21);
    f.run([&]() -> awaitable<void> {
        CO_REQUIRE_OK(co_await f.store->write(fine, 0, data));
        auto w = co_await f.store->write(full, 0, data);
        REQUIRE_FALSE(w);
        CHECK(w.error().code == -ENOSPC);
        CHECK(w.error().message.find("No space left") != std::string::npos);
        // Reads (and writes elsewhere) go on.
        auto r = co_await f.store->read(fine, 0, 8192);
        REQUIRE(r);
        CHECK(*r == data);
        CO_REQUIRE_OK(co_await f.store->write(fine, 8192, data));
    });
}

TEST_CASE("chunks: a missing target directory is an error", "[chunks]") {
    test::TempDir dir;
    auto ring = make_ring();
    auto store = ChunkStore::open(*ring, dir.path() / "nope");
    REQUIRE_FALSE(store);
    CHECK(store.error().code == -ENOENT);
    CHECK(store.error().message.find("nope") != std::string::npos);
}
