// Field codecs shared by the op encoding and the snapshot: one function per
// type serves encoding, decoding and sizing (see pfs_xdr.h), so the two
// directions cannot disagree. Internal to the namespace's .cpp files.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "inode.hpp"

extern "C" {
#include "pfs_xdr.h"
}

namespace pfs::meta::codec {

inline void xfer(pfs_xdr* x, uint8_t& v) { pfs_x_u8(x, &v); }
inline void xfer(pfs_xdr* x, uint32_t& v) { pfs_x_u32(x, &v); }
// uint64_t is unsigned long here, __u64 unsigned long long: go through one.
inline void xfer(pfs_xdr* x, uint64_t& v) {
    __u64 t = v;
    pfs_x_u64(x, &t);
    if (pfs_xdr_decoding(x)) v = t;
}
inline void xfer(pfs_xdr* x, pfs_entry_id& id) { pfs_x_entry_id(x, &id); }

inline void fail(pfs_xdr* x) {
    if (!x->err) x->err = -EBADMSG;
}

inline void xfer(pfs_xdr* x, bool& v) {
    uint8_t b = v ? 1 : 0;
    pfs_x_u8(x, &b);
    if (!pfs_xdr_decoding(x)) return;
    if (b > 1) fail(x);
    v = b == 1;
}

inline void xfer(pfs_xdr* x, Timespec& t) {
    __s64 sec = t.sec;
    pfs_x_s64(x, &sec);
    pfs_x_u32(x, &t.nsec);
    if (!pfs_xdr_decoding(x)) return;
    t.sec = sec;
    if (!valid_time(t)) fail(x);
}

// Bytes with a u32 length of at most max; decoding allocates no more than
// the input holds.
inline void xfer_str(pfs_xdr* x, std::string& s, uint32_t max) {
    auto n = static_cast<uint32_t>(s.size());
    if (!pfs_xdr_decoding(x) && s.size() > max) {
        if (!x->err) x->err = -EMSGSIZE;
        return;
    }
    if (pfs_x_count(x, &n, max, 1)) return;
    if (pfs_xdr_decoding(x)) s.resize(n);
    pfs_x_bytes(x, s.data(), n);
}

// with_inline: op version 2 and snapshot version 6 on; with_stripes: op
// version 3 and snapshot version 7 on.
inline void xfer(pfs_xdr* x, StripePattern& p, bool with_inline, bool with_stripes) {
    pfs_x_u32(x, &p.chunk_size);
    pfs_x_u32(x, &p.num_targets);
    pfs_x_u32(x, &p.pool_id);
    if (with_inline) pfs_x_u32(x, &p.inline_max);
    if (with_stripes) pfs_x_u32(x, &p.dir_stripes);
}

// A list of entry ids of at most max.
inline void xfer(pfs_xdr* x, std::vector<pfs_entry_id>& ids, uint32_t max) {
    auto n = static_cast<uint32_t>(ids.size());
    if (pfs_x_count(x, &n, max, 16)) return;
    if (pfs_xdr_decoding(x)) ids.resize(n);
    for (auto& id : ids) xfer(x, id);
}

inline void xfer(pfs_xdr* x, StripeLayout& l) {
    pfs_x_u32(x, &l.chunk_size);
    pfs_x_u32(x, &l.pool_id);
    auto n = static_cast<uint32_t>(l.targets.size());
    if (pfs_x_count(x, &n, PFS_STRIPE_TARGETS_MAX, 4)) return;
    if (pfs_xdr_decoding(x)) l.targets.resize(n);
    for (auto& t : l.targets) pfs_x_u32(x, &t);
}

// A detached inode's entry: journal and snapshot (version 3 on).
inline void xfer(pfs_xdr* x, RemoteParent& r) {
    xfer(x, r.dir);
    xfer(x, r.state);
    if (pfs_xdr_decoding(x) && r.state > PFS_DETACHED_MOVING && !x->err) x->err = -EBADMSG;
    xfer(x, r.from);
}

// Presence byte, then the value.
template <class T>
void xfer(pfs_xdr* x, std::optional<T>& v) {
    bool present = v.has_value();
    xfer(x, present);
    if (!present) return;
    if (pfs_xdr_decoding(x)) v.emplace();
    xfer(x, *v);
}

// Encoding passes const data through the same functions; the codec does not
// write in that mode.
template <class T>
T& unconst(const T& v) {
    return const_cast<T&>(v);
}

}  // namespace pfs::meta::codec
