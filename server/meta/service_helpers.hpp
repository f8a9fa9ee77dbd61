// Small helpers shared by the request handlers of pfs-meta's Service.
#pragma once

#include <set>
#include <string>

#include "entry_key.hpp"

#include "rpc_server.hpp"
#include "wire_convert.hpp"

namespace pfs::meta {

// Holds a key in a set for as long as it lives, if it was not there yet.
class Holding {
public:
    Holding(std::set<EntryKey>& set, EntryKey key) : set_(set), key_(key), held_(set.insert(key).second) {}
    ~Holding() {
        if (held_) set_.erase(key_);
    }
    Holding(const Holding&) = delete;
    Holding& operator=(const Holding&) = delete;
    bool held() const { return held_; }

private:
    std::set<EntryKey>& set_;
    EntryKey key_;
    bool held_;
};

// Holds a count up for as long as it lives.
class Counted {
public:
    explicit Counted(uint32_t& n) : n_(n) { ++n_; }
    ~Counted() { --n_; }
    Counted(const Counted&) = delete;
    Counted& operator=(const Counted&) = delete;

private:
    uint32_t& n_;
};

// Decoded on the connection's loop where the route says how (Service::install).
template <class M>
Result<M> body(Request& req, int (*xfer)(pfs_xdr*, M*)) {
    return request_body(req, xfer);
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
