// The management map: nodes, storage targets, storage pools, and the states
// derived from heartbeats. Pure logic over an injected clock so that tests
// drive time; persistence through a crash-safe state file.
#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "result.hpp"

extern "C" {
#include "pfs_proto.h"
}

#include "capacity.hpp"

namespace pfs::mgmtd {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

struct Settings {
    milliseconds probably_offline_after{8000};  // heartbeat age
    milliseconds offline_after{30000};
    // Capacity pools, in percent of free space / free inodes.
    double space_low_pct = 10.0;
    double space_emergency_pct = 3.0;
    double inodes_low_pct = 10.0;
    double inodes_emergency_pct = 3.0;
};

// Another address a node serves on (an RDMA rail), beside host:port.
struct NodeAddr {
    uint8_t transport = PFS_TRANSPORT_TCP;
    uint16_t port = 0;
    std::string addr;
    bool operator==(const NodeAddr&) const = default;
};

struct Node {
    uint32_t id = 0;
    uint16_t type = 0;
    uint16_t port = 0;
    std::string alias;
    std::string host;
    std::vector<NodeAddr> addrs;
    Clock::time_point last_seen{};
    pfs_capacity cap{};  // metadata nodes: their metadata store
};

struct Target {
    uint32_t id = 0;
    uint32_t node_id = 0;
    uint32_t pool_id = PFS_DEFAULT_POOL_ID;
    uint8_t consistency = PFS_CONS_GOOD;
    std::string path;
    pfs_capacity cap{};
};

struct Pool {
    uint32_t id = 0;
    std::string name;
};

class Registry {
public:
    // Loads the state file, or starts empty (with the default pool) when
    // there is none. A corrupt file is an error, never a silent reset.
    static Result<Registry> open(std::filesystem::path state_file, Settings settings, Clock::time_point now);

    Result<pfs_register_node_reply> register_node(const pfs_register_node& req, Clock::time_point now);
    Result<pfs_register_target_reply> register_target(const pfs_register_target& req);
    Status heartbeat(uint32_t node_id, std::span<const pfs_target_capacity> caps, Clock::time_point now);
    Result<uint32_t> create_pool(uint32_t id, const std::string& name);
    Status assign_pool(uint32_t target_id, uint32_t pool_id);
    Status set_consistency(uint32_t target_id, uint8_t consistency);

    std::vector<pfs_node_info> node_infos(uint16_t type, Clock::time_point now) const;
    std::vector<pfs_target_info> target_infos(Clock::time_point now) const;
    std::vector<pfs_pool_info> pool_infos() const;

    uint8_t reachability(uint32_t node_id, Clock::time_point now) const;

    // Recomputes the derived states (reachability, capacity classes), drops
    // clients long gone, and returns what changed since the last call as
    // pfs_map_change bits (0: nothing). Any change bumps the map version.
    uint32_t evaluate(Clock::time_point now);
    // Change bits accumulated by mutations since the last take.
    uint32_t take_changes();

    uint64_t version() const { return version_; }
    const std::map<uint32_t, Node>& nodes() const { return nodes_; }
    const std::map<uint32_t, Target>& targets() const { return targets_; }

private:
    Registry(std::filesystem::path state_file, Settings settings);

    nlohmann::json to_json() const;
    Status from_json(const nlohmann::json& j, Clock::time_point now);
    // Persists the map; on failure restores the last saved map, so a change
    // is acknowledged only once it is on disk.
    Status commit(uint32_t changes);
    std::string derived_states(Clock::time_point now) const;

    std::filesystem::path state_file_;
    Settings settings_;
    std::map<uint32_t, Node> nodes_;
    std::map<uint32_t, Target> targets_;
    std::map<uint32_t, Pool> pools_;
    uint32_t next_node_id_ = 1;
    uint32_t next_target_id_ = 1;
    uint32_t next_pool_id_ = PFS_DEFAULT_POOL_ID + 1;
    uint64_t version_ = 1;
    uint32_t pending_changes_ = 0;
    std::string published_states_;
    std::string saved_;  // the last map on disk, serialized
};

}  // namespace pfs::mgmtd
