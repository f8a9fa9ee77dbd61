#include "target_chooser.hpp"

#include <algorithm>

namespace pfs::meta {

Result<std::vector<uint32_t>> TargetChooser::choose(const StripePattern& pattern) {
    std::vector<uint32_t> by_class[3];
    for (const auto& t : targets_) {
        if (t.pool_id != pattern.pool_id || t.reachability != PFS_REACH_ONLINE || t.consistency != PFS_CONS_GOOD)
            continue;
        by_class[std::max(t.space_class, t.inode_class)].push_back(t.target_id);
    }
    std::vector<uint32_t> chosen;
    const uint64_t start = next_++;
    for (auto& ids : by_class) {
        if (ids.empty()) continue;
        std::sort(ids.begin(), ids.end());
        for (size_t i = 0; i < ids.size() && chosen.size() < pattern.num_targets; ++i)
            chosen.push_back(ids[(start + i) % ids.size()]);
    }
    if (chosen.empty())
        return Error{-ENOSPC, "no usable storage target in pool " + std::to_string(pattern.pool_id)};
    return chosen;
}

}  // namespace pfs::meta
