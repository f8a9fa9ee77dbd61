// Advisory locks and client sessions against real daemons: two libpfs
// clients (FileSystem instances, each its own client id) contend for flock
// and POSIX locks on one pfs-meta; a blocked waiter gets the lock once it is
// released; a client that vanishes without ending its session loses its
// locks and its open files after the session timeout (2 s here), so an
// unlinked file it held open is removed, chunks and all.
#include <catch2/catch.hpp>

#include "filesystem.hpp"
#include "fs_waits.hpp"
#include "test_cluster.hpp"

using namespace pfs;
using namespace pfs::client;
using pfs::test::TestCluster;
using pfs::test::chunk_bytes;
using pfs::test::pause;
using pfs::test::eventually;
using pfs::test::wait_ready;
using namespace std::chrono_literals;

namespace {

constexpr uint8_t kFlock = PFS_LOCK_FLOCK;
constexpr uint8_t kPosix = PFS_LOCK_POSIX;

struct Fixture {
    TestCluster tc;
    asio::io_context io;
    ClientConfig cfg;

    Fixture() {
        tc.start_mgmtd();
        tc.start_meta("m1", {"--session-timeout", "2"});
        tc.start_storage("s1", 2);
        cfg.request_timeout = 5s;
    }
};

}  // namespace

TEST_CASE("two clients contend for flock and POSIX locks, and a waiter gets the lock when it is released",
          "[system][locks]") {
    Fixture f;
    Cluster ca(f.io.get_executor(), f.tc.mgmtd(), f.tc.secret(), f.cfg);
    Cluster cb(f.io.get_executor(), f.tc.mgmtd(), f.tc.secret(), f.cfg);
    FileSystem a(ca);
    FileSystem b(cb);
    FileSystem a2(ca);  // another client sharing a's connections
    REQUIRE(a.client_id() != b.client_id());
    REQUIRE(a.client_id() != a2.client_id());

    bool ok = test::run(f.io, [&]() -> awaitable<void> {
        bool ready = co_await wait_ready(f.io, ca, a, 2);
        REQUIRE(ready);
        REQUIRE_OK(co_await cb.start());
        REQUIRE_OK(co_await a.mkdir("/locks"));
        auto fa = co_await a.open("/locks/f", O_CREAT | O_RDWR);
        REQUIRE_OK(fa);
        auto fb = co_await b.open("/locks/f", O_RDWR);
        REQUIRE_OK(fb);
        auto fa2 = co_await a2.open("/locks/f", O_RDONLY);
        REQUIRE_OK(fa2);

        // flock: exclusive against every other client.
        REQUIRE_OK(co_await a.lock(*fa, kFlock, PFS_LOCK_WRITE));
        CHECK_ERRNO(co_await b.lock(*fb, kFlock, PFS_LOCK_READ), -EAGAIN);
        CHECK_ERRNO(co_await a2.lock(*fa2, kFlock, PFS_LOCK_READ), -EAGAIN);
        {
            auto c = co_await b.getlk(*fb, kFlock, PFS_LOCK_READ);
            REQUIRE_OK(c);
            CHECK(c->type == PFS_LOCK_WRITE);
            CHECK(c->client_id == a.client_id());
        }
        REQUIRE_OK(co_await a.lock(*fa, kFlock, PFS_LOCK_READ));  // downgrade: readers may join
        REQUIRE_OK(co_await b.lock(*fb, kFlock, PFS_LOCK_READ));
        CHECK_ERRNO(co_await a.lock(*fa, kFlock, PFS_LOCK_WRITE), -EAGAIN);  // upgrade blocked by b

        // POSIX ranges: independent of flock; conflicts only where they overlap.
        REQUIRE_OK(co_await b.lock(*fb, kPosix, PFS_LOCK_WRITE, 0, 100));
        CHECK_ERRNO(co_await a.lock(*fa, kPosix, PFS_LOCK_READ, 50, 10), -EAGAIN);
        CHECK_ERRNO(co_await a2.lock(*fa2, kPosix, PFS_LOCK_READ, 99, 1), -EAGAIN);
        REQUIRE_OK(co_await a.lock(*fa, kPosix, PFS_LOCK_WRITE, 100, 100));
        REQUIRE_OK(co_await a2.lock(*fa2, kPosix, PFS_LOCK_READ, 200, 0));  // 200..EOF
        {
            auto c = co_await a.getlk(*fa, kPosix, PFS_LOCK_WRITE, 0, 0);
            REQUIRE_OK(c);
            CHECK(c->type == PFS_LOCK_WRITE);
            CHECK(c->start == 0);
            CHECK(c->end == 99);
            CHECK(c->client_id == b.client_id());
            auto none = co_await a.getlk(*fa, kPosix, PFS_LOCK_WRITE, 100, 100);
            REQUIRE_OK(none);
            CHECK(none->type == PFS_LOCK_UNLOCK);
        }
        // Unlocking a sub-range splits b's lock: the hole is free.
        REQUIRE_OK(co_await b.unlock(*fb, kPosix, 40, 20));
        REQUIRE_OK(co_await a.lock(*fa, kPosix, PFS_LOCK_WRITE, 40, 20));
        CHECK_ERRNO(co_await a.lock(*fa, kPosix, PFS_LOCK_WRITE, 39, 1), -EAGAIN);

        // A blocked waiter (F_SETLKW) gets the flock once the readers let go.
        bool waiting = true;
        Status waited = Error{};
        asio::co_spawn(f.io, [&]() -> awaitable<void> {
            waited = co_await a2.lock(*fa2, kFlock, PFS_LOCK_WRITE, 0, 0, true);
            waiting = false;
        }, asio::detached);
        co_await pause(f.io, 100ms);
        CHECK(waiting);  // a and b still share the flock
        REQUIRE_OK(co_await a.unlock(*fa, kFlock));
        CHECK(waiting);
        REQUIRE_OK(co_await b.unlock(*fb, kFlock));
        bool got = co_await eventually(f.io, 5s, [&]() -> awaitable<bool> { co_return !waiting; });
        REQUIRE(got);
        REQUIRE_OK(waited);
        CHECK_ERRNO(co_await a.lock(*fa, kFlock, PFS_LOCK_READ), -EAGAIN);

        // A close releases that open file's locks.
        REQUIRE_OK(co_await a2.close(*fa2));
        REQUIRE_OK(co_await a.lock(*fa, kFlock, PFS_LOCK_READ));
        REQUIRE_OK(co_await a.lock(*fa, kPosix, PFS_LOCK_WRITE, 300, 0));  // a2 read 200..EOF

        // SESSION_END releases everything of b at once, its open file too.
        CHECK_ERRNO(co_await a.lock(*fa, kPosix, PFS_LOCK_WRITE, 0, 10), -EAGAIN);
        REQUIRE_OK(co_await b.shutdown());
        REQUIRE_OK(co_await a.lock(*fa, kPosix, PFS_LOCK_WRITE, 0, 0));
        // The server closed it with the session and released its locks:
        // the close says the locks were lost (the reply to its unlock comes
        // from another session), and sends no CLOSE for an open that the
        // session before held.
        CHECK_ERRNO(co_await b.close(*fb), -ENOLCK);

        REQUIRE_OK(co_await a.close(*fa));
        REQUIRE_OK(co_await a.shutdown());
        ca.close();
        cb.close();
    });
    INFO(f.tc.logs());
    REQUIRE(ok);
}

TEST_CASE("a client that vanishes without ending its session loses its locks and opens after the timeout",
          "[system][locks]") {
    Fixture f;
    Cluster ca(f.io.get_executor(), f.tc.mgmtd(), f.tc.secret(), f.cfg);
    FileSystem a(ca);
    auto cb = std::make_unique<Cluster>(f.io.get_executor(), f.tc.mgmtd(), f.tc.secret(), f.cfg);
    auto b = std::make_unique<FileSystem>(*cb);

    bool ok = test::run(f.io, [&]() -> awaitable<void> {
        bool ready = co_await wait_ready(f.io, ca, a, 2);
        REQUIRE(ready);
        REQUIRE_OK(co_await cb->start());
        REQUIRE_OK(co_await a.mkdir("/gone"));
        Bytes data(1 << 20, 0x5a);
        {
            auto w = co_await a.open("/gone/held", O_CREAT | O_WRONLY);
            REQUIRE_OK(w);
            REQUIRE_OK(co_await a.write(*w, 0, data));
            REQUIRE_OK(co_await a.close(*w));
        }
        auto fa = co_await a.open("/gone/locked", O_CREAT | O_RDWR);
        REQUIRE_OK(fa);

        auto held = co_await b->open("/gone/held", O_RDONLY);
        REQUIRE_OK(held);
        auto fb = co_await b->open("/gone/locked", O_RDWR);
        REQUIRE_OK(fb);
        REQUIRE_OK(co_await b->lock(*fb, kPosix, PFS_LOCK_WRITE, 0, 0));
        REQUIRE_OK(co_await b->lock(*fb, kFlock, PFS_LOCK_WRITE));
        uint64_t before = co_await chunk_bytes(ca, *held);
        REQUIRE(before > 0);
        REQUIRE(before != UINT64_MAX);
        REQUIRE_OK(co_await a.unlink("/gone/held"));  // b keeps it open

        // An idle client keeps its session by renewals: after well over the
        // 2 s timeout without a request of b, its locks still hold.
        bool renewed = co_await eventually(f.io, 10s, [&]() -> awaitable<bool> {
            co_return b->sessions().renewals() >= 5;
        });
        REQUIRE(renewed);
        CHECK_ERRNO(co_await a.lock(*fa, kPosix, PFS_LOCK_READ, 7, 1), -EAGAIN);
        CHECK_ERRNO(co_await a.lock(*fa, kFlock, PFS_LOCK_READ), -EAGAIN);

        // b vanishes: no SESSION_END, no more renewals, connections gone.
        b.reset();
        cb->close();
        auto vanished = std::chrono::steady_clock::now();
        CHECK_ERRNO(co_await a.lock(*fa, kPosix, PFS_LOCK_WRITE, 0, 0), -EAGAIN);

        bool freed = co_await eventually(f.io, 10s, [&]() -> awaitable<bool> {
            auto st = co_await a.lock(*fa, kPosix, PFS_LOCK_WRITE, 0, 0);
            co_return st.ok();
        });
        REQUIRE(freed);
        auto waited = std::chrono::steady_clock::now() - vanished;
        CHECK(waited > 1s);  // the session timeout (less the last renewal's age), not at once
        REQUIRE_OK(co_await a.lock(*fa, kFlock, PFS_LOCK_WRITE));

        // Its open of the unlinked file was closed with the session: the
        // file is removed and its chunks are deleted.
        bool purged = co_await eventually(f.io, 10s, [&]() -> awaitable<bool> {
            co_return co_await chunk_bytes(ca, *held) == 0;
        });
        CHECK(purged);

        REQUIRE_OK(co_await a.close(*fa));
        REQUIRE_OK(co_await a.shutdown());
        ca.close();
    });
    INFO(f.tc.logs());
    REQUIRE(ok);
    CHECK(f.tc.daemon("m1").log_text().find("client session expired") != std::string::npos);
}
