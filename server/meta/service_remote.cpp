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
#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>

#include "log.hpp"
#include "meta_admin.hpp"
#include "service.hpp"
#include "service_helpers.hpp"
#include "wire_convert.hpp"

namespace pfs::meta {

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
        // A metadata server that registered a moment ago may be in the
        // client's map before it is in ours: look again before refusing.
        if (!DirPlacement::check(m->node, cluster_.meta_nodes())) co_await reload_map();
        if (auto st = DirPlacement::check(m->node, cluster_.meta_nodes()); !st) co_return Reply::from(st.error());
    }
    if (auto st = allowed(req, m->dir, W_OK | X_OK); !st) co_return Reply::from(st.error());
    co_return co_await make_dir(req, m->dir, m->name, m->mode, m->node, m->stripes);
}

awaitable<Reply> Service::make_dir(const Request& req, const pfs_entry_id& dir, std::string_view name,
                                   uint32_t mode, uint32_t node, uint32_t stripes) {
    const uint32_t self = ns_->owner_node();
    const Caller who = caller(req);
    auto plan = ns_->plan_dir(dir, name, mode, who.uid, who.gid);
    if (!plan) co_return Reply::from(plan.error());
    auto shards = stripes_for(stripes, plan->pattern);
    if (!shards) {
        // A metadata server that came up a moment ago may be in the
        // client's map before it is in ours.
        co_await reload_map();
        shards = stripes_for(stripes, plan->pattern);
    }
    if (!shards) co_return Reply::from(shards.error());
    // Asked for: its subdirectories are striped so too.
    if (stripes > 0) plan->pattern.dir_stripes = stripes;
    // A striped directory's other shards spread it already: its first one
    // stays with its entry, so that looking it up costs no second server.
    // So does a directory made in a striped one (its names spread it), and
    // its ".." is then the striped directory, not a shard of it.
    const bool in_striped = [&] {
        auto parent = ns_->shards(dir);
        return parent && parent->striped();
    }();
    if (node == 0) node = *shards > 1 || in_striped ? self : placement_.choose(self, cluster_.meta_nodes());
    if (node != self) co_return co_await make_remote_dir(req, dir, name, *plan, node, *shards);
    if (*shards > 1) {
        auto made = co_await make_striped_dir(dir, name, *plan, *shards, false);
        const auto id = made ? made->id : pfs_entry_id{};
        auto answer = co_await added_reply(req, dir, std::move(made));
        if (answer.status == PFS_OK) co_await confirm_shards(id);
        co_return answer;
    }
    co_return co_await added_reply(
        req, dir, ns_->mkdir(dir, name, mode, who.uid, who.gid, now(), {}, plan->pattern.dir_stripes));
}

awaitable<Reply> Service::make_remote_dir(const Request& req, const pfs_entry_id& dir, std::string_view name,
                                          const Namespace::NewDir& plan, uint32_t node, uint32_t stripes) {
    pfs_mkdir_detached md{dir, plan.mode, plan.uid, plan.gid, to_wire(plan.pattern), stripes, 0};
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
    auto answer = co_await finish(Reply::ok(std::move(*made)));
    // Named durably: settled at once, so that it may move (a rename right
    // after the mkdir) without waiting for its server's next round.
    if (answer.status == PFS_OK) co_await confirm_detached(std::span<const pfs_entry_id>(&attr->id, 1));
    co_return answer;
}

// ---- on the detached directory's server ----

awaitable<Reply> Service::on_mkdir_detached(Request& req) {
    auto m = body(req, pfs_x_mkdir_detached);
    if (!m) co_return malformed(PFS_MSG_MKDIR_DETACHED);
    const bool striped = m->shard_index == 0 && m->stripes > 1;
    Result<Attr> attr = Error{-EIO, ""};
    if (striped) {
        Namespace::NewDir plan{m->mode, m->uid, m->gid, from_wire(m->pattern)};
        attr = co_await make_striped_dir(m->parent, {}, plan, m->stripes, true);
    } else {
        attr = ns_->mkdir_detached(m->parent, m->mode, m->uid, m->gid, from_wire(m->pattern), now(), {},
                                   DirShards{.index = m->shard_index, .count = m->stripes, .ids = {}});
    }
    if (!attr) co_return Reply::from(attr.error());
    // Its shards are confirmed with it, once the parent's server has named
    // it durably (PFS_RMDIR_CONFIRM, or the settle round).
    co_return co_await finish(ok_with(pfs_x_attr, to_wire(*attr)));
}

awaitable<Reply> Service::on_rmdir_detached(Request& req) {
    auto m = body(req, pfs_x_rmdir_detached);
    if (!m) co_return malformed(PFS_MSG_RMDIR_DETACHED);
    Status st = ok_status();
    std::optional<FreedFile> freed;
    // A striped directory's other shards are held empty first.
    const auto shards = ns_->shards(m->id);
    const bool striped = shards && shards->index == 0 && shards->striped();
    switch (m->phase) {
    case PFS_RMDIR_PREPARE: {
        // Its shards hear PENDING (entry_pending) from the first PREPARE to
        // REMOVING, not PRESENT.
        Holding busy(busy_, EntryKey::of(m->id));
        if (!busy.held()) {
            st = Error{-EBUSY, "the directory is being removed or moved"};
            break;
        }
        if (striped) st = co_await tell_held(shards->others(), PFS_RMDIR_PREPARE);
        if (!st) break;
        st = ns_->set_detached_state(m->id, PFS_DETACHED_REMOVING);
        if (!st && striped) co_await tell_held(shards->others(), PFS_RMDIR_ABORT);
        break;
    }
    case PFS_RMDIR_ABORT:
        st = ns_->set_detached_state(m->id, PFS_DETACHED_CONFIRMED);
        if (striped) co_await tell_held(shards->others(), PFS_RMDIR_ABORT);
        break;
    case PFS_RMDIR_CONFIRM: {
        // Only a directory still CREATED: one whose removal was prepared
        // since stays so.
        auto state = ns_->detached_state(m->id);
        if (!state) st = state.error();
        else if (state->state == PFS_DETACHED_CREATED) st = ns_->set_detached_state(m->id, PFS_DETACHED_CONFIRMED);
        if (st && striped) {
            // Durably named now: so are its shards (once this is durable).
            if (auto durable = co_await durable_(); !durable) st = durable.error();
            else co_await confirm_shards(m->id);
        }
        break;
    }
    default: {
        // Only a prepared removal: an entry still names anything else.
        auto state = ns_->detached_state(m->id);
        if (!state) {
            // Settled away already: done all the same.
            if (state.error().code != -ESTALE) st = state.error();
        } else if (state->state != PFS_DETACHED_REMOVING) {
            st = Error{-EBUSY, "the inode's removal was not prepared"};
        } else if (auto removed = ns_->remove_detached(m->id); !removed) {
            st = removed.error();
        } else {
            freed = std::move(*removed);
        }
        break;
    }
    }
    if (!st) co_return Reply::from(st.error());
    const pfs_entry_id ids[] = {m->id};
    changed(req, ids);
    auto answer = co_await finish(Reply::ok(), std::move(freed));
    if (striped && m->phase == PFS_RMDIR_COMMIT && answer.status == PFS_OK)
        co_await tell_held(shards->others(), PFS_RMDIR_COMMIT);
    co_return answer;
}

bool Service::entry_pending(const pfs_entry_id& id) const {
    auto in_flight = mkdirs_in_flight_.find(id.owner_node);
    if (busy_.contains(EntryKey::of(id)) || (in_flight != mkdirs_in_flight_.end() && in_flight->second > 0))
        return true;
    // A shard of a striped directory whose removal is under way here, or
    // prepared by its parent's server: what becomes of it is not decided.
    auto dir = ns_->holder_of(id);
    if (!dir) return false;
    auto shards = ns_->shards(*dir);
    if (!shards || std::none_of(shards->ids.begin(), shards->ids.end(), [&](const pfs_entry_id& s) { return same_id(s, id); }))
        return false;
    if (busy_.contains(EntryKey::of(*dir))) return true;
    // Detached: until its own entry is durably there (CONFIRMED), or while
    // its removal is prepared.
    auto state = ns_->detached_state(*dir);
    return state && state->state != PFS_DETACHED_CONFIRMED;
}

awaitable<Reply> Service::on_entry_check(Request& req) {
    auto m = body(req, pfs_x_entry_check);
    if (!m) co_return malformed(PFS_MSG_ENTRY_CHECK);
    // Decided now, answered once every op applied so far is durable: an
    // entry seen here is on disk by the time the answer goes.
    pfs_entry_states states{m->count, {}};
    for (uint32_t i = 0; i < m->count; ++i) {
        const auto& id = m->ids[i];
        if (entry_pending(id)) states.states[i] = PFS_ENTRY_PENDING;
        else states.states[i] = ns_->names(id) ? PFS_ENTRY_PRESENT : PFS_ENTRY_ABSENT;
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

namespace {

bool same_place(const RemoteParent& a, const RemoteParent& b) {
    return a.state == b.state && same_id(a.dir, b.dir) && same_id(a.from, b.from);
}

}  // namespace

awaitable<void> Service::settle_detached_once() {
    auto unsettled = ns_->unsettled();
    if (unsettled.empty()) co_return;
    // Each server is asked once about every inode its entries may name.
    std::map<uint32_t, std::vector<pfs_entry_id>> questions;
    auto ask = [&](const pfs_entry_id& dir, const pfs_entry_id& id) {
        if (!ns_->is_local(dir)) questions[dir.owner_node].push_back(id);
    };
    for (const auto& d : unsettled) {
        ask(d.remote.dir, d.id);
        if (d.remote.moving()) ask(d.remote.from, d.id);
    }
    std::map<std::pair<uint32_t, EntryKey>, uint8_t> answers;
    for (const auto& [node, ids] : questions) {
        auto states = co_await client::entry_states(cluster_, node, ids);
        if (!states) continue;  // asked again next round
        for (size_t i = 0; i < ids.size(); ++i) answers[{node, EntryKey::of(ids[i])}] = (*states)[i];
    }
    // Whether dir durably names id; nullopt: not known yet.
    auto names = [&](const pfs_entry_id& dir, const pfs_entry_id& id) -> std::optional<bool> {
        if (ns_->is_local(dir)) return ns_->entry_name(dir, id).has_value();
        auto it = answers.find({dir.owner_node, EntryKey::of(id)});
        if (it == answers.end() || it->second == PFS_ENTRY_PENDING) return std::nullopt;
        return it->second == PFS_ENTRY_PRESENT;
    };
    std::vector<FreedFile> freed;
    for (const auto& d : unsettled) {
        // Under way here, or changed while the questions were out (a
        // removal prepared, say): the answers are about what was.
        if (busy_.contains(EntryKey::of(d.id))) continue;
        auto state = ns_->detached_state(d.id);
        if (!state || !same_place(*state, d.remote)) continue;
        auto in_dir = names(d.remote.dir, d.id);
        if (!in_dir) continue;
        if (d.remote.moving()) {
            auto in_from = names(d.remote.from, d.id);
            if (in_from) co_await settle_move(d, *in_from, *in_dir);
            continue;
        }
        if (*in_dir) {
            if (auto st = ns_->set_detached_state(d.id, PFS_DETACHED_CONFIRMED); !st)
                log::error("detached inode not confirmed", {{"ino", d.id.ino}, {"error", st.error().message}});
        } else if (auto removed = ns_->remove_detached(d.id); !removed) {
            log::error("detached inode not removed", {{"ino", d.id.ino}, {"error", removed.error().message}});
        } else if (*removed) {
            freed.push_back(std::move(**removed));
        }
    }
    if (auto st = co_await durable_(); !st) {
        log::error("settled inodes not durable", {{"error", st.error().message}});
        co_return;
    }
    for (auto& f : freed) delete_chunks(std::move(f));
}

awaitable<void> Service::settle_move(const Detached& d, bool from_names, bool to_names) {
    const auto& r = d.remote;
    auto settle_at = [&](const pfs_entry_id& dir) {
        if (auto st = ns_->set_remote(d.id, settled_in(dir)); !st)
            log::error("moved inode not settled", {{"ino", d.id.ino}, {"error", st.error().message}});
    };
    if (!from_names && !to_names) {
        log::error("no entry names a moved inode", {{"ino", d.id.ino}});
        co_return;
    }
    if (!to_names) co_return settle_at(r.from);  // the move never reached its target
    if (from_names) {
        // Cut short between adding the new entry and dropping the old one:
        // finish the move, the client was never answered.
        Status dropped = ok_status();
        if (ns_->is_local(r.from)) {
            dropped = ns_->drop_entry(r.from, d.id, now());
        } else if (auto done = co_await cluster_.call_meta_ok(r.from.owner_node, PFS_MSG_ENTRY_DROP,
                                                               encode(pfs_x_entry_id, d.id));
                   !done) {
            dropped = done.error();
        }
        if (!dropped) {
            log::warn("old entry of a moved inode not dropped yet", {{"ino", d.id.ino}, {"error", dropped.error().message}});
            co_return;
        }
    }
    settle_at(r.dir);
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
