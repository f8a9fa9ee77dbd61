// A file's stripe layout, as the metadata server keeps it and clients use
// it: chunk size, storage pool, and the targets in stripe order (RAID0).
#pragma once

#include <cstdint>
#include <vector>

namespace pfs {

struct StripeLayout {
    uint32_t chunk_size = 0;
    uint32_t pool_id = 0;
    std::vector<uint32_t> targets;  // target ids, in stripe order
    friend bool operator==(const StripeLayout&, const StripeLayout&) = default;
};

}  // namespace pfs
