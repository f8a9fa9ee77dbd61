// Keeps a server known to pfs-mgmtd: registers the node and its targets
// under their persisted numeric IDs, heartbeats with their capacity, and
// registers again whenever the connection to mgmtd was re-established or
// mgmtd no longer knows us.
#pragma once

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "rpc_client.hpp"

namespace pfs {

struct NodeIdentity {
    uint16_t type = 0;
    std::string alias;
    std::string host;  // empty: mgmtd records the address we connect from
    uint16_t port = 0;
    // Where else it serves: RDMA rails (address, port).
    std::vector<std::pair<std::string, uint16_t>> rdma;
};

struct AgentTarget {
    std::filesystem::path path;
    uint32_t id = 0;  // 0 until mgmtd assigned one
    uint32_t pool_id = 0;
};

// statvfs of a directory as wire capacity.
Result<pfs_capacity> directory_capacity(const std::filesystem::path& dir);

class NodeAgent {
public:
    NodeAgent(asio::io_context& io, Endpoint mgmtd, auth::Secret secret, NodeIdentity identity,
              std::filesystem::path state_dir, std::vector<std::filesystem::path> targets,
              std::chrono::milliseconds heartbeat_every);

    // Reads the persisted node and target IDs; a corrupt ID file is an error.
    Status load_ids();
    void start();

    uint32_t node_id() const { return node_id_; }
    const std::vector<AgentTarget>& targets() const { return targets_; }
    // Each listener is called with the node id after every successful registration.
    void on_registered(std::function<void(uint32_t)> fn) { on_registered_.push_back(std::move(fn)); }

private:
    awaitable<void> run();
    awaitable<Status> register_all();
    awaitable<Status> heartbeat();
    Result<Bytes> heartbeat_payload() const;
    void report(const Status& st, const char* what);

    asio::io_context& io_;
    std::shared_ptr<RpcClient> client_;
    NodeIdentity identity_;
    std::filesystem::path state_dir_;
    std::vector<AgentTarget> targets_;
    std::chrono::milliseconds heartbeat_every_;
    uint32_t node_id_ = 0;
    uint64_t registered_on_connect_ = 0;  // RpcClient::connects() at registration
    std::string last_problem_;
    std::vector<std::function<void(uint32_t)>> on_registered_;
};

}  // namespace pfs
