// Client sessions and advisory locks in pfs-meta: LOCK, GETLK,
// SESSION_RENEW and SESSION_END, opens recorded per client, and the end of
// sessions whose client went silent. Nothing here is journaled: locks and
// sessions are lost with a restart (as NFSv3's NLM and BeeGFS's locks are),
// and the namespace purges what a crash left unlinked but open.
#include <algorithm>
#include <cstdio>

#include "log.hpp"
#include "service.hpp"
#include "service_helpers.hpp"

namespace pfs::meta {
namespace {

using namespace std::chrono_literals;

LockRequest from_wire(const pfs_lock_req& m, uint64_t client) {
    LockRequest r{m.id, m.kind, m.type, m.start, m.end, LockOwner{client, m.owner}, m.pid};
    if (r.kind == PFS_LOCK_FLOCK) {  // whole file, whatever the range says
        r.start = 0;
        r.end = PFS_LOCK_EOF;
    }
    return r;
}

std::string hex(uint64_t v) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
    return buf;
}

}  // namespace

Status Service::open_for(uint64_t client, const pfs_entry_id& id) {
    // A session that ended while the request waited (it expired) would
    // keep no record of the open, and nothing would ever close it.
    if (client && !sessions_.has(client)) return Error{-ESTALE, "the client's session ended during the open"};
    if (auto st = ns_->open(id); !st) return st;
    if (client)
        sessions_.add_open(client, id);
    else
        ++sessionless_opens_[EntryKey::of(id)];
    return ok_status();
}

Result<std::optional<FreedFile>> Service::close_for(uint64_t client, const pfs_entry_id& id) {
    // A client closes only what its session opened: an open the session
    // lost (it expired, or the server restarted) is not another one's.
    if (client && !sessions_.remove_open(client, id))
        return Error{-EBADF, "inode " + std::to_string(id.ino) + " is not open by this client"};
    if (!client) {
        auto it = sessionless_opens_.find(EntryKey::of(id));
        if (it == sessionless_opens_.end())
            return Error{-EBADF, "inode " + std::to_string(id.ino) + " has no open without a client id"};
        if (--it->second == 0) sessionless_opens_.erase(it);
    }
    return ns_->close(id);
}

awaitable<Reply> Service::on_lock(Request& req) {
    auto m = body(req, pfs_x_lock_req);
    if (!m) co_return malformed(PFS_MSG_LOCK);
    uint64_t client = req.frame.header.client_id;
    if (!client) co_return Reply::fail(EINVAL, "locks belong to a client session: client_id is 0");
    if (m->type != PFS_LOCK_UNLOCK) {
        if (auto attr = ns_->getattr(m->id); !attr) co_return Reply::from(attr.error());
    }
    auto st = locks_.set(from_wire(*m, client));
    co_return st ? Reply::ok() : Reply::from(st.error());
}

awaitable<Reply> Service::on_getlk(Request& req) {
    auto m = body(req, pfs_x_lock_req);
    if (!m) co_return malformed(PFS_MSG_GETLK);
    if (m->type == PFS_LOCK_UNLOCK) co_return Reply::fail(EINVAL, "GETLK needs a read or write lock to test");
    if (auto attr = ns_->getattr(m->id); !attr) co_return Reply::from(attr.error());
    pfs_lock_conflict c{PFS_LOCK_UNLOCK, 0, 0, 0, 0};
    if (auto held = locks_.conflict(from_wire(*m, req.frame.header.client_id)))
        c = pfs_lock_conflict{held->type, held->start, held->end, held->pid, held->who.client};
    co_return Reply::ok(*encode(pfs_x_lock_conflict, c));
}

awaitable<Reply> Service::on_session_renew(Request& req) {
    if (!req.frame.payload.empty()) co_return malformed(PFS_MSG_SESSION_RENEW);
    if (!req.frame.header.client_id) co_return Reply::fail(EINVAL, "no client_id to renew");
    // The renewal itself happened on the way in (every request renews).
    auto ms = std::min<int64_t>(sessions_.timeout().count(), UINT32_MAX);
    co_return Reply::ok(*encode(pfs_x_session, pfs_session{static_cast<uint32_t>(ms)}));
}

awaitable<Reply> Service::on_session_end(Request& req) {
    if (!req.frame.payload.empty()) co_return malformed(PFS_MSG_SESSION_END);
    uint64_t client = req.frame.header.client_id;
    if (!client) co_return Reply::fail(EINVAL, "no client_id to end");
    auto ended = sessions_.end(client);
    if (ended) co_await end_session(*ended, "ended");
    co_return Reply::ok();
}

awaitable<void> Service::end_session(const EndedSession& ended, const char* why) {
    notice_conns_.erase(ended.client);
    size_t locks = locks_.release_client(ended.client);
    std::vector<FreedFile> freed;
    size_t closed = 0;
    for (const auto& [id, n] : ended.opens) {
        // It may have written without reporting: its st_blocks is counted again.
        ns_->blocks_changed(id);
        for (uint32_t i = 0; i < n; ++i) {
            auto f = ns_->close(id);
            if (!f) break;  // gone meanwhile
            ++closed;
            if (*f) freed.push_back(std::move(**f));
        }
    }
    if (locks > 0 || closed > 0)
        log::info(std::string("client session ") + why,
                  {{"client", hex(ended.client)}, {"locks", locks}, {"opens", closed}});
    if (freed.empty()) co_return;
    // The purges are journaled: durable before any chunk goes.
    auto st = co_await durable_();
    if (!st) {
        log::error("purge of files a client held open not durable", {{"error", st.error().message}});
        co_return;
    }
    for (auto& f : freed) {
        locks_.release_file(f.id);
        delete_chunks(std::move(f));
    }
}

awaitable<void> Service::expire_sessions() {
    asio::steady_timer timer(ex_);
    auto tick = std::clamp<std::chrono::milliseconds>(sessions_.timeout() / 4, 50ms, 1000ms);
    for (;;) {
        timer.expires_after(tick);
        boost::system::error_code ec;
        co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        if (ec) co_return;
        if (!ns_) continue;
        auto expired = sessions_.expire(Sessions::Clock::now());
        for (const auto& ended : expired) {
            // Expired over a connection that stays open: notices for its
            // watches go nowhere until it comes back, so it is owed one.
            if (notify(ended.client, PFS_MSG_INVALIDATE_ALL, {}) != Notice::no_connection)
                owe_reset_.insert(ended.client);
            co_await end_session(ended, "expired");
        }
    }
}

}  // namespace pfs::meta
