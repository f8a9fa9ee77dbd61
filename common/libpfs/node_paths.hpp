// The ways to reach one server: an RDMA path per rail (by subnet: the
// server's RDMA address on the rail's network), or one where routing
// chooses when no rails are configured, and TCP where allowed, each with
// its pool of connections. Every request takes a path (choose): a usable
// RDMA path near the asking CPU, then the one with the least bulk bytes
// and requests in flight; with no RDMA path usable, TCP when the transport
// choice allows it, said once each way in the log. An RDMA path whose
// connect fails or whose connection is lost or times out backs off (1 s
// doubling to 30 s) and is tried again after that. The same rules as the
// kernel client's (kmod/net/node.c).
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "rdma/rails.hpp"
#include "rpc_client.hpp"

namespace pfs::client {

// What the choice of a path looks at.
struct PathView {
    bool rdma = false;
    bool usable = true;  // not backing off, and its rail's interface is up
    bool near = true;    // its rail is on the asking CPU's NUMA node (or either is unknown)
    uint64_t bulk_in_flight = 0;
    uint32_t requests_in_flight = 0;
};

// The path a request takes: the best usable RDMA path (near before far,
// then the least bulk bytes, then the fewest requests in flight), else the
// TCP path. nullopt: none (every RDMA path down and TCP not allowed).
std::optional<size_t> choose_path(std::span<const PathView> paths);

inline constexpr std::chrono::milliseconds kRailBackoffMin{1000};
inline constexpr std::chrono::milliseconds kRailBackoffMax{30000};

// The back-off after one more failure.
std::chrono::milliseconds next_backoff(std::chrono::milliseconds now);

class NodePaths {
public:
    struct Path {
        Endpoint endpoint;
        int rail = -1;  // in the Rails; -1: none (TCP, or RDMA where routing chooses)
        std::unique_ptr<ClientPool> pool;
        std::chrono::steady_clock::time_point retry_at{};
        std::chrono::milliseconds backoff{0};
        bool probing = false;  // one request is trying it after its back-off
        // Load of a path that has no rail (a rail counts its own).
        uint64_t bulk_in_flight = 0;
        uint32_t requests_in_flight = 0;

        bool rdma() const { return endpoint.rdma; }
    };

    // The endpoints a node is reached by under config: compared between two
    // maps to tell a server that moved.
    static std::vector<Endpoint> endpoints_of(const pfs_node_info& node, const ClientConfig& config);

    NodePaths(asio::any_io_executor ex, const pfs_node_info& node, const auth::Secret& secret,
              const ClientConfig& config, size_t connections);
    ~NodePaths();
    NodePaths(const NodePaths&) = delete;
    NodePaths& operator=(const NodePaths&) = delete;

    const std::vector<Endpoint>& endpoints() const { return endpoints_; }
    const std::string& name() const { return name_; }
    size_t size() const { return paths_.size(); }

    // The path for the next request; nullptr: none (see choose_path).
    Path* choose();
    // Another way than p is open: a usable RDMA path, or TCP.
    bool other_way(const Path& p);
    // A connect through p succeeded (new_connection: it made one): usable
    // again; a new connection starts its back-off over.
    void connected(Path& p, bool new_connection);
    // A request through p was answered: its back-off starts over.
    void answered(Path& p);
    // p failed to connect, lost its connection or timed out: it backs off,
    // unless it is the only way to the server.
    void failed(Path& p, const Error& why);

    // A request under way on a path: its load from the choice until it
    // ends (the caller keeps the NodePaths alive as long).
    class Use {
    public:
        Use(NodePaths& paths, Path& p, uint64_t bulk_bytes);
        ~Use();
        // It leaves (its connection is up): counted on its rail.
        void sent();
        Use(const Use&) = delete;
        Use& operator=(const Use&) = delete;

    private:
        Path& path_;
        rdma::RailCounters* rail_;
        uint64_t bytes_;
    };

    void on_notify(const std::function<void(const Frame&)>& fn);
    void on_disconnected(const std::function<void()>& fn);
    void close();

private:
    PathView view(const Path& p, std::chrono::steady_clock::time_point now) const;
    // Closes the connections of paths whose rail's interface is down.
    void drop_dead_rails();

    std::string name_;
    std::shared_ptr<const rdma::Rails> rails_;
    std::chrono::milliseconds probe_time_;  // how long others keep away from a path being probed
    std::vector<Endpoint> endpoints_;
    std::vector<Path> paths_;
    bool over_tcp_ = false;
};

}  // namespace pfs::client
