// Capacity classes (normal, low, emergency) from free against total, as
// pfs-mgmtd reports them for targets and pfs-meta uses them to place
// directories.
#pragma once

#include <cstdint>

extern "C" {
#include "pfs_proto.h"
}

namespace pfs {

// PFS_CAP_*: under emergency_pct percent free is EMERGENCY, under low_pct
// LOW; nothing reported yet (total 0) counts as NORMAL.
inline uint8_t capacity_class(uint64_t free, uint64_t total, double low_pct, double emergency_pct) {
    if (total == 0) return PFS_CAP_NORMAL;
    double pct = 100.0 * static_cast<double>(free) / static_cast<double>(total);
    if (pct < emergency_pct) return PFS_CAP_EMERGENCY;
    if (pct < low_pct) return PFS_CAP_LOW;
    return PFS_CAP_NORMAL;
}

}  // namespace pfs
