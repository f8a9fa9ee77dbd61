#include "dir_placement.hpp"

#include <algorithm>

namespace pfs::meta {
namespace {

// 0 normal, 1 low (under 10% free), 2 emergency (under 2% free, or full).
int space_class(const pfs_capacity& cap) {
    if (cap.bytes_total == 0) return 0;  // not reported yet
    double free = static_cast<double>(cap.bytes_free) / static_cast<double>(cap.bytes_total);
    return free < 0.02 ? 2 : free < 0.10 ? 1 : 0;
}

}  // namespace

Result<DirPlacement::Policy> DirPlacement::parse(std::string_view name) {
    if (name == "spread") return Policy::spread;
    if (name == "local") return Policy::local;
    return Error{-EINVAL, "--dir-placement must be 'spread' or 'local', not '" + std::string(name) + "'"};
}

uint32_t DirPlacement::choose(uint32_t self, std::span<const pfs_node_info> meta_nodes) {
    if (policy_ == Policy::local) return self;
    std::vector<uint32_t> by_class[3];
    for (const auto& n : meta_nodes)
        if (n.reachability == PFS_REACH_ONLINE) by_class[space_class(n.cap)].push_back(n.node_id);
    for (auto& ids : by_class) {
        if (ids.empty()) continue;
        std::sort(ids.begin(), ids.end());
        return ids[next_++ % ids.size()];
    }
    return self;
}

Status DirPlacement::check(uint32_t node, std::span<const pfs_node_info> meta_nodes) {
    bool known = std::any_of(meta_nodes.begin(), meta_nodes.end(),
                             [node](const pfs_node_info& n) { return n.node_id == node; });
    if (!known) return Error{PFS_E_UNKNOWN_NODE, "metadata server " + std::to_string(node) + " is not registered"};
    return ok_status();
}

}  // namespace pfs::meta
