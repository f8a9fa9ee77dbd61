// libpfs against real pfs-mgmtd and pfs-storage processes: the cluster map
// follows registrations pushed by mgmtd, and striped files read back
// byte-identical across targets of two servers.
#include <catch2/catch.hpp>

#include <random>
#include <set>

#include "striped_io.hpp"
#include "test_cluster.hpp"
#include "two_targets.hpp"

using namespace pfs;
using namespace pfs::client;
using pfs::test::TestCluster;

namespace {

Bytes random_bytes(size_t n, uint64_t seed) {
    std::mt19937_64 rng(seed);
    Bytes b(n);
    for (auto& x : b) x = static_cast<uint8_t>(rng());
    return b;
}

StripeLayout four_targets() {
    StripeLayout l;
    l.chunk_size = 64u << 10;
    l.targets = {1, 2, 3, 4};
    return l;
}

}  // namespace

TEST_CASE("striped files round-trip through two storage servers", "[system]") {
    TestCluster tc;
    tc.start_mgmtd();
    asio::io_context io;
    // Truncation is pfs-meta's: this client plays its part.
    Cluster cluster(io.get_executor(), tc.mgmtd(), tc.secret(), test::as_server());
    StripedIo files(cluster);
    const StripeLayout layout = four_targets();
    const uint32_t chunk = layout.chunk_size;

    bool ok = test::run(io, [&]() -> awaitable<void> {
        Status started = Error{};
        for (int i = 0; i < 100 && !started; ++i) {
            started = co_await cluster.start();
            if (!started) co_await asio::steady_timer(io, std::chrono::milliseconds(50)).async_wait(asio::use_awaitable);
        }
        REQUIRE(started);
        // The servers register after we subscribed: their targets reach us by push.
        tc.start_storage("s1", 2);
        tc.start_storage("s2", 2);
        for (int i = 0; i < 200 && !(cluster.route(1) && cluster.route(4)); ++i)
            co_await asio::steady_timer(io, std::chrono::milliseconds(50)).async_wait(asio::use_awaitable);
        REQUIRE(cluster.route(4));
        // Targets register one by one: which server got which id varies,
        // but the four stripe targets span both servers.
        std::set<uint32_t> nodes;
        for (uint32_t t = 1; t <= 4; ++t)
            if (auto r = cluster.route(t)) nodes.insert(r->node_id);
        CHECK(nodes.size() == 2);

        uint64_t ino = 100;
        for (uint64_t size : {uint64_t{0}, uint64_t{1}, uint64_t{chunk - 1}, uint64_t{chunk}, uint64_t{chunk + 1},
                              uint64_t{4 * chunk + 7}, uint64_t{9u << 20}}) {
            INFO("size " << size);
            pfs_entry_id file{++ino, 1, 1};
            Bytes data = random_bytes(size, size);
            REQUIRE_OK(co_await files.write(layout, file, 0, data));
            Bytes back(size);
            REQUIRE_OK(co_await files.read(layout, file, 0, back));
            CHECK(back == data);
            REQUIRE_OK(co_await files.sync(layout, file));
        }

        // Sparse beyond 4 GiB: the hole reads as zeros.
        pfs_entry_id sparse{++ino, 1, 1};
        const uint64_t far = 5ull << 30;
        Bytes tail = random_bytes(100000, 5);
        REQUIRE_OK(co_await files.write(layout, sparse, far, tail));
        Bytes around(100020);
        REQUIRE_OK(co_await files.read(layout, sparse, far - 20, around));
        CHECK(std::all_of(around.begin(), around.begin() + 20, [](uint8_t b) { return b == 0; }));
        CHECK(std::equal(tail.begin(), tail.end(), around.begin() + 20));

        // Truncate down then up: the cut bytes come back as zeros.
        pfs_entry_id cut{++ino, 1, 1};
        Bytes full = random_bytes(5 * chunk, 9);
        REQUIRE_OK(co_await files.write(layout, cut, 0, full));
        REQUIRE_OK(co_await files.truncate(layout, cut, 70000));
        REQUIRE_OK(co_await files.truncate(layout, cut, 5 * chunk));
        Bytes after(5 * chunk);
        REQUIRE_OK(co_await files.read(layout, cut, 0, after));
        CHECK(std::equal(full.begin(), full.begin() + 70000, after.begin()));
        CHECK(std::all_of(after.begin() + 70000, after.end(), [](uint8_t b) { return b == 0; }));

        // Unlink removes every chunk file; doing it again is fine (retries).
        REQUIRE_OK(co_await files.unlink(layout, cut));
        REQUIRE_OK(co_await files.unlink(layout, cut));
        REQUIRE_OK(co_await files.read(layout, cut, 0, after));
        CHECK(std::all_of(after.begin(), after.end(), [](uint8_t b) { return b == 0; }));
        cluster.close();
    });
    INFO(tc.logs());
    REQUIRE(ok);
}

TEST_CASE("a dead storage server gives an error in bounded time, not a hang", "[system]") {
    ClientConfig cfg;
    cfg.request_timeout = std::chrono::milliseconds(2000);
    cfg.connect_timeout = std::chrono::milliseconds(1000);
    test::TwoTargets t(cfg);
    auto& [tc, io, cluster, layout] = t;
    StripedIo files(*cluster);

    bool ok = test::run(io, [&]() -> awaitable<void> {
        bool routed = co_await t.routed();
        REQUIRE(routed);
        Bytes data = random_bytes(200000, 1);
        REQUIRE_OK(co_await files.write(layout, pfs_entry_id{7, 1, 1}, 0, data));
        tc.daemon("s1").kill(SIGKILL);
        auto t0 = std::chrono::steady_clock::now();
        auto st = co_await files.write(layout, pfs_entry_id{7, 1, 1}, 0, data);
        auto took = std::chrono::steady_clock::now() - t0;
        REQUIRE_FALSE(st);
        CHECK(took < std::chrono::seconds(5));
        cluster->close();
    });
    INFO(tc.logs());
    REQUIRE(ok);
}
