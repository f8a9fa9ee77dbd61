// Small helpers shared by the request handlers of pfs-meta's Service.
#pragma once

#include <string>

#include "rpc_server.hpp"
#include "wire_convert.hpp"

namespace pfs::meta {

template <class M>
Result<M> body(const Request& req, int (*xfer)(pfs_xdr*, M*)) {
    return decode(req.frame.payload, xfer);
}

// The time a change made now is stamped with.
inline Timespec now() { return wall_clock_now(); }

inline Reply malformed(uint16_t type) {
    return Reply::fail(PFS_E_PROTO, std::string("malformed ") + pfs_msg_name(type));
}

template <class M>
Result<Reply> ok_with(int (*xfer)(pfs_xdr*, M*), M msg) {
    auto b = encode(xfer, msg);
    if (!b) return b.error();
    return Reply::ok(std::move(*b));
}

}  // namespace pfs::meta
