// Two metadata servers and one storage server, and a libpfs client of
// them: for the tests of operations across metadata servers.
#pragma once

#include <catch2/catch.hpp>

#include <set>
#include <string>
#include <vector>

#include "ctl_run.hpp"
#include "filesystem.hpp"
#include "fs_waits.hpp"
#include "meta_admin.hpp"
#include "test_cluster.hpp"

namespace pfs::test {

using namespace pfs::client;
using namespace std::chrono_literals;

// Until none of these metadata servers has a directory left CREATED or
// REMOVING (20 s at most).
inline awaitable<bool> all_settled(asio::io_context& io, Cluster& cluster, std::vector<uint32_t> nodes) {
    co_return co_await test::eventually(io, 20s, [&]() -> awaitable<bool> {
        for (uint32_t node : nodes) {
            auto dirs = co_await list_detached(cluster, node);
            if (!dirs) co_return false;
            for (const auto& d : *dirs)
                if (d.state != PFS_DETACHED_CONFIRMED) co_return false;
        }
        co_return true;
    });
}

struct TwoMeta {
    TestCluster tc;
    asio::io_context io;
    std::unique_ptr<Cluster> cluster;
    std::unique_ptr<FileSystem> fs;
    uint32_t root_node = 0, other_node = 0;

    TwoMeta() {
        tc.start_mgmtd();
        tc.start_meta("m1");
        tc.start_meta("m2");
        tc.start_storage("s1", 2);
        ClientConfig cfg;
        cfg.request_timeout = 3s;
        cfg.connect_timeout = 1s;
        cfg.role = auth::Role::admin;  // fsck's LIST_DETACHED
        cluster = std::make_unique<Cluster>(io.get_executor(), tc.mgmtd(), tc.secret(), cfg);
        fs = std::make_unique<FileSystem>(*cluster, FileSystemOptions{0ms});
    }

    // Both metadata servers ONLINE and serving, the storage map loaded.
    awaitable<bool> ready() {
        if (!co_await test::wait_ready(io, *cluster, *fs, 2)) co_return false;
        for (int i = 0; i < 300; ++i) {
            (void)co_await cluster->start();
            const auto& nodes = cluster->meta_nodes();
            bool online = nodes.size() == 2 && nodes[0].reachability == PFS_REACH_ONLINE &&
                          nodes[1].reachability == PFS_REACH_ONLINE;
            if (online) {
                root_node = *cluster->root_meta();
                other_node = nodes[0].node_id == root_node ? nodes[1].node_id : nodes[0].node_id;
                // The other server serves once its namespace is open.
                auto st = co_await list_detached(*cluster, other_node);
                if (st) co_return true;
            }
            co_await pause(io, 50ms);
        }
        co_return false;
    }

    // Until neither server has a directory left CREATED or REMOVING.
    awaitable<bool> settled() {
        std::vector<uint32_t> nodes{root_node, other_node};
        co_return co_await all_settled(io, *cluster, std::move(nodes));
    }
};

inline awaitable<Status> put(FileSystem& fs, const std::string& path, const std::string& data) {
    auto f = co_await fs.open(path, O_CREAT | O_TRUNC | O_WRONLY);
    if (!f) co_return f.error();
    auto st = co_await fs.write(*f, 0, std::span(reinterpret_cast<const uint8_t*>(data.data()), data.size()));
    (void)co_await fs.close(*f);
    co_return st;
}

inline awaitable<Result<std::string>> get(FileSystem& fs, const std::string& path) {
    auto f = co_await fs.open(path, O_RDONLY);
    if (!f) co_return f.error();
    std::string data(1 << 16, '\0');
    auto n = co_await fs.read(*f, 0, std::span(reinterpret_cast<uint8_t*>(data.data()), data.size()));
    (void)co_await fs.close(*f);
    if (!n) co_return n.error();
    data.resize(*n);
    co_return data;
}

inline std::set<std::string> names(const std::vector<Entry>& entries) {
    std::set<std::string> out;
    for (const auto& e : entries)
        if (e.name != "." && e.name != "..") out.insert(e.name);
    return out;
}

}  // namespace pfs::test
