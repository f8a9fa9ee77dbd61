// Directories across metadata servers (namespace_remote.cpp has the model).
//
// mkdir of a directory placed on server B, asked of A (the parent's owner):
//   A: checks the name, asks B for a detached directory (MKDIR_DETACHED)
//   B: makes it CREATED, durably, answers its attributes
//   A: adds the entry naming it, durably, answers the client
// rmdir of it, asked of A:
//   A: asks B to prepare (RMDIR_DETACHED PREPARE)
//   B: checks it is empty, makes it REMOVING (no new entries), durably
//   A: removes the entry, durably, answers, then tells B to COMMIT
//   B: removes the directory
// A crash anywhere leaves B's directory CREATED or REMOVING. B settles such
// directories in the background: ENTRY_CHECK asks A whether an entry
// durably names each one; A answers PENDING while an operation on it (or
// any MKDIR_DETACHED to B) is under way. Named: B confirms it (CONFIRMED,
// accepting entries again); not named: B removes it, which is safe as no
// client was ever told its id (mkdir) or its entry is durably gone (rmdir).
// So no entry names a missing directory, and no directory stays unnamed.
#include <sys/stat.h>

#include <chrono>

#include "log.hpp"
#include "meta_admin.hpp"
#include "service.hpp"
#include "service_helpers.hpp"
#include "wire_convert.hpp"

namespace pfs::meta {
namespace {

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

}  // namespace

awaitable<Reply> Service::remote_attr(const pfs_entry_id& id) {
    // No client session on the owner: the requester caches the answer for
    // its attribute lifetime, and asks the owner itself from then on.
    auto body = co_await cluster_.call_meta_ok(id.owner_node, PFS_MSG_GETATTR, encode(pfs_x_entry_id, id));
    if (!body) co_return Reply::from(body.error());
    co_return Reply::ok(std::move(*body));
}

awaitable<Reply> Service::on_mkdir_on(Request& req) {
    auto m = body(req, pfs_x_mkdir_on);
    if (!m) co_return malformed(PFS_MSG_MKDIR_ON);
    if (m->node != 0) {
        if (auto st = DirPlacement::check(m->node, cluster_.meta_nodes()); !st) co_return Reply::from(st.error());
    }
    co_return co_await make_dir(req, m->dir, m->name, m->mode, m->node);
}

awaitable<Reply> Service::make_dir(const Request& req, const pfs_entry_id& dir, std::string_view name,
                                   uint32_t mode, uint32_t node) {
    const uint32_t self = ns_->owner_node();
    if (node == 0) node = placement_.choose(self, cluster_.meta_nodes());
    if (node != self) {
        auto plan = ns_->plan_dir(dir, name, mode, req.frame.header.uid, req.frame.header.gid);
        if (!plan) co_return Reply::from(plan.error());
        co_return co_await make_remote_dir(req, dir, name, *plan, node);
    }
    co_return co_await added_reply(req, dir,
                                   ns_->mkdir(dir, name, mode, req.frame.header.uid, req.frame.header.gid, now()));
}

awaitable<Reply> Service::make_remote_dir(const Request& req, const pfs_entry_id& dir, std::string_view name,
                                          const Namespace::NewDir& plan, uint32_t node) {
    pfs_mkdir_detached md{dir, plan.mode, plan.uid, plan.gid, to_wire(plan.pattern)};
    Result<Bytes> made = Error{-EIO, ""};
    {
        Counted in_flight(mkdirs_in_flight_[node]);
        made = co_await cluster_.call_meta_ok(node, PFS_MSG_MKDIR_DETACHED, encode(pfs_x_mkdir_detached, md));
    }
    if (!made) {
        // Its directory, if made, is settled away by its server.
        log::warn("directory not made on another metadata server",
                  {{"node", node}, {"error", made.error().message}});
        co_return Reply::from(made.error());
    }
    auto attr = decode(*made, pfs_x_attr);
    if (!attr || !S_ISDIR(attr->mode) || attr->id.owner_node != node)
        co_return Reply::fail(PFS_E_PROTO, "bad MKDIR_DETACHED reply");
    // A name taken meanwhile fails here, and leaves the directory unnamed.
    auto added = ns_->add_remote_dir(dir, name, attr->id, now());
    if (!added) co_return Reply::from(added.error());
    changed(req, std::span<const pfs_entry_id>(&dir, 1));
    co_return co_await finish(Reply::ok(std::move(*made)));
}

awaitable<Reply> Service::remove_remote_dir(const Request& req, const pfs_entry_id& dir, std::string_view name,
                                            const pfs_entry_id& id) {
    const auto key = EntryKey::of(id);
    if (!removing_.insert(key).second) co_return Reply::fail(EBUSY, "the directory is being removed");
    auto tell = [this, id](uint8_t phase) -> awaitable<Status> {
        pfs_rmdir_detached rd{id, phase};
        auto r = co_await cluster_.call_meta_ok(id.owner_node, PFS_MSG_RMDIR_DETACHED, encode(pfs_x_rmdir_detached, rd));
        if (!r) co_return r.error();
        co_return ok_status();
    };
    auto prepared = co_await tell(PFS_RMDIR_PREPARE);
    Result<Reply> reply = Reply::ok();
    bool removed = false;
    if (!prepared) {
        reply = prepared.error();
    } else if (auto slot = ns_->resolve(dir, name); !slot || !same_id(slot->id, id)) {
        // Renamed or replaced meanwhile: the directory stays.
        co_await tell(PFS_RMDIR_ABORT);
        reply = Error{-EBUSY, "the entry changed while it was being removed"};
    } else if (auto out = ns_->rmdir(dir, name, now()); !out) {
        co_await tell(PFS_RMDIR_ABORT);
        reply = out.error();
    } else {
        const pfs_entry_id ids[] = {dir, id};
        changed(req, ids);
        removed = true;
    }
    auto answer = co_await finish(std::move(reply));
    // Once the entry is durably gone; a lost COMMIT is settled by the owner.
    if (removed && answer.status == PFS_OK) {
        if (auto st = co_await tell(PFS_RMDIR_COMMIT); !st)
            log::warn("removal of a directory on another server left to settle", {{"error", st.error().message}});
    }
    removing_.erase(key);
    co_return answer;
}

// ---- on the detached directory's server ----

awaitable<Reply> Service::on_mkdir_detached(Request& req) {
    auto m = body(req, pfs_x_mkdir_detached);
    if (!m) co_return malformed(PFS_MSG_MKDIR_DETACHED);
    auto attr = ns_->mkdir_detached(m->parent, m->mode, m->uid, m->gid, from_wire(m->pattern), now());
    if (!attr) co_return Reply::from(attr.error());
    co_return co_await finish(ok_with(pfs_x_attr, to_wire(*attr)));
}

awaitable<Reply> Service::on_rmdir_detached(Request& req) {
    auto m = body(req, pfs_x_rmdir_detached);
    if (!m) co_return malformed(PFS_MSG_RMDIR_DETACHED);
    Status st = ok_status();
    switch (m->phase) {
    case PFS_RMDIR_PREPARE: st = ns_->set_detached_state(m->id, PFS_DETACHED_REMOVING); break;
    case PFS_RMDIR_ABORT: st = ns_->set_detached_state(m->id, PFS_DETACHED_CONFIRMED); break;
    default: {
        // Only a prepared removal: an entry still names anything else.
        auto state = ns_->detached_state(m->id);
        if (!state) {
            // Settled away already: done all the same.
            if (state.error().code != -ESTALE) st = state.error();
        } else if (*state != PFS_DETACHED_REMOVING) {
            st = Error{-EBUSY, "the directory's removal was not prepared"};
        } else {
            st = ns_->remove_detached(m->id);
        }
        break;
    }
    }
    if (!st) co_return Reply::from(st.error());
    const pfs_entry_id ids[] = {m->id};
    changed(req, ids);
    co_return co_await finish(Reply::ok());
}

awaitable<Reply> Service::on_entry_check(Request& req) {
    auto m = body(req, pfs_x_entry_check);
    if (!m) co_return malformed(PFS_MSG_ENTRY_CHECK);
    // Decided now, answered once every op applied so far is durable: an
    // entry seen here is on disk by the time the answer goes.
    pfs_entry_states states{m->count, {}};
    for (uint32_t i = 0; i < m->count; ++i) {
        const auto& id = m->ids[i];
        auto in_flight = mkdirs_in_flight_.find(id.owner_node);
        if (removing_.contains(EntryKey::of(id)) || (in_flight != mkdirs_in_flight_.end() && in_flight->second > 0))
            states.states[i] = PFS_ENTRY_PENDING;
        else
            states.states[i] = ns_->names(id) ? PFS_ENTRY_PRESENT : PFS_ENTRY_ABSENT;
    }
    co_return co_await finish(ok_with(pfs_x_entry_states, states));
}

awaitable<Reply> Service::on_list_detached(Request& req) {
    auto m = body(req, pfs_x_list_detached);
    if (!m) co_return malformed(PFS_MSG_LIST_DETACHED);
    auto dirs = ns_->detached(m->after, PFS_DETACHED_PAGE_MAX + 1);
    pfs_detached_page page{};
    page.eof = dirs.size() <= PFS_DETACHED_PAGE_MAX;
    for (const auto& d : dirs) {
        if (page.count == PFS_DETACHED_PAGE_MAX) break;
        page.dirs[page.count++] = pfs_detached_dir{d.id, d.remote.dir, d.remote.state};
    }
    co_return Reply::ok(*encode(pfs_x_detached_page, page));
}

awaitable<void> Service::settle_detached_once() {
    auto unsettled = ns_->unsettled();
    if (unsettled.empty()) co_return;
    std::map<uint32_t, std::vector<DetachedDir>> by_owner;
    for (auto& d : unsettled) by_owner[d.remote.dir.owner_node].push_back(d);
    for (auto& [owner, dirs] : by_owner) {
        std::vector<pfs_entry_id> ids;
        for (const auto& d : dirs) ids.push_back(d.id);
        auto states = co_await client::entry_states(cluster_, owner, ids);
        if (!states) continue;  // asked again next round
        for (size_t i = 0; i < dirs.size(); ++i) {
            const auto& id = dirs[i].id;
            // Changed while the question was out (a removal prepared,
            // say): the answer is about what was, ask again later.
            auto state = ns_->detached_state(id);
            if (!state || *state != dirs[i].remote.state) continue;
            Status st = ok_status();
            if ((*states)[i] == PFS_ENTRY_PRESENT)
                st = ns_->set_detached_state(id, PFS_DETACHED_CONFIRMED);
            else if ((*states)[i] == PFS_ENTRY_ABSENT)
                st = ns_->remove_detached(id);
            if (!st && st.error().code != -ESTALE)
                log::error("detached directory not settled", {{"ino", id.ino}, {"error", st.error().message}});
        }
    }
    if (auto st = co_await durable_(); !st) log::error("settled directories not durable", {{"error", st.error().message}});
}

awaitable<void> Service::settle_detached(std::chrono::milliseconds period) {
    asio::steady_timer timer(ex_);
    for (;;) {
        co_await settle_detached_once();
        timer.expires_after(period);
        boost::system::error_code ec;
        co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        if (ec) co_return;
    }
}

}  // namespace pfs::meta
