// The chunk store of one target over a real directory: layout on disk,
// byte-exact round trips, holes, truncation, stat, sync, idempotent unlink,
// the bounded descriptor cache, registered buffers, and a full disk; the
// I/O cases run with and without O_DIRECT (direct-io). Then O_DIRECT's own
// cases (unaligned writes beside aligned ones, file systems without it) and
// the paged listing of a target's chunks (fsck).
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <set>

#include "chunk_store_fixture.hpp"

using namespace pfs;
using namespace pfs::test;
using namespace std::chrono_literals;

TEST_CASE("chunks: the direct-io option's values", "[chunks]") {
    ChunkStoreOptions o;
    REQUIRE(parse_direct_io("auto", "direct-io", o).ok());
    CHECK((o.direct_io && o.direct_io_optional));
    for (const char* yes : {"true", "yes", "on", "1"}) {
        INFO(yes);
        REQUIRE(parse_direct_io(yes, "direct-io", o).ok());
        CHECK((o.direct_io && !o.direct_io_optional));
    }
    for (const char* no : {"false", "no", "off", "0"}) {
        INFO(no);
        REQUIRE(parse_direct_io("auto", "direct-io", o).ok());
        REQUIRE(parse_direct_io(no, "direct-io", o).ok());
        CHECK((!o.direct_io && !o.direct_io_optional));
    }
    const ChunkStoreOptions before = o;
    auto bad = parse_direct_io("sometimes", "inline-direct-io", o);
    REQUIRE(!bad.ok());
    CHECK(bad.error().code == -EINVAL);
    CHECK(bad.error().message == "--inline-direct-io: auto, true or false, not 'sometimes'");
    CHECK((o.direct_io == before.direct_io && o.direct_io_optional == before.direct_io_optional));
}

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
    const bool direct = GENERATE(false, true);
    INFO("direct-io " << direct);
    Fixture f(with_direct_io(direct));
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
    const bool direct = GENERATE(false, true);
    INFO("direct-io " << direct);
    Fixture f(with_direct_io(direct));
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

TEST_CASE("chunks: truncate cuts and never grows or creates, stat of sparse chunks", "[chunks]") {
    const bool direct = GENERATE(false, true);
    INFO("direct-io " << direct);
    Fixture f(with_direct_io(direct));
    const auto id = entry(7, 3, 9);
    const Bytes data = random_bytes(1u << 20, 7);
    f.run([&]() -> awaitable<void> {
        CO_REQUIRE_OK(co_await f.store->write(id, 0, data));
        auto s = co_await f.store->stat(id);
        REQUIRE(s);
        CHECK(s->size == data.size());
        CHECK(s->allocated >= data.size() / 2);  // written data takes space

        // Past the end: nothing to cut (the file's size is the metadata
        // server's business; reads past a chunk's end are zeros).
        CO_REQUIRE_OK(co_await f.store->truncate(id, 10ull << 30));
        s = co_await f.store->stat(id);
        REQUIRE(s);
        CHECK(s->size == data.size());

        CO_REQUIRE_OK(co_await f.store->truncate(id, 100));
        auto r = co_await f.store->read(id, 0, 1000);
        REQUIRE(r);
        CHECK(*r == Bytes(data.begin(), data.begin() + 100));
        s = co_await f.store->stat(id);
        REQUIRE(s);
        CHECK(s->size == 100);

        // A sparse chunk: written far out, little allocated.
        const Bytes one(1, 1);
        CO_REQUIRE_OK(co_await f.store->write(entry(9), (10ull << 30) - 1, one));
        s = co_await f.store->stat(entry(9));
        REQUIRE(s);
        CHECK(s->size == (10ull << 30));
        CHECK(s->allocated < (64u << 20));

        // A missing chunk: nothing to cut, nothing created.
        CO_REQUIRE_OK(co_await f.store->truncate(entry(8), 0));
        CO_REQUIRE_OK(co_await f.store->truncate(entry(8), 5000));
    });
    CHECK_FALSE(std::filesystem::exists(f.file_of(entry(8))));
}

TEST_CASE("chunks: sync and unlink are idempotent", "[chunks]") {
    const bool direct = GENERATE(false, true);
    INFO("direct-io " << direct);
    Fixture f(with_direct_io(direct));
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
    ChunkStoreOptions options = with_direct_io(GENERATE(false, true));
    INFO("direct-io " << options.direct_io);
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
    auto a = std::make_shared<ChunkFile>();
    auto b = std::make_shared<ChunkFile>();
    auto c = std::make_shared<ChunkFile>();
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
    const bool direct = GENERATE(false, true);
    INFO("direct-io " << direct);
    Fixture f(with_direct_io(direct));
    auto pool = f.register_pool(2);
    // The last one: plain I/O (without O_DIRECT), an aligned heap buffer (with).
    const auto sizes = std::vector<size_t>{1, 4095, 4096, 64u << 10, (64u << 10) + 1, 128u << 10};
    f.run([&]() -> awaitable<void> {
        for (size_t size : sizes) {
            const auto id = entry(size);
            const Bytes data = random_bytes(size, static_cast<uint32_t>(size));
            const uint64_t at = kBeyond4G & ~uint64_t{4095};  // aligned: O_DIRECT's own path
            CO_REQUIRE_OK(co_await f.store->write(id, at, data));
            auto r = co_await f.store->read(id, at, static_cast<uint32_t>(size));
            REQUIRE(r);
            CHECK(*r == data);
        }
    });
    CHECK(pool->available() == 2);
}

TEST_CASE("chunks: read data keeps its buffer until released, later reads use others", "[chunks]") {
    const bool direct = GENERATE(false, true);
    INFO("direct-io " << direct);
    Fixture f(with_direct_io(direct));
    auto pool = f.register_pool(2);
    f.run([&]() -> awaitable<void> {
        std::vector<Bytes> data;
        std::vector<SharedBytes> held;
        // Three reads held at once: two in the pool's buffers, the third
        // in one of its own; none may see another's bytes.
        for (uint32_t i = 0; i < 3; ++i) {
            data.push_back(random_bytes(8192, 100 + i));
            CO_REQUIRE_OK(co_await f.store->write(entry(200 + i), 0, data.back()));
            auto r = co_await f.store->read(entry(200 + i), 0, 8192);
            REQUIRE(r);
            held.push_back(std::move(*r));
        }
        CHECK(pool->available() == 0);
        for (uint32_t i = 0; i < 3; ++i) CHECK(held[i] == data[i]);
        held.clear();
        CHECK(pool->available() == 2);
    });
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

TEST_CASE("chunks: the fan-out directories are there from the start, and made again if removed", "[chunks]") {
    Fixture f;
    const auto root = f.file_of(entry(1)).parent_path().parent_path();
    size_t dirs = 0;
    for (const auto& e : std::filesystem::directory_iterator(root)) dirs += e.is_directory();
    CHECK(dirs == 256);
    const auto id = entry(5);
    std::filesystem::remove(f.file_of(id).parent_path());
    const Bytes data = random_bytes(4096, 5);
    f.run([&]() -> awaitable<void> {
        CO_REQUIRE_OK(co_await f.store->write(id, 0, data));
        auto back = co_await f.store->read(id, 0, 4096);
        REQUIRE(back);
        CHECK(*back == data);
    });
    CHECK(std::filesystem::is_regular_file(f.file_of(id)));
}

TEST_CASE("chunks: a missing target directory is an error", "[chunks]") {
    test::TempDir dir;
    auto ring = make_ring();
    auto store = ChunkStore::open(*ring, dir.path() / "nope");
    REQUIRE_FALSE(store);
    CHECK(store.error().code == -ENOENT);
    CHECK(store.error().message.find("nope") != std::string::npos);
}

// ---- O_DIRECT ----------------------------------------------------------------

namespace {

// The open flags of this process's descriptors of `file` (from /proc/self/fdinfo).
std::vector<int> open_flags_of(const std::filesystem::path& file) {
    std::vector<int> out;
    for (const auto& fd : std::filesystem::directory_iterator("/proc/self/fd")) {
        std::error_code ec;
        if (std::filesystem::read_symlink(fd.path(), ec) != file) continue;
        std::ifstream info("/proc/self/fdinfo/" + fd.path().filename().string());
        std::string key, value;
        while (info >> key >> value)
            if (key == "flags:") out.push_back(static_cast<int>(std::stol(value, nullptr, 8)));
    }
    return out;
}

}  // namespace

TEST_CASE("chunks: direct-io opens chunk files with O_DIRECT, and only then", "[chunks]") {
    const bool direct = GENERATE(false, true);
    Fixture f(with_direct_io(direct));
    const auto id = entry(31);
    f.run([&]() -> awaitable<void> {
        CO_REQUIRE_OK(co_await f.store->write(id, 0, random_bytes(8192, 31)));
    });
    auto flags = open_flags_of(f.file_of(id));
    REQUIRE(flags.size() == 1);  // aligned I/O only: no buffered descriptor yet
    CHECK(((flags[0] & O_DIRECT) != 0) == direct);
}

// Writes of every alignment, many at once on disjoint ranges, against a
// model of the file: unaligned ones share blocks with aligned neighbours,
// so the buffered and the O_DIRECT descriptor must stay coherent.
TEST_CASE("chunks: direct-io keeps unaligned and aligned writes byte-exact", "[chunks]") {
    Fixture f(with_direct_io(true));
    const auto id = entry(41);
    constexpr size_t kRegion = 3u << 20;
    std::mt19937 rng(41);
    Bytes model;
    f.run([&]() -> awaitable<void> {
        for (int round = 0; round < 12; ++round) {
            // Disjoint ranges in random order: concurrent writes must not overlap.
            std::vector<std::pair<uint64_t, Bytes>> writes;
            uint64_t at = rng() % 5000;
            while (at < kRegion) {
                const bool aligned = rng() % 2 == 0;
                size_t len = aligned ? 4096 * (1 + rng() % 40) : 1 + rng() % 150000;
                if (aligned) at = (at + 4095) & ~uint64_t{4095};
                writes.emplace_back(at, random_bytes(len, static_cast<uint32_t>(rng())));
                at += len + (rng() % 3 == 0 ? 0 : rng() % 9000);  // adjacent, or a gap
            }
            std::shuffle(writes.begin(), writes.end(), rng);
            size_t pending = writes.size();
            std::string failure;
            asio::steady_timer all_done(f.io, std::chrono::steady_clock::time_point::max());
            for (auto& w : writes) {
                asio::co_spawn(f.io, [&, wp = &w]() -> awaitable<void> {
                    auto r = co_await f.store->write(id, wp->first, wp->second);
                    if (!r) failure = r.error().message;
                    if (--pending == 0) all_done.cancel();
                }, asio::detached);
            }
            if (pending > 0) {
                boost::system::error_code ec;
                co_await all_done.async_wait(asio::redirect_error(asio::use_awaitable, ec));
            }
            REQUIRE(pending == 0);
            if (!failure.empty()) FAIL(failure);
            for (const auto& [off, data] : writes) {
                if (model.size() < off + data.size()) model.resize(off + data.size(), 0);
                std::copy(data.begin(), data.end(), model.begin() + static_cast<ptrdiff_t>(off));
            }
        }
        auto st = co_await f.store->stat(id);
        REQUIRE(st);
        CHECK(st->size == model.size());
        // Reads of every alignment see the model.
        for (int i = 0; i < 200; ++i) {
            const uint64_t off = rng() % (model.size() + 10000);
            const uint32_t len = static_cast<uint32_t>(rng() % 200000);
            auto r = co_await f.store->read(id, off, len);
            REQUIRE(r);
            const size_t expect = off >= model.size() ? 0 : std::min<size_t>(len, model.size() - off);
            REQUIRE(r->size() == expect);
            CHECK(std::equal(r->begin(), r->end(), model.begin() + static_cast<ptrdiff_t>(std::min<uint64_t>(off, model.size()))));
        }
        CO_REQUIRE_OK(co_await f.store->sync(id));
    });
    // And what is on disk, read past every cache of the store.
    std::ifstream file(f.file_of(id), std::ios::binary);
    Bytes disk((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    CHECK(disk == model);
}

// tmpfs before Linux 6.6 (and some FUSE and network file systems) refuse
// O_DIRECT. Where this machine has such a place, the store must refuse to
// open there with a message that says why.
TEST_CASE("chunks: direct-io on a file system without O_DIRECT fails at open with a clear message", "[chunks]") {
    std::optional<std::filesystem::path> refusing;
    for (const char* candidate : {"/dev/shm", "/run", "/tmp"}) {
        std::string probe = std::string(candidate) + "/pfs-odirect-XXXXXX";
        const int fd = ::mkstemp(probe.data());
        if (fd < 0) continue;
        ::close(fd);
        const int direct = ::open(probe.c_str(), O_RDWR | O_DIRECT);
        const bool refused = direct < 0 && errno == EINVAL;
        if (direct >= 0) ::close(direct);
        ::unlink(probe.c_str());
        if (refused) {
            refusing = candidate;
            break;
        }
    }
    if (!refusing) {
        WARN("skipped: every writable place here supports O_DIRECT");
        return;
    }
    std::string tmpl = (*refusing / "pfs-test-XXXXXX").string();
    REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
    auto ring = make_ring();
    auto store = ChunkStore::open(*ring, tmpl, with_direct_io(true));
    REQUIRE_FALSE(store);
    CHECK(store.error().code == -EINVAL);
    CHECK(store.error().message.find("does not support O_DIRECT") != std::string::npos);

    // direct-io = auto: the same place opens, on the page cache.
    ChunkStoreOptions optional = with_direct_io(true);
    optional.direct_io_optional = true;
    auto cached = ChunkStore::open(*ring, tmpl, optional);
    REQUIRE(cached);
    CHECK_FALSE((*cached)->direct_io());
    const Bytes data = random_bytes(8192, 5);
    asio::io_context io;
    run_coro(io, [&]() -> awaitable<void> {
        auto wrote = co_await (*cached)->write(entry(7), 100, data);
        REQUIRE(wrote);
        CHECK(*wrote == data.size());
        auto read = co_await (*cached)->read(entry(7), 100, 8192);
        REQUIRE(read);
        CHECK(*read == data);
    });
    cached->reset();
    std::filesystem::remove_all(tmpl);
}

// ---- listing (fsck) ------------------------------------------------------------

namespace {

std::vector<ChunkListEntry> list_all(const ChunkStore& store, uint32_t page_size, size_t* pages = nullptr,
                                     const std::function<void()>& between = {}) {
    std::vector<ChunkListEntry> all;
    pfs_chunk_cookie cookie{};
    for (size_t n = 1;; ++n) {
        auto page = store.list(cookie, page_size);
        REQUIRE(page);
        REQUIRE(page->entries.size() <= page_size);
        all.insert(all.end(), page->entries.begin(), page->entries.end());
        if (pages) *pages = n;
        if (page->eof) break;
        REQUIRE(n < 100000);
        cookie = page->next;
        if (between) between();
    }
    return all;
}

std::string key(const pfs_entry_id& id) { return ChunkStore::chunk_path(id); }

}  // namespace

TEST_CASE("chunks: the listing pages through every chunk once, and nothing else", "[chunks]") {
    Fixture f;
    std::map<std::string, uint64_t> written;
    f.run([&]() -> awaitable<void> {
        for (uint64_t ino = 1; ino <= 600; ++ino) {
            const auto id = entry(ino, 1 + ino % 3, static_cast<uint32_t>(ino % 2));
            const size_t size = ino % 5 == 0 ? 0 : ino;  // empty chunk files count too
            const Bytes data(size > 0 ? size : 1, 1);
            CO_REQUIRE_OK(co_await f.store->write(id, 0, data));
            if (size == 0) CO_REQUIRE_OK(co_await f.store->truncate(id, 0));
            written[key(id)] = size;
        }
    });
    // Things that are not chunks the store would open: skipped.
    const auto a_chunk = entry(1, 2, 1);
    const auto fan = f.dir.path() / ChunkStore::chunk_path(a_chunk).substr(0, 9);
    std::ofstream(fan / "junk") << "x";
    for (const char* name : {"0abc-1-1", "ABC-1-1", "abc-1", "abc-1-1-1", "abc-1-100000000", "-1-1"})
        std::ofstream(fan / name) << "x";  // leading zero, capitals, too few or many fields, > 32 bits
    std::filesystem::create_directory(fan / "abcd-1-1");                    // a directory
    std::filesystem::create_symlink("/dev/null", fan / "abce-1-1");         // not a regular file
    // A chunk name in a fan-out directory its id does not hash to.
    const auto other = entry(0x12fd1, 1, 0);
    const std::string home = ChunkStore::chunk_path(other).substr(0, 9);
    const auto wrong = f.dir.path() / (home == "chunks/00" ? "chunks/01" : "chunks/00");
    std::filesystem::create_directories(wrong);
    std::ofstream(wrong / "12fd1-1-0") << "x";
    std::ofstream(f.dir.path() / "chunks" / "loose") << "x";

    size_t pages = 0;
    auto all = list_all(*f.store, 7, &pages);
    CHECK(pages >= 600 / 7);
    std::map<std::string, uint64_t> listed;
    for (const auto& e : all) {
        INFO(key(e.id));
        CHECK(listed.emplace(key(e.id), e.size).second);  // never twice
    }
    CHECK(listed == written);
    // One page for everything, too.
    CHECK(list_all(*f.store, PFS_CHUNK_LIST_MAX).size() == written.size());
    // A position from no listing is refused, not followed.
    CHECK_FALSE(f.store->list(pfs_chunk_cookie{257, 0}, 10));
}

TEST_CASE("chunks: a listing under way sees every chunk that stays, once", "[chunks]") {
    Fixture f;
    std::set<std::string> kept;
    std::vector<pfs_entry_id> doomed;
    f.run([&]() -> awaitable<void> {
        for (uint64_t ino = 1; ino <= 400; ++ino) {
            const auto id = entry(ino);
            CO_REQUIRE_OK(co_await f.store->write(id, 0, random_bytes(1, static_cast<uint32_t>(ino))));
            if (ino % 3 == 0) doomed.push_back(id);
            else kept.insert(key(id));
        }
    });
    // Between pages, chunks go and new ones come.
    uint64_t next_ino = 1000;
    auto churn = [&] {
        f.run([&]() -> awaitable<void> {
            if (!doomed.empty()) {
                CO_REQUIRE_OK(co_await f.store->unlink(doomed.back()));
                doomed.pop_back();
            }
            CO_REQUIRE_OK(co_await f.store->write(entry(next_ino++), 0, random_bytes(1, 1)));
        });
    };
    auto all = list_all(*f.store, 5, nullptr, churn);
    std::set<std::string> listed;
    for (const auto& e : all) CHECK(listed.insert(key(e.id)).second);
    for (const auto& k : kept) CHECK(listed.count(k) == 1);
}
