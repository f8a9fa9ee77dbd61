// Cache coherence through the metadata server's notices (PFS_MSG_INVALIDATE)
// against real daemons: two libpfs clients, the first caching directory
// names for 10 minutes. When the second renames a directory the first has
// cached and puts a new one in its place, the first must resolve the path
// to the new directory at once: the notice, not the TTL, ends the cached
// name. pfs-meta runs 3 loops, so the clients' connections are served on
// loops other than the one whose handlers send the notices.
#include <catch2/catch.hpp>

#include <set>

#include "filesystem.hpp"
#include "stats_sample.hpp"
#include "fs_waits.hpp"
#include "test_cluster.hpp"

using namespace pfs;
using namespace pfs::client;
using pfs::test::eventually;
using pfs::test::TestCluster;
using pfs::test::wait_ready;
using namespace std::chrono_literals;

namespace {

ClientConfig patient() {
    ClientConfig cfg;
    cfg.request_timeout = 5s;
    return cfg;
}

// One metadata server (its options: meta_args) and one storage server; two
// clients, the first caching directory names for 10 minutes.
struct TwoClients {
    explicit TwoClients(std::vector<std::string> meta_args = {}) : meta_args_(std::move(meta_args)) {}

    std::vector<std::string> meta_args_;
    TestCluster tc;
    asio::io_context io;
    Cluster ca{io.get_executor(), (start(tc, meta_args_), tc.mgmtd()), tc.secret(), patient()};
    Cluster cb{io.get_executor(), tc.mgmtd(), tc.secret(), patient()};
    FileSystem a{ca, FileSystemOptions{std::chrono::minutes(10)}};
    FileSystem b{cb};

    awaitable<bool> ready() {
        const bool first = co_await wait_ready(io, ca, a, 1);
        if (!first) co_return false;
        co_return co_await wait_ready(io, cb, b, 1);
    }

    static void start(TestCluster& tc, const std::vector<std::string>& meta_args) {
        tc.start_mgmtd();
        tc.start_meta("m1", meta_args);
        tc.start_storage("s1", 1);
    }
};

}  // namespace

TEST_CASE("a directory another client renames leaves this client's name cache at once", "[system][notices]") {
    TwoClients t({"--threads", "3"});
    auto& [meta_args, tc, io, ca, cb, a, b] = t;

    bool ok = test::run(io, [&]() -> awaitable<void> {
        REQUIRE(co_await t.ready());
        REQUIRE_OK(co_await a.mkdir("/data"));
        REQUIRE_OK(co_await a.mkdir("/data/train"));
        auto old_file = co_await a.open("/data/train/old", O_CREAT | O_WRONLY);
        REQUIRE_OK(old_file);
        REQUIRE_OK(co_await a.close(*old_file));
        // a resolves through /data and /data/train: both names are cached.
        REQUIRE_OK(co_await a.stat("/data/train/old"));

        REQUIRE_OK(co_await b.rename("/data", "/data.v1"));
        REQUIRE_OK(co_await b.mkdir("/data"));
        REQUIRE_OK(co_await b.mkdir("/data/train"));
        // Through its stale cache a would still find /data.v1/train/old.
        bool fresh = co_await eventually(io, 5s, [&]() -> awaitable<bool> {
            auto st = co_await a.stat("/data/train/old");
            co_return !st && st.error().code == -ENOENT;
        });
        CHECK(fresh);
        REQUIRE_OK(co_await a.stat("/data.v1/train/old"));
    });
    REQUIRE(ok);
}

TEST_CASE("names made in a directory this client has cached cost one request each, and follow its replacement",
          "[system][notices]") {
    TwoClients t;
    auto& [meta_args, tc, io, ca, cb, a, b] = t;

    bool ok = test::run(io, [&]() -> awaitable<void> {
        REQUIRE(co_await t.ready());
        auto meta_node = ca.root_meta();
        REQUIRE(meta_node);
        auto requests = [&](uint16_t type) -> awaitable<uint64_t> {
            auto body = co_await ca.call_meta_ok(*meta_node, PFS_MSG_GET_STATS, Bytes{});
            if (!body) co_return UINT64_MAX;
            auto stats = decode_stats(*body);
            co_return stats ? stats->requests(type) : UINT64_MAX;
        };
        REQUIRE_OK(co_await a.mkdir("/d"));
        REQUIRE_OK(co_await a.mkdir("/d/sub"));
        REQUIRE_OK(co_await a.stat("/d/sub"));  // both cached now

        // A create, an unlink, a mkdir: one request each, no LOOKUP of the
        // directory they are made in.
        const uint64_t lookups = co_await requests(PFS_MSG_LOOKUP);
        const uint64_t creates = co_await requests(PFS_MSG_CREATE);
        constexpr int n = 20;
        for (int i = 0; i < n; ++i) {
            auto f = co_await a.open("/d/sub/f" + std::to_string(i), O_CREAT | O_EXCL | O_WRONLY);
            REQUIRE_OK(f);
            REQUIRE_OK(co_await a.close(*f));
        }
        for (int i = 0; i < n; ++i) REQUIRE_OK(co_await a.unlink("/d/sub/f" + std::to_string(i)));
        REQUIRE_OK(co_await a.mkdir("/d/sub/inner"));
        const uint64_t lookups_after = co_await requests(PFS_MSG_LOOKUP);
        const uint64_t creates_after = co_await requests(PFS_MSG_CREATE);
        CHECK(lookups_after == lookups);
        CHECK(creates_after == creates + n);
        auto listing = co_await b.readdir("/d/sub");
        REQUIRE_OK(listing);
        std::set<std::string> names;
        for (const auto& e : *listing) names.insert(e.name);
        CHECK(names == std::set<std::string>{".", "..", "inner"});

        // Another client replaces the directory, and this one never hears
        // of it (its notices held back): the cached id is gone on the
        // server, so the create looks the path up again and lands in the
        // new directory, once.
        ca.drop_notices(a.client_id());
        REQUIRE_OK(co_await b.rmdir("/d/sub/inner"));
        REQUIRE_OK(co_await b.rmdir("/d/sub"));
        REQUIRE_OK(co_await b.mkdir("/d/sub"));
        auto f = co_await a.open("/d/sub/after", O_CREAT | O_EXCL | O_WRONLY);
        REQUIRE_OK(f);
        REQUIRE_OK(co_await a.close(*f));
        REQUIRE_OK(co_await b.stat("/d/sub/after"));
        REQUIRE_OK(co_await a.unlink("/d/sub/after"));
        CHECK_ERRNO(co_await b.stat("/d/sub/after"), -ENOENT);
        // Gone for good: the error is the one a fresh look gives.
        REQUIRE_OK(co_await b.rmdir("/d/sub"));
        CHECK_ERRNO(co_await a.open("/d/sub/late", O_CREAT | O_WRONLY), -ENOENT);
        CHECK_ERRNO(co_await a.mkdir("/d/sub/late"), -ENOENT);
    });
    REQUIRE(ok);
}
