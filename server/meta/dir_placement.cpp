#include "dir_placement.hpp"

#include <algorithm>

#include "capacity.hpp"

namespace pfs::meta {
namespace {

// Free space of a metadata server's state directory: under 10% low, under
// 2% emergency (used last).
constexpr double kLowPct = 10, kEmergencyPct = 2;

}  // namespace

Result<DirPlacement::Policy> DirPlacement::parse(std::string_view name) {
    if (name == "spread") return Policy::spread;
    if (name == "local") return Policy::local;
    return Error{-EINVAL, "--dir-placement must be 'spread' or 'local', not '" + std::string(name) + "'"};
}

uint32_t DirPlacement::choose(uint32_t self, std::span<const pfs_node_info> meta_nodes) {
    if (policy_ == Policy::local) return self;
    std::vector<uint32_t> by_class[PFS_CAP_EMERGENCY + 1];
    for (const auto& n : meta_nodes)
        if (n.reachability == PFS_REACH_ONLINE)
            by_class[capacity_class(n.cap.bytes_free, n.cap.bytes_total, kLowPct, kEmergencyPct)].push_back(n.node_id);
    for (const auto& ids : by_class)
        if (!ids.empty()) return ids[next_++ % ids.size()];
    return self;
}

Status DirPlacement::check(uint32_t node, std::span<const pfs_node_info> meta_nodes) {
    bool known = std::any_of(meta_nodes.begin(), meta_nodes.end(),
                             [node](const pfs_node_info& n) { return n.node_id == node; });
    if (!known) return Error{PFS_E_UNKNOWN_NODE, "metadata server " + std::to_string(node) + " is not registered"};
    return ok_status();
}

}  // namespace pfs::meta
