// Picks the storage targets of a new file from the management map: targets
// of the directory's pool that are ONLINE and GOOD, those with normal free
// capacity first, then low, emergency last; a rotating start spreads
// consecutive files over all targets.
#pragma once

#include <cstdint>
#include <vector>

#include "inode.hpp"
#include "result.hpp"

extern "C" {
#include "pfs_proto.h"
}

namespace pfs::meta {

class TargetChooser {
public:
    // The latest map from pfs-mgmtd.
    void update(std::vector<pfs_target_info> targets) { targets_ = std::move(targets); }
    // Up to pattern.num_targets targets (fewer if the pool has fewer usable
    // ones); -ENOSPC when it has none.
    Result<std::vector<uint32_t>> choose(const StripePattern& pattern);

private:
    std::vector<pfs_target_info> targets_;
    uint64_t next_ = 0;  // rotation
};

}  // namespace pfs::meta
