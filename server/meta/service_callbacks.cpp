// Cache coherence in pfs-meta: which client was answered about which entry,
// and notices (PFS_MSG_INVALIDATE) to the others when one changes it.
#include <map>

#include "service.hpp"

namespace pfs::meta {
namespace {

// A connection this far behind on reading gets no notices: they are hints,
// and queueing more for a stalled peer would only grow its backlog.
constexpr size_t kNoticeBacklogMax = 1u << 20;

}  // namespace

void Service::watched(const Request& req, const pfs_entry_id& id) {
    callbacks_.watch(req.frame.header.client_id, id);
}

void Service::changed(const Request& req, std::span<const pfs_entry_id> ids) {
    std::map<uint64_t, pfs_invalidate> notices;
    for (const auto& id : ids) {
        for (uint64_t client : callbacks_.changed(id, req.frame.header.client_id)) {
            auto& n = notices[client];
            if (n.count < PFS_INVALIDATE_MAX) n.ids[n.count++] = id;
        }
    }
    for (const auto& [client, notice] : notices) {
        auto it = notice_conns_.find(client);
        if (it == notice_conns_.end()) continue;
        auto conn = it->second.lock();
        if (!conn || !conn->is_open() || conn->queued_bytes() > kNoticeBacklogMax) continue;
        auto body = encode(pfs_x_invalidate, notice);
        if (!body) continue;
        // Named in the header: clients that share connections (libpfs) route by it.
        Frame frame{make_header(PFS_MSG_INVALIDATE, PFS_FLAG_NOTIFY), std::move(*body)};
        frame.header.client_id = client;
        conn->send(frame);
    }
}

}  // namespace pfs::meta
