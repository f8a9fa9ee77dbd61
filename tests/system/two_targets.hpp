// The storage side alone, for the tests of striped I/O and chunk deletion:
// pfs-mgmtd and one pfs-storage ("s1") with targets 1 and 2, a client
// Cluster on the test's io_context, and a layout of 64 KiB chunks over both.
#pragma once

#include <memory>

#include "cluster.hpp"
#include "fs_waits.hpp"
#include "stripe_layout.hpp"
#include "test_cluster.hpp"

namespace pfs::test {

struct TwoTargets {
    TestCluster tc;
    asio::io_context io;
    std::unique_ptr<client::Cluster> cluster;
    StripeLayout layout;

    // The cluster plays pfs-meta's part (truncating and deleting chunks):
    // it proves the server role.
    explicit TwoTargets(ClientConfig cfg = {}) {
        tc.start_mgmtd();
        tc.start_storage("s1", 2);
        cluster = std::make_unique<client::Cluster>(io.get_executor(), tc.mgmtd(), tc.secret(), as_server(cfg));
        layout.chunk_size = 64u << 10;
        layout.targets = {1, 2};
    }

    // Until the map routes both targets to s1; false after 10 s.
    awaitable<bool> routed() { return wait_routes(io, *cluster, layout.targets); }
};

}  // namespace pfs::test
