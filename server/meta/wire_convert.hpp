// Namespace values to and from their wire forms.
#pragma once

#include "inode.hpp"
#include "wire.hpp"

extern "C" {
#include "pfs_proto.h"
}

namespace pfs::meta {

inline pfs_timespec to_wire(const Timespec& t) { return pfs_timespec{t.sec, t.nsec}; }
inline Timespec from_wire(const pfs_timespec& t) { return Timespec{t.sec, t.nsec}; }
inline Timespec wall_clock_now() { return from_wire(wire_now()); }

inline pfs_attr to_wire(const Attr& a) {
    return pfs_attr{a.id,     a.mode, a.uid, a.gid, a.nlink, a.size, to_wire(a.atime), to_wire(a.mtime),
                    to_wire(a.ctime), a.rdev, to_wire(a.btime), a.blocks, a.xattrs};
}

inline Attr from_wire(const pfs_attr& a) {
    return Attr{a.id,
                a.mode,
                a.uid,
                a.gid,
                a.nlink,
                a.size,
                from_wire(a.atime),
                from_wire(a.mtime),
                from_wire(a.ctime),
                a.rdev,
                from_wire(a.btime),
                a.blocks,
                a.xattrs};
}

inline pfs_layout to_wire(const StripeLayout& l) {
    pfs_layout w{};
    w.chunk_size = l.chunk_size;
    w.pool_id = l.pool_id;
    w.count = static_cast<uint32_t>(std::min<size_t>(l.targets.size(), PFS_STRIPE_TARGETS_MAX));
    for (uint32_t i = 0; i < w.count; ++i) w.targets[i] = l.targets[i];
    return w;
}

inline pfs_pattern to_wire(const StripePattern& p) {
    return pfs_pattern{p.chunk_size, p.num_targets, p.pool_id, p.inline_max, p.dir_stripes};
}
inline StripePattern from_wire(const pfs_pattern& p) {
    return StripePattern{p.chunk_size, p.num_targets, p.pool_id, p.inline_max, p.dir_stripes};
}

}  // namespace pfs::meta
