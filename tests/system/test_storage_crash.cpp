// kill -9 of a storage server while files striped over it are being
// written and fsync'd: after a restart every byte that an fsync
// acknowledged reads back identical (CRC-32C of each file's synced prefix
// and a byte comparison), what was not synced may be missing but never
// overwrites synced data, and both storage servers go on serving.
#include <catch2/catch.hpp>

#include <random>

#include "crc32c.hpp"
#include "filesystem.hpp"
#include "fs_waits.hpp"
#include "gather.hpp"
#include "test_cluster.hpp"

using namespace pfs;
using namespace pfs::client;
using pfs::test::TestCluster;
using pfs::test::pause;
using namespace std::chrono_literals;

namespace {

constexpr size_t kPiece = 96u << 10;  // not a multiple of the chunk size: pieces span targets
constexpr int kFiles = 6;
constexpr uint64_t kSyncedBeforeKill = 12u << 20;
constexpr int kMaxPieces = 400;  // per file, so the test ends even if the kill never lands

// Piece k of file f: a fixed function of (f, k), so it can be checked without keeping it.
Bytes piece(int f, int k) {
    std::mt19937 rng(static_cast<uint32_t>(f * 1000003 + k));
    Bytes out(kPiece);
    for (auto& b : out) b = static_cast<uint8_t>(rng());
    return out;
}

struct Stream {
    std::string path;
    uint64_t written = 0;  // acknowledged writes
    uint64_t synced = 0;   // acknowledged by an fsync
    uint32_t synced_crc = 0;
    bool failed = false;  // a write or fsync failed: the server died under it
};

// Reads [0, length) of path and compares it with the pieces; the CRC of
// what was read, or an error.
awaitable<Result<uint32_t>> check_prefix(FileSystem& fs, const std::string& path, int f, uint64_t length) {
    auto file = co_await fs.open(path, O_RDONLY);
    if (!file) co_return file.error();
    uint32_t crc = 0;
    Status st = ok_status();
    Bytes buf(kPiece);
    for (uint64_t at = 0; at < length && st; at += kPiece) {
        const size_t n = static_cast<size_t>(std::min<uint64_t>(kPiece, length - at));
        auto got = co_await fs.read(*file, at, std::span(buf.data(), n));
        if (!got) st = got.error();
        else if (*got != n) st = Error{-EIO, path + ": short read at " + std::to_string(at)};
        else if (!std::equal(buf.begin(), buf.begin() + static_cast<ptrdiff_t>(n), piece(f, static_cast<int>(at / kPiece)).begin()))
            st = Error{-EIO, path + ": bytes differ in the piece at " + std::to_string(at)};
        else crc = crc32c_extend(crc, std::span<const uint8_t>(buf.data(), n));
    }
    (void)co_await fs.close(*file);
    if (!st) co_return st.error();
    co_return crc;
}

}  // namespace

TEST_CASE("a storage server killed mid-write keeps every fsync'd byte", "[system]") {
    TestCluster tc;
    tc.start_mgmtd();
    tc.start_meta("m1");
    tc.start_storage("s1", 1);
    tc.start_storage("s2", 1);
    asio::io_context io;
    Cluster cluster(io.get_executor(), tc.mgmtd(), tc.secret(), test::short_timeouts());
    FileSystem fs(cluster, FileSystemOptions{0ms});
    std::vector<Stream> streams(kFiles);

    bool ok = test::run(io, [&]() -> awaitable<void> {
        // Both targets in the map, and the metadata server serving.
        // (No co_await inside an if's expression statement: GCC 12 may
        // destroy that awaitable even when the branch is not taken.)
        const bool ready = co_await test::wait_ready(io, cluster, fs, 2);
        REQUIRE(ready);
        REQUIRE_OK(co_await fs.mkdir("/crash"));
        REQUIRE_OK(co_await fs.set_pattern("/crash", pfs_pattern{64u << 10, 2, PFS_DEFAULT_POOL_ID, 0, 0}));

        bool killed = false;
        uint64_t synced_total = 0;
        std::vector<Task<Unit>> tasks;
        for (int f = 0; f < kFiles; ++f) {
            tasks.push_back([&, f]() -> awaitable<Result<Unit>> {
                Stream& s = streams[f];
                s.path = "/crash/f" + std::to_string(f);
                auto file = co_await fs.open(s.path, O_CREAT | O_WRONLY);
                if (!file) co_return file.error();
                uint32_t crc = 0;
                int after_kill = 0;
                for (int k = 0; k < kMaxPieces; ++k) {
                    if (killed && ++after_kill > 3) break;  // a few more after the kill, then stop
                    const Bytes data = piece(f, k);
                    auto st = co_await fs.write(*file, s.written, data);
                    if (!st) {
                        s.failed = true;  // the server went away under us
                        break;
                    }
                    s.written += data.size();
                    crc = crc32c_extend(crc, data);
                    if (k % 3 == 2) {
                        auto synced = co_await fs.fsync(*file);
                        if (!synced) {
                            s.failed = true;
                            break;
                        }
                        synced_total += s.written - s.synced;
                        s.synced = s.written;
                        s.synced_crc = crc;
                    }
                }
                (void)co_await fs.close(*file);
                co_return Unit{};
            });
        }
        tasks.push_back([&]() -> awaitable<Result<Unit>> {
            for (int i = 0; i < 6000 && synced_total < kSyncedBeforeKill; ++i) co_await pause(io, 5ms);
            tc.daemon("s1").kill(SIGKILL);
            killed = true;
            co_return Unit{};
        });
        auto results = co_await gather(std::move(tasks));
        for (auto& r : results) REQUIRE_OK(r);
        REQUIRE(killed);
        REQUIRE(synced_total >= kSyncedBeforeKill);
        // Every writer went on after the kill, and every piece touches s1.
        for (const auto& s : streams) CHECK(s.failed);
        tc.daemon("s1").start();

        // Served again once s1 is back: poll the first synced file.
        Result<uint32_t> first = Error{};
        for (int i = 0; i < 600 && !first; ++i) {
            first = co_await check_prefix(fs, streams[0].path, 0, std::min<uint64_t>(streams[0].synced, 2 * kPiece));
            if (!first) co_await pause(io, 50ms);
        }
        REQUIRE_OK(first);

        uint64_t synced_bytes = 0, written_bytes = 0;
        for (int f = 0; f < kFiles; ++f) {
            const Stream& s = streams[f];
            INFO(s.path << ": written " << s.written << ", synced " << s.synced);
            auto crc = co_await check_prefix(fs, s.path, f, s.synced);
            REQUIRE_OK(crc);
            CHECK(*crc == s.synced_crc);
            auto attr = co_await fs.stat(s.path);
            REQUIRE_OK(attr);
            CHECK(attr->size >= s.synced);
            synced_bytes += s.synced;
            written_bytes += s.written;
        }
        WARN("fsync'd " << synced_bytes << " of " << written_bytes << " bytes written; all of them read back");

        // Both servers serve new files and more writes to old ones.
        auto fresh = co_await fs.open("/crash/after", O_CREAT | O_RDWR);
        REQUIRE_OK(fresh);
        const Bytes more = piece(99, 0);
        REQUIRE_OK(co_await fs.write(*fresh, 0, more));
        REQUIRE_OK(co_await fs.fsync(*fresh));
        Bytes back(more.size());
        auto n = co_await fs.read(*fresh, 0, back);
        REQUIRE_OK(n);
        CHECK(*n == more.size());
        CHECK(back == more);
        REQUIRE_OK(co_await fs.close(*fresh));
        cluster.close();
    });
    INFO(tc.logs().substr(0, 20000));
    REQUIRE(ok);
}
