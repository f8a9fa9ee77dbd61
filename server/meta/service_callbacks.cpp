// Cache coherence in pfs-meta: which client was answered about which entry,
// and notices (PFS_MSG_INVALIDATE) to the others when one changes it. A
// notice that cannot be delivered, or a table that forgets everything,
// becomes PFS_MSG_INVALIDATE_ALL: clients trust names for as long as they
// hear nothing, so silence must mean nothing changed.
#include <map>

#include "service.hpp"

namespace pfs::meta {
namespace {

// A connection this far behind on reading gets no more notices: queueing
// more for a stalled peer would only grow its backlog. It is owed an
// INVALIDATE_ALL instead.
constexpr size_t kNoticeBacklogMax = 1u << 20;

}  // namespace

void Service::watched(const Request& req, const pfs_entry_id& id) {
    auto resets = callbacks_.resets();
    callbacks_.watch(req.frame.header.client_id, id);
    if (callbacks_.resets() != resets) tell_all_forgotten();
}

void Service::changed(const Request& req, std::span<const pfs_entry_id> ids) {
    auto resets = callbacks_.resets();
    std::map<uint64_t, pfs_invalidate> notices;
    for (const auto& id : ids) {
        // A shard's watchers cache its names as the striped directory's.
        const auto master = ns_->shard_master(id);
        for (uint64_t client : callbacks_.changed(id, req.frame.header.client_id)) {
            auto& n = notices[client];
            if (n.count < PFS_INVALIDATE_MAX) n.ids[n.count++] = id;
            if (master && n.count < PFS_INVALIDATE_MAX) n.ids[n.count++] = *master;
        }
    }
    for (const auto& [client, notice] : notices) {
        auto body = encode(pfs_x_invalidate, notice);
        if (body && notify(client, PFS_MSG_INVALIDATE, std::move(*body)) == Notice::backlog) owe_reset_.insert(client);
    }
    if (callbacks_.resets() != resets) tell_all_forgotten();
}

// A client whose connection is gone saw it go, and with it the notices it
// would have carried (pfs.ko then trusts no name it cached): it is owed
// nothing. One whose connection is open but too far behind is.
//
// The connection may be served on another loop (--threads): the notice is
// sent there, queued behind what this loop handed it before (so ahead of
// the reply to the request being handled here) and dropped if the
// connection closed meanwhile.
Service::Notice Service::notify(uint64_t client, uint16_t type, Bytes body) {
    auto it = notice_conns_.find(client);
    if (it == notice_conns_.end()) return Notice::no_connection;
    auto conn = it->second.lock();
    if (!conn) return Notice::no_connection;
    if (conn->queued_bytes() > kNoticeBacklogMax) return Notice::backlog;
    // Named in the header: clients that share connections (libpfs) route by it.
    Frame frame{make_header(type, PFS_FLAG_NOTIFY), std::move(body)};
    frame.header.client_id = client;
    asio::dispatch(conn->executor(), [conn, frame = std::move(frame)] {
        if (conn->is_open()) conn->send(frame);
    });
    return Notice::sent;
}

void Service::tell_all_forgotten() {
    for (const auto& [client, conn] : notice_conns_)
        if (notify(client, PFS_MSG_INVALIDATE_ALL, {}) == Notice::backlog) owe_reset_.insert(client);
}

void Service::settle_notices(const Request& req) {
    uint64_t client = req.frame.header.client_id;
    // Sent before this request's reply, on the same connection: the client
    // sees it before anything it learns from the reply.
    if (owe_reset_.contains(client) && notify(client, PFS_MSG_INVALIDATE_ALL, {}) == Notice::sent)
        owe_reset_.erase(client);
}

}  // namespace pfs::meta
