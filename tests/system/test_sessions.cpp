// A libpfs client's sessions on a metadata server that is not the root's,
// lost all the same: the server restarted (kill -9: sessions and locks live
// in its memory), or the client was frozen past the session timeout. The
// loss is visible: a file unlinked while open, freed with the session,
// fails with ESTALE instead of reading what its deleted chunks became
// (zeros); the lost locks fail the next lock call with ENOLCK, once, while
// another client takes them; then locks are served as usual.
#include <catch2/catch.hpp>

#include <thread>

#include "filesystem.hpp"
#include "fs_waits.hpp"
#include "test_cluster.hpp"

using namespace pfs;
using namespace pfs::client;
using pfs::test::TestCluster;
using pfs::test::chunk_bytes;
using pfs::test::eventually;
using pfs::test::pause;
using pfs::test::wait_ready;
using namespace std::chrono_literals;

namespace {

constexpr uint8_t kFlock = PFS_LOCK_FLOCK;
constexpr uint8_t kPosix = PFS_LOCK_POSIX;

// Two metadata servers whose sessions end after 2 s of silence, and two
// clients: a holds files in /d2, a directory of the second server, and b
// watches.
struct Fixture {
    TestCluster tc;
    asio::io_context io;
    ClientConfig cfg = test::short_timeouts();
    std::unique_ptr<Cluster> ca, cb;
    std::unique_ptr<FileSystem> a, b;
    uint32_t other = 0;  // the metadata node that is not the root's

    Fixture() {
        tc.start_mgmtd();
        tc.start_meta("m1", {"--session-timeout", "2"});
        tc.start_meta("m2", {"--session-timeout", "2"});
        tc.start_storage("s1", 2);
        ca = std::make_unique<Cluster>(io.get_executor(), tc.mgmtd(), tc.secret(), cfg);
        cb = std::make_unique<Cluster>(io.get_executor(), tc.mgmtd(), tc.secret(), cfg);
        a = std::make_unique<FileSystem>(*ca, FileSystemOptions{0ms});
        b = std::make_unique<FileSystem>(*cb, FileSystemOptions{0ms});
    }

    // Both servers serve; /d2 made on the other one.
    awaitable<bool> ready() {
        if (!co_await wait_ready(io, *ca, *a, 2)) co_return false;
        if (!co_await cb->start()) co_return false;
        for (int i = 0; i < 300; ++i) {
            (void)co_await ca->start();
            auto root = ca->root_meta();
            for (const auto& n : ca->meta_nodes())
                if (root && n.node_id != *root && n.reachability == PFS_REACH_ONLINE) other = n.node_id;
            if (other != 0) {
                auto made = co_await a->mkdir("/d2", 0755, other);
                if (made) co_return made->id.owner_node == other;
            }
            co_await pause(io, 50ms);
        }
        co_return false;
    }

    std::string meta_alias(uint32_t node) const {
        for (const auto& n : ca->meta_nodes())
            if (n.node_id == node) return n.alias;
        return {};
    }
};

}  // namespace

TEST_CASE("a restarted metadata server's lost opens and locks fail with ESTALE and ENOLCK, never read zeros",
          "[system][locks][sessions]") {
    Fixture f;
    bool ok = test::run(f.io, [&]() -> awaitable<void> {
        bool ready = co_await f.ready();
        REQUIRE(ready);
        auto& a = *f.a;
        auto& b = *f.b;
        Bytes data(1 << 20, 0x5a);
        {
            auto w = co_await a.open("/d2/gone", O_CREAT | O_WRONLY);
            REQUIRE_OK(w);
            REQUIRE_OK(co_await a.write(*w, 0, data));
            REQUIRE_OK(co_await a.close(*w));
        }
        auto held = co_await a.open("/d2/gone", O_RDONLY);
        REQUIRE_OK(held);
        REQUIRE(held->attr.id.owner_node == f.other);
        auto fa = co_await a.open("/d2/locked", O_CREAT | O_RDWR);
        REQUIRE_OK(fa);
        REQUIRE_OK(co_await a.lock(*fa, kPosix, PFS_LOCK_WRITE, 0, 0));
        REQUIRE_OK(co_await a.lock(*fa, kFlock, PFS_LOCK_WRITE));
        REQUIRE_OK(co_await b.unlink("/d2/gone"));  // a keeps it open
        uint64_t before = co_await chunk_bytes(*f.cb, *held);
        REQUIRE(before > 0);
        REQUIRE(before != UINT64_MAX);
        auto fb = co_await b.open("/d2/locked", O_RDWR);
        REQUIRE_OK(fb);
        CHECK_ERRNO(co_await b.lock(*fb, kPosix, PFS_LOCK_WRITE, 0, 0), -EAGAIN);

        // The server restarts: our session, opens and locks there are gone;
        // the unlinked file is purged at recovery and its chunks deleted.
        std::string alias = f.meta_alias(f.other);
        REQUIRE(!alias.empty());
        f.tc.daemon(alias).kill(SIGKILL);
        f.tc.daemon(alias).start();
        bool purged = co_await eventually(f.io, 20s, [&]() -> awaitable<bool> {
            co_return co_await chunk_bytes(*f.cb, *held) == 0;
        });
        REQUIRE(purged);

        std::vector<uint8_t> out(data.size());
        CHECK_ERRNO(co_await a.read(*held, 0, out), -ESTALE);
        CHECK_ERRNO(co_await a.read(*held, 0, out), -ESTALE);  // for good
        CHECK(a.sessions().losses() >= 1);

        // b takes the locks a lost; a's next lock call says ENOLCK, once.
        bool taken = co_await eventually(f.io, 10s, [&]() -> awaitable<bool> {
            auto st = co_await b.lock(*fb, kPosix, PFS_LOCK_WRITE, 0, 0);
            co_return st.ok();
        });
        REQUIRE(taken);
        REQUIRE_OK(co_await b.lock(*fb, kFlock, PFS_LOCK_WRITE));
        CHECK_ERRNO(co_await a.unlock(*fa, kFlock), -ENOLCK);
        CHECK_ERRNO(co_await a.lock(*fa, kPosix, PFS_LOCK_WRITE, 0, 0), -EAGAIN);  // b's now
        REQUIRE_OK(co_await b.unlock(*fb, kPosix));
        REQUIRE_OK(co_await a.lock(*fa, kPosix, PFS_LOCK_WRITE, 0, 0));
        CHECK_ERRNO(co_await b.lock(*fb, kPosix, PFS_LOCK_READ, 0, 0), -EAGAIN);

        // The lost open is not closed in the new session (nothing to
        // close there); the live ones close as usual.
        REQUIRE_OK(co_await a.close(*held));
        REQUIRE_OK(co_await a.close(*fa));
        REQUIRE_OK(co_await b.close(*fb));
        REQUIRE_OK(co_await a.shutdown());
        REQUIRE_OK(co_await b.shutdown());
        f.ca->close();
        f.cb->close();
    });
    INFO(f.tc.logs());
    REQUIRE(ok);
}

TEST_CASE("a client frozen past the session timeout finds its session expired before it reads or locks",
          "[system][locks][sessions]") {
    Fixture f;
    bool ok = test::run(f.io, [&]() -> awaitable<void> {
        bool ready = co_await f.ready();
        REQUIRE(ready);
        auto& a = *f.a;
        auto& b = *f.b;
        Bytes data(1 << 20, 0x5a);
        {
            auto w = co_await a.open("/d2/gone", O_CREAT | O_WRONLY);
            REQUIRE_OK(w);
            REQUIRE_OK(co_await a.write(*w, 0, data));
            REQUIRE_OK(co_await a.close(*w));
        }
        auto held = co_await a.open("/d2/gone", O_RDONLY);
        REQUIRE_OK(held);
        auto fa = co_await a.open("/d2/locked", O_CREAT | O_RDWR);
        REQUIRE_OK(fa);
        REQUIRE_OK(co_await a.lock(*fa, kPosix, PFS_LOCK_WRITE, 0, 0));
        REQUIRE_OK(co_await b.unlink("/d2/gone"));
        // Renewed since the server told its timeout.
        bool renewing = co_await eventually(f.io, 10s, [&]() -> awaitable<bool> {
            co_return a.sessions().renewals() >= 2;
        });
        REQUIRE(renewing);

        // The whole client stops (its thread blocked: no renewal, no
        // reply read) for two session timeouts; the server ends the
        // session, frees the unlinked file, releases the lock.
        std::this_thread::sleep_for(4s);
        // Nothing has run since: only the time since the last renewal
        // tells that the session may be gone.
        std::vector<uint8_t> out(data.size());
        CHECK_ERRNO(co_await a.read(*held, 0, out), -ESTALE);
        CHECK_ERRNO(co_await a.lock(*fa, kPosix, PFS_LOCK_WRITE, 0, 0), -ENOLCK);
        REQUIRE_OK(co_await a.lock(*fa, kPosix, PFS_LOCK_WRITE, 0, 0));  // served again

        REQUIRE_OK(co_await a.close(*held));
        REQUIRE_OK(co_await a.close(*fa));
        REQUIRE_OK(co_await a.shutdown());
        REQUIRE_OK(co_await b.shutdown());
        f.ca->close();
        f.cb->close();
    });
    INFO(f.tc.logs());
    REQUIRE(ok);
    bool expired = f.tc.daemon("m1").log_text().find("client session expired") != std::string::npos ||
                   f.tc.daemon("m2").log_text().find("client session expired") != std::string::npos;
    CHECK(expired);
}
