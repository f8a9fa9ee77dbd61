// A file's stripe layout, as the metadata server keeps it and clients use
// it: chunk size, storage pool, and the targets in stripe order (RAID0).
#pragma once

#include <cstdint>
#include <vector>

extern "C" {
#include "pfs_proto.h"
}

namespace pfs {

struct StripeLayout {
    uint32_t chunk_size = 0;
    uint32_t pool_id = 0;
    std::vector<uint32_t> targets;  // target ids, in stripe order
    friend bool operator==(const StripeLayout&, const StripeLayout&) = default;
};

// An inline file's layout as clients see it: the one target
// PFS_INLINE_TARGET (its metadata server), chunk size and pool its own.
inline StripeLayout inline_layout(const StripeLayout& own) {
    return StripeLayout{own.chunk_size, own.pool_id, {PFS_INLINE_TARGET}};
}
inline bool is_inline_layout(const StripeLayout& l) {
    return l.targets.size() == 1 && l.targets[0] == PFS_INLINE_TARGET;
}

}  // namespace pfs
