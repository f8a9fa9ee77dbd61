// Inline files against real daemons: a small file's data stays with its
// metadata server (no chunk on any storage target), reads back through
// another client, survives kill -9 of pfs-meta once fsync'd (whose restart
// deletes inline data a crash left behind), moves to the
// storage targets when a write or a truncate takes it past the directory's
// inline-max (a client holding the old layout is sent after it:
// PFS_E_MOVED), and a client that does not follow inline layouts (as
// pfs.ko before it learns them) is never given one.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include <fcntl.h>
#include <signal.h>

#include "chunk_store.hpp"
#include "filesystem.hpp"
#include "fs_waits.hpp"
#include "stats_sample.hpp"
#include "test_cluster.hpp"

using namespace pfs;
using namespace pfs::client;
using pfs::test::TestCluster;
using namespace std::chrono_literals;

namespace {

constexpr uint32_t kInlineMax = 16u << 10;

Bytes pattern_bytes(size_t n, uint8_t seed) {
    Bytes out(n);
    for (size_t i = 0; i < n; ++i) out[i] = static_cast<uint8_t>(seed + i * 7 + i / 251);
    return out;
}

// Chunk files under a directory (a storage target, or pfs-meta's inline store).
size_t chunk_files(const std::filesystem::path& dir) {
    size_t n = 0;
    if (!std::filesystem::exists(dir)) return 0;
    for (const auto& e : std::filesystem::recursive_directory_iterator(dir))
        n += e.is_regular_file() && e.path().parent_path().parent_path().filename() == "chunks";
    return n;
}

// A cluster of one metadata and two storage servers, and two clients: the
// second one's connections as configured.
struct Setup {
    explicit Setup(ClientConfig second_config = test::short_timeouts())
        : other_cluster(io.get_executor(), tc.mgmtd(), tc.secret(), second_config) {}

    TestCluster tc;
    asio::io_context io;
    Cluster cluster{io.get_executor(), (start(tc), tc.mgmtd()), tc.secret(), test::short_timeouts()};
    FileSystem fs{cluster, FileSystemOptions{0ms}};
    Cluster other_cluster;
    FileSystem other{other_cluster, FileSystemOptions{0ms}};

    // Both clients see both targets, and dir's new files are inline.
    awaitable<bool> ready(const std::string& dir) {
        // (No co_await inside conditions: GCC 12.)
        const bool first = co_await test::wait_ready(io, cluster, fs, 2);
        const bool second = co_await test::wait_ready(io, other_cluster, other, 2);
        if (!first || !second) co_return false;
        bool made = true;
        if (dir != "/") made = (co_await fs.mkdir(dir)).ok();
        if (!made) co_return false;
        auto st = co_await fs.set_pattern(dir, pfs_pattern{64u << 10, 2, PFS_DEFAULT_POOL_ID, kInlineMax, 0});
        co_return st.ok();
    }
    void close() {
        cluster.close();
        other_cluster.close();
    }

    static void start(TestCluster& tc) {
        tc.start_mgmtd();
        tc.start_meta("m1");
        tc.start_storage("s1", 1);
        tc.start_storage("s2", 1);
    }
    size_t on_targets() const { return chunk_files(tc.dir() / "s1-t0") + chunk_files(tc.dir() / "s2-t0"); }
    size_t inline_chunks() const { return chunk_files(tc.dir() / "m1" / "inline"); }
};

awaitable<Result<Bytes>> read_all(FileSystem& fs, OpenFile& file, size_t n) {
    Bytes out(n + 100, 0xee);
    auto got = co_await fs.read(file, 0, out);
    if (!got) co_return got.error();
    out.resize(*got);
    co_return out;
}

awaitable<Result<Bytes>> read_path(FileSystem& fs, const std::string& path, size_t n) {
    auto file = co_await fs.open(path, O_RDONLY);
    if (!file) co_return file.error();
    auto data = co_await read_all(fs, *file, n);
    (void)co_await fs.close(*file);
    co_return data;
}

// A new file at path holding data, still open for writing.
awaitable<Result<OpenFile>> written(FileSystem& fs, const std::string& path, const Bytes& data) {
    auto file = co_await fs.open(path, O_CREAT | O_WRONLY);
    if (!file) co_return file.error();
    if (auto n = co_await fs.write(*file, 0, data); !n) co_return n.error();
    co_return std::move(*file);
}

}  // namespace

TEST_CASE("a small file stays with its metadata server until it outgrows inline-max", "[system]") {
    Setup s;
    FileSystem& other = s.other;
    const Bytes first = pattern_bytes(10000, 1);
    const Bytes more = pattern_bytes(10000, 99);

    bool ok = test::run(s.io, [&]() -> awaitable<void> {
        const bool ready = co_await s.ready("/in");
        REQUIRE(ready);
        auto pattern = co_await s.fs.get_pattern("/in");
        REQUIRE(pattern);
        CHECK(pattern->inline_max == kInlineMax);

        auto file = co_await s.fs.open("/in/a", O_CREAT | O_RDWR);
        REQUIRE(file);
        CHECK(is_inline_layout(file->layout));
        REQUIRE_OK(co_await s.fs.write(*file, 0, first));
        REQUIRE_OK(co_await s.fs.fsync(*file));
        CHECK(s.on_targets() == 0);
        CHECK(s.inline_chunks() == 1);

        // Another client reads it, and keeps it open with the inline layout.
        auto seen = co_await read_path(other, "/in/a", first.size());
        REQUIRE(seen);
        CHECK(*seen == first);
        // (Read-write: a read-only open would bring the content, and read that.)
        auto held = co_await other.open("/in/a", O_RDWR);
        REQUIRE(held);
        CHECK(is_inline_layout(held->layout));

        // Past inline-max: the data moves to the targets, the write follows it.
        REQUIRE_OK(co_await s.fs.write(*file, first.size() + 5000, more));
        CHECK_FALSE(is_inline_layout(file->layout));
        CHECK(file->layout.targets.size() == 2);
        REQUIRE_OK(co_await s.fs.fsync(*file));
        CHECK(s.inline_chunks() == 0);
        CHECK(s.on_targets() >= 1);
        auto layout = co_await s.fs.layout(std::string_view("/in/a"));
        REQUIRE(layout);
        CHECK_FALSE(is_inline_layout(*layout));

        // The other client's old layout sends it after the data.
        Bytes expect = first;
        expect.resize(first.size() + 5000, 0);
        expect.insert(expect.end(), more.begin(), more.end());
        auto size = co_await other.attr(*held);  // the size the writer's fsync reported
        REQUIRE(size);
        CHECK(size->size == expect.size());
        auto stale = co_await read_all(other, *held, expect.size());
        REQUIRE(stale);
        stale->resize(expect.size(), 0xee);
        CHECK(*stale == expect);
        CHECK_FALSE(is_inline_layout(held->layout));
        REQUIRE_OK(co_await other.close(*held));
        REQUIRE_OK(co_await s.fs.close(*file));

        // A truncate past inline-max moves a file too; one within it does not.
        auto small = co_await s.fs.open("/in/b", O_CREAT | O_RDWR);
        REQUIRE(small);
        REQUIRE_OK(co_await s.fs.write(*small, 0, first));
        REQUIRE_OK(co_await s.fs.close(*small));
        REQUIRE_OK(co_await s.fs.truncate("/in/b", 4000));
        auto cut = co_await read_path(s.fs, "/in/b", first.size());
        REQUIRE(cut);
        CHECK(*cut == Bytes(first.begin(), first.begin() + 4000));
        CHECK(s.inline_chunks() == 1);
        REQUIRE_OK(co_await s.fs.truncate("/in/b", 100000));
        auto grown = co_await read_path(s.fs, "/in/b", 100000);
        REQUIRE(grown);
        Bytes zeros_after = Bytes(first.begin(), first.begin() + 4000);
        zeros_after.resize(100000, 0);
        CHECK(*grown == zeros_after);
        CHECK(s.inline_chunks() == 0);

        // Removing an inline file deletes its data here.
        auto c = co_await s.fs.open("/in/c", O_CREAT | O_WRONLY);
        REQUIRE(c);
        REQUIRE_OK(co_await s.fs.write(*c, 0, first));
        REQUIRE_OK(co_await s.fs.close(*c));
        CHECK(s.inline_chunks() == 1);
        REQUIRE_OK(co_await s.fs.unlink("/in/c"));
        const bool deleted = co_await test::eventually(s.io, 10s, [&]() -> awaitable<bool> { co_return s.inline_chunks() == 0; });
        CHECK(deleted);
        s.close();
    });
    INFO(s.tc.logs());
    REQUIRE(ok);
}

TEST_CASE("removing inline files asks their storage targets for nothing; one that moved out has its chunks deleted",
          "[system]") {
    Setup s;
    const Bytes small = pattern_bytes(3000, 7);
    const Bytes big = pattern_bytes(kInlineMax * 4, 9);  // past inline-max, over both targets

    bool ok = test::run(s.io, [&]() -> awaitable<void> {
        const bool ready = co_await s.ready("/in");
        REQUIRE(ready);
        auto big_file = co_await written(s.fs, "/in/big", big);
        REQUIRE(big_file);
        const auto targets = big_file->layout.targets;
        REQUIRE(targets.size() == 2);
        REQUIRE_OK(co_await s.fs.close(*big_file));
        // CHUNK_UNLINK_MANY requests and bytes each target's server has had.
        auto unlinks = [&](uint32_t target) -> awaitable<std::pair<uint64_t, uint64_t>> {
            auto body = co_await s.cluster.call_target_ok(target, PFS_MSG_GET_STATS, Bytes{});
            auto stats = body ? decode_stats(*body) : Result<StatsSample>(body.error());
            if (!stats) co_return std::pair<uint64_t, uint64_t>{UINT64_MAX, UINT64_MAX};
            const pfs_msg_stats* row = stats->type(PFS_MSG_CHUNK_UNLINK_MANY);
            if (!row) co_return std::pair<uint64_t, uint64_t>{0, 0};
            co_return std::pair<uint64_t, uint64_t>{row->requests, row->bytes_in};
        };
        std::vector<std::pair<uint64_t, uint64_t>> before;
        for (uint32_t t : targets) before.push_back(co_await unlinks(t));

        constexpr int kFiles = 30;
        for (int i = 0; i < kFiles; ++i) {
            auto f = co_await written(s.fs, "/in/s" + std::to_string(i), small);
            REQUIRE(f);
            CHECK(is_inline_layout(f->layout));
            REQUIRE_OK(co_await s.fs.close(*f));
        }
        for (int i = 0; i < kFiles; ++i) REQUIRE_OK(co_await s.fs.unlink("/in/s" + std::to_string(i)));
        REQUIRE_OK(co_await s.fs.unlink("/in/big"));
        const bool gone = co_await test::eventually(s.io, 20s, [&]() -> awaitable<bool> {
            co_return s.on_targets() == 0 && s.inline_chunks() == 0;
        });
        CHECK(gone);
        // One request per target, naming the big file alone: the small ones
        // were never sent (they would have gone before it, or with it).
        pfs_chunk_unlink_many one{};
        one.count = 1;
        auto encoded = encode(pfs_x_chunk_unlink_many, one);
        REQUIRE(encoded);
        for (size_t i = 0; i < targets.size(); ++i) {
            auto after = co_await unlinks(targets[i]);
            INFO("target " << targets[i]);
            CHECK(after.first == before[i].first + 1);
            CHECK(after.second == before[i].second + PFS_HEADER_SIZE + encoded->size());
        }
        s.close();
    });
    INFO(s.tc.logs());
    REQUIRE(ok);
}

TEST_CASE("removing inline files made since the start deletes whatever data reached the inline store, however",
          "[system]") {
    Setup s;
    const Bytes small = pattern_bytes(2000, 3);

    bool ok = test::run(s.io, [&]() -> awaitable<void> {
        const bool ready = co_await s.ready("/in");
        REQUIRE(ready);
        // Never written: nothing in the store, nothing to delete.
        for (int i = 0; i < 5; ++i) {
            auto f = co_await s.fs.open("/in/empty" + std::to_string(i), O_CREAT | O_WRONLY);
            REQUIRE(f);
            REQUIRE_OK(co_await s.fs.close(*f));
        }
        // Made by one client, written by the other.
        auto made = co_await s.fs.open("/in/theirs", O_CREAT | O_WRONLY);
        REQUIRE(made);
        REQUIRE_OK(co_await s.fs.close(*made));
        auto theirs = co_await s.other.open("/in/theirs", O_WRONLY);
        REQUIRE(theirs);
        REQUIRE_OK(co_await s.other.write(*theirs, 0, small));
        REQUIRE_OK(co_await s.other.close(*theirs));
        // Written, then cut back to nothing: an empty chunk file remains.
        auto cut = co_await written(s.fs, "/in/cut", small);
        REQUIRE(cut);
        REQUIRE_OK(co_await s.fs.close(*cut));
        REQUIRE_OK(co_await s.fs.truncate("/in/cut", 0));
        // Space given, nothing written.
        auto given = co_await s.fs.open("/in/given", O_CREAT | O_WRONLY);
        REQUIRE(given);
        REQUIRE_OK(co_await s.fs.fallocate(*given, 0, 0, 4096));
        REQUIRE_OK(co_await s.fs.close(*given));
        const bool stored = co_await test::eventually(s.io, 20s, [&]() -> awaitable<bool> {
            co_return s.inline_chunks() == 3;
        });
        CHECK(stored);

        for (const char* name : {"theirs", "cut", "given"}) REQUIRE_OK(co_await s.fs.unlink(std::string("/in/") + name));
        for (int i = 0; i < 5; ++i) REQUIRE_OK(co_await s.fs.unlink("/in/empty" + std::to_string(i)));
        const bool gone = co_await test::eventually(s.io, 20s, [&]() -> awaitable<bool> {
            co_return s.inline_chunks() == 0;
        });
        CHECK(gone);
        CHECK(s.on_targets() == 0);
        s.close();
    });
    INFO(s.tc.logs());
    REQUIRE(ok);
}

TEST_CASE("an fsync'd inline file survives kill -9 of its metadata server", "[system]") {
    Setup s;
    const Bytes data = pattern_bytes(12345, 5);

    bool ok = test::run(s.io, [&]() -> awaitable<void> {
        const bool ready = co_await s.ready("/");
        REQUIRE(ready);
        auto file = co_await written(s.fs, "/f", data);
        REQUIRE(file);
        REQUIRE_OK(co_await s.fs.fsync(*file));
        s.tc.daemon("m1").kill(SIGKILL);
        // What a crash can leave in the store: data of a file the journal
        // freed (or moved out) before the store deleted it.
        pfs_entry_id gone = file->attr.id;
        gone.ino += 1000;
        const auto leftover = s.tc.dir() / "m1" / "inline" / ChunkStore::chunk_path(gone);
        std::filesystem::create_directories(leftover.parent_path());
        std::ofstream(leftover, std::ios::binary) << std::string(100, 'x');
        s.tc.daemon("m1").start();
        const bool back = co_await test::wait_ready(s.io, s.cluster, s.fs, 2);
        REQUIRE(back);
        const bool swept = co_await test::eventually(s.io, 10s, [&]() -> awaitable<bool> {
            co_return !std::filesystem::exists(leftover);
        });
        CHECK(swept);
        CHECK(s.inline_chunks() == 1);
        auto seen = co_await read_path(s.fs, "/f", data.size());
        REQUIRE(seen);
        CHECK(*seen == data);
        auto layout = co_await s.fs.layout(std::string_view("/f"));
        REQUIRE(layout);
        CHECK(is_inline_layout(*layout));
        CHECK(s.on_targets() == 0);
        s.close();
    });
    INFO(s.tc.logs());
    REQUIRE(ok);
}

TEST_CASE("an inline file written and closed, not synced, keeps its size across a clean stop of its metadata server",
          "[system]") {
    Setup s;
    const Bytes data = pattern_bytes(9000, 11);

    bool ok = test::run(s.io, [&]() -> awaitable<void> {
        const bool ready = co_await s.ready("/");
        REQUIRE(ready);
        auto file = co_await written(s.fs, "/f", data);
        REQUIRE(file);
        REQUIRE_OK(co_await s.fs.close(*file));
        // The size the write recorded is journaled lazily: SIGTERM at once,
        // before anything else would have written it.
        s.tc.daemon("m1").kill(SIGTERM);
        s.tc.daemon("m1").start();
        const bool back = co_await test::wait_ready(s.io, s.cluster, s.fs, 2);
        REQUIRE(back);
        auto seen = co_await read_path(s.fs, "/f", data.size() + 100);
        REQUIRE(seen);
        CHECK(*seen == data);
        s.close();
    });
    INFO(s.tc.logs());
    REQUIRE(ok);
}

TEST_CASE("a client that does not follow inline layouts is never given one", "[system]") {
    ClientConfig plain = test::short_timeouts();
    plain.inline_layouts = false;
    Setup s(plain);
    FileSystem& old = s.other;
    const Bytes data = pattern_bytes(9000, 3);

    bool ok = test::run(s.io, [&]() -> awaitable<void> {
        const bool ready = co_await s.ready("/");
        REQUIRE(ready);
        auto file = co_await written(s.fs, "/f", data);
        REQUIRE(file);
        REQUIRE_OK(co_await s.fs.close(*file));
        CHECK(s.inline_chunks() == 1);

        // Its open moves the file out first; its creates are never inline.
        auto opened = co_await old.open("/f", O_RDONLY);
        REQUIRE(opened);
        CHECK_FALSE(is_inline_layout(opened->layout));
        auto seen = co_await read_all(old, *opened, data.size());
        REQUIRE(seen);
        CHECK(*seen == data);
        REQUIRE_OK(co_await old.close(*opened));
        CHECK(s.inline_chunks() == 0);
        auto made = co_await old.open("/g", O_CREAT | O_WRONLY);
        REQUIRE(made);
        CHECK_FALSE(is_inline_layout(made->layout));
        REQUIRE_OK(co_await old.close(*made));
        s.close();
    });
    INFO(s.tc.logs());
    REQUIRE(ok);
}

TEST_CASE("an inline file's write records its size and mtime: the writer owes no report", "[system]") {
    Setup s;
    const Bytes data = pattern_bytes(5000, 3);

    bool ok = test::run(s.io, [&]() -> awaitable<void> {
        const bool ready = co_await s.ready("/in");
        REQUIRE(ready);
        auto file = co_await s.fs.open("/in/w", O_CREAT | O_WRONLY);
        REQUIRE(file);
        REQUIRE(is_inline_layout(file->layout));
        auto before = co_await s.other.stat("/in/w");
        REQUIRE(before);
        CHECK(before->size == 0);
        // Written, neither closed nor synced: another client sees the
        // size and a later mtime at once (a file on the targets shows
        // them only once its writer reports them, at close or fsync).
        REQUIRE_OK(co_await s.fs.write(*file, 0, data));
        auto after = co_await s.other.stat("/in/w");
        REQUIRE(after);
        CHECK(after->size == data.size());
        const auto later = [](const pfs_timespec& a, const pfs_timespec& b) {
            return a.sec > b.sec || (a.sec == b.sec && a.nsec > b.nsec);
        };
        CHECK(later(after->mtime, before->mtime));
        CHECK(later(after->ctime, before->ctime));
        // A write inside the size moves mtime alone.
        REQUIRE_OK(co_await s.fs.write(*file, 10, Bytes(10, 0x55)));
        auto inside = co_await s.other.stat("/in/w");
        REQUIRE(inside);
        CHECK(inside->size == data.size());
        CHECK(later(inside->mtime, after->mtime));
        REQUIRE_OK(co_await s.fs.close(*file));
        Bytes expect = data;
        std::fill_n(expect.begin() + 10, 10, 0x55);
        auto seen = co_await read_path(s.other, "/in/w", expect.size());
        REQUIRE(seen);
        CHECK(*seen == expect);
        s.close();
    });
    INFO(s.tc.logs());
    REQUIRE(ok);
}

TEST_CASE("a read-only open of an inline file brings its content: one round trip", "[system]") {
    Setup s;
    const Bytes data = pattern_bytes(7000, 11);

    bool ok = test::run(s.io, [&]() -> awaitable<void> {
        const bool ready = co_await s.ready("/");
        REQUIRE(ready);
        auto file = co_await s.fs.open("/f", O_CREAT | O_WRONLY);
        REQUIRE(file);
        CHECK_FALSE(file->content);  // not for a write
        REQUIRE_OK(co_await s.fs.write(*file, 0, data));
        REQUIRE_OK(co_await s.fs.close(*file));
        REQUIRE_OK(co_await s.fs.truncate("/f", 9000));  // a hole at the end

        // All of the file comes, the hole up to its size as zeros.
        Bytes expect = data;
        expect.resize(9000, 0);
        auto reader = co_await s.other.open("/f", O_RDONLY);
        REQUIRE(reader);
        REQUIRE(reader->content);
        CHECK(*reader->content == expect);
        CHECK(reader->untracked);  // all of it came: no CLOSE owed
        // Served from what the open brought: a write by another client
        // since is not seen through this handle (close-to-open).
        auto writer = co_await s.fs.open("/f", O_WRONLY);
        REQUIRE(writer);
        REQUIRE_OK(co_await s.fs.write(*writer, 0, Bytes(100, 0x77)));
        REQUIRE_OK(co_await s.fs.close(*writer));
        auto seen = co_await read_all(s.other, *reader, expect.size());
        REQUIRE(seen);
        CHECK(*seen == expect);
        // Once the handle learns the file grew, it reads where the data
        // is now, not zeros past what the open brought.
        auto grower = co_await s.fs.open("/f", O_WRONLY);
        REQUIRE(grower);
        REQUIRE_OK(co_await s.fs.write(*grower, 9000, Bytes(3000, 0x66)));
        // A write of nothing far out changes nothing, not even the size.
        REQUIRE_OK(co_await s.fs.write(*grower, 1u << 20, {}));
        REQUIRE_OK(co_await s.fs.close(*grower));
        auto grown = co_await s.other.attr(*reader);
        REQUIRE(grown);
        CHECK(grown->size == 12000);
        auto longer = co_await read_all(s.other, *reader, 12000);
        REQUIRE(longer);
        REQUIRE(longer->size() == 12000);
        CHECK((*longer)[0] == 0x77);
        CHECK((*longer)[11999] == 0x66);
        REQUIRE_OK(co_await s.other.close(*reader));
        // A new open sees the write.
        auto again = co_await read_path(s.other, "/f", expect.size());
        REQUIRE(again);
        CHECK((*again)[0] == 0x77);
        s.close();
    });
    INFO(s.tc.logs());
    REQUIRE(ok);
}

TEST_CASE("a read-only open given all of an inline file is not counted: an unlink frees the file at once",
          "[system]") {
    Setup s;
    const Bytes data = pattern_bytes(5000, 3);

    bool ok = test::run(s.io, [&]() -> awaitable<void> {
        const bool ready = co_await s.ready("/");
        REQUIRE(ready);
        for (const char* path : {"/u", "/c"}) {
            auto file = co_await s.fs.open(path, O_CREAT | O_WRONLY);
            REQUIRE(file);
            CHECK_FALSE(file->untracked);
            REQUIRE_OK(co_await s.fs.write(*file, 0, data));
            REQUIRE_OK(co_await s.fs.close(*file));
        }
        auto untracked = co_await s.other.open("/u", O_RDONLY);
        REQUIRE(untracked);
        REQUIRE(untracked->untracked);
        auto counted = co_await s.other.open("/c", O_RDWR);
        REQUIRE(counted);
        CHECK_FALSE(counted->untracked);
        REQUIRE_OK(co_await s.fs.unlink("/u"));
        REQUIRE_OK(co_await s.fs.unlink("/c"));
        // The counted open keeps its unlinked file; the other does not,
        // and reads on from what its open brought.
        auto kept = co_await s.fs.layout(counted->attr.id);
        CHECK(kept);
        auto freed = co_await s.fs.layout(untracked->attr.id);
        REQUIRE_FALSE(freed);
        CHECK((freed.error().code == -ENOENT || freed.error().code == -ESTALE));
        auto seen = co_await read_all(s.other, *untracked, data.size());
        REQUIRE(seen);
        CHECK(*seen == data);
        REQUIRE_OK(co_await s.other.close(*untracked));
        REQUIRE_OK(co_await s.other.close(*counted));
        s.close();
    });
    INFO(s.tc.logs());
    REQUIRE(ok);
}

TEST_CASE("an inline file's st_blocks is counted where its data is, in the inline store, and its first stat tells it", "[system]") {
    Setup s;
    const Bytes data = pattern_bytes(12000, 5);

    bool ok = test::run(s.io, [&]() -> awaitable<void> {
        const bool ready = co_await s.ready("/");
        REQUIRE(ready);
        auto file = co_await written(s.fs, "/f", data);
        REQUIRE(file);
        REQUIRE_OK(co_await s.fs.close(*file));
        REQUIRE(s.inline_chunks() == 1);
        // The first stat of the closed file is answered with the count,
        // made where the data is: on the storage targets it would be 0,
        // and unknown would send the client counting itself.
        auto attr = co_await s.other.stat("/f");
        REQUIRE_OK(attr);
        REQUIRE(attr->blocks != PFS_BLOCKS_UNKNOWN);
        CHECK(attr->blocks * 512 >= data.size());
        // Known from then on, for every client.
        auto again = co_await s.fs.stat("/f");
        REQUIRE_OK(again);
        CHECK(again->blocks == attr->blocks);
        s.close();
    });
    INFO(s.tc.logs());
    REQUIRE(ok);
}
