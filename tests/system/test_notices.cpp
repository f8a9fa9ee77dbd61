// Cache coherence through the metadata server's notices (PFS_MSG_INVALIDATE)
// against real daemons: two libpfs clients, the first caching directory
// names for 10 minutes. When the second renames a directory the first has
// cached and puts a new one in its place, the first must resolve the path
// to the new directory at once: the notice, not the TTL, ends the cached
// name. pfs-meta runs 3 loops, so the clients' connections are served on
// loops other than the one whose handlers send the notices.
#include <catch2/catch.hpp>

#include "filesystem.hpp"
#include "fs_waits.hpp"
#include "test_cluster.hpp"

using namespace pfs;
using namespace pfs::client;
using pfs::test::eventually;
using pfs::test::TestCluster;
using pfs::test::wait_ready;
using namespace std::chrono_literals;

TEST_CASE("a directory another client renames leaves this client's name cache at once", "[system][notices]") {
    TestCluster tc;
    tc.start_mgmtd();
    tc.start_meta("m1", {"--threads", "3"});
    tc.start_storage("s1", 1);
    asio::io_context io;
    ClientConfig cfg;
    cfg.request_timeout = 5s;
    Cluster ca(io.get_executor(), tc.mgmtd(), tc.secret(), cfg);
    Cluster cb(io.get_executor(), tc.mgmtd(), tc.secret(), cfg);
    FileSystem a(ca, FileSystemOptions{std::chrono::minutes(10)});
    FileSystem b(cb);

    bool ok = test::run(io, [&]() -> awaitable<void> {
        bool ready = co_await wait_ready(io, ca, a, 1);
        REQUIRE(ready);
        ready = co_await wait_ready(io, cb, b, 1);
        REQUIRE(ready);
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
