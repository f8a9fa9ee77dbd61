// What a client knows of the cluster: which storage server serves each
// target. Loaded from pfs-mgmtd and kept current by its MAP_CHANGED pushes;
// requests for a target go to a connection pool of the server holding it.
#pragma once

#include <map>
#include <memory>

#include "rpc_client.hpp"

namespace pfs::client {

struct TargetRoute {
    uint32_t target_id = 0;
    uint32_t node_id = 0;
    Endpoint endpoint;
    uint8_t reachability = PFS_REACH_OFFLINE;
};

class Cluster {
public:
    Cluster(asio::any_io_executor ex, Endpoint mgmtd, auth::Secret secret, ClientConfig config = {},
            size_t connections_per_server = 2);
    ~Cluster();

    // Loads the map and subscribes to its changes.
    awaitable<Status> start();
    Result<TargetRoute> route(uint32_t target_id) const;
    awaitable<Result<Reply>> call_target(uint32_t target_id, uint16_t type, Bytes payload);
    // Like call_target, a failed reply status becomes an Error.
    awaitable<Result<Bytes>> call_target_ok(uint32_t target_id, uint16_t type, Result<Bytes> payload);

    RpcClient& mgmtd() { return *mgmtd_; }
    uint64_t map_version() const { return map_version_; }
    uint64_t refreshes() const { return refreshes_; }
    void close();

private:
    awaitable<Status> refresh();
    awaitable<Status> subscribe();
    void schedule_refresh();

    asio::any_io_executor ex_;
    auth::Secret secret_;
    ClientConfig config_;
    size_t connections_per_server_;
    std::shared_ptr<RpcClient> mgmtd_;
    std::map<uint32_t, TargetRoute> routes_;
    std::map<uint32_t, std::unique_ptr<ClientPool>> storage_;  // by node id
    std::map<uint32_t, Endpoint> pool_endpoints_;
    uint64_t map_version_ = 0;
    uint64_t refreshes_ = 0;
    bool refreshing_ = false;
    bool stale_ = false;
};

}  // namespace pfs::client
