// Renames across metadata servers. The inode keeps its id (and so its open
// handles and chunk files); only its entry moves. The server S of the
// source directory, asked by the client, coordinates:
//   1. the inode's owner O records the move, MOVING from -> to (durably;
//      O may be S itself)
//   2. the target directory's server D adds the entry (REMOTE_LINK),
//      replacing a local target as rename does; when D is O the inode is
//      named by a local entry again
//   3. S drops its own entry, durably, and answers the client
//   4. O records the inode's new place (MOVE COMMIT)
// A crash or a lost message between 1 and 4 leaves the inode MOVING on O,
// which settles it (settle_detached) by asking S and D whether their
// entries durably name it: only D's does: commit; only S's: abort; both:
// S drops its entry (ENTRY_DROP), then commit. S answers PENDING while it
// is still at it, so O never settles a move under way.
#include <dirent.h>
#include <sys/stat.h>

#include "log.hpp"
#include "namespace_checks.hpp"
#include "service.hpp"
#include "service_helpers.hpp"
#include "wire_convert.hpp"

namespace pfs::meta {
namespace {

// The request may or may not have been carried out: the answer was lost.
bool outcome_unknown(const Error& e) {
    switch (-e.code) {
        case ETIMEDOUT:
        case ECONNRESET:
        case ECONNABORTED:
        case EPIPE:
        case ENOTCONN:
        case ESHUTDOWN:
        case EIO: return true;
    }
    return false;
}

// How many directories up check_not_below walks before it gives up.
constexpr int kMaxDepth = 4096;

}  // namespace

awaitable<Status> Service::tell_owner(const pfs_entry_id& id, const pfs_entry_id& from, const pfs_entry_id& to,
                                      uint8_t phase, const Credentials* as) {
    pfs_move mv{id, from, to, phase};
    auto r = co_await cluster_.call_meta_ok(id.owner_node, PFS_MSG_MOVE, encode(pfs_x_move, mv), 0, as);
    if (!r) co_return r.error();
    co_return ok_status();
}

std::optional<RemoteParent> Service::settled_in(const pfs_entry_id& dir) const {
    if (ns_->is_local(dir)) return std::nullopt;
    return RemoteParent{.dir = dir, .state = PFS_DETACHED_CONFIRMED};
}

awaitable<Status> Service::check_not_below(const pfs_entry_id& moved, pfs_entry_id dir) {
    // Walks up from dir by "..", across servers. Two concurrent moves of
    // directories into each other's trees could both pass (see README).
    for (int depth = 0; depth < kMaxDepth; ++depth) {
        if (same_id(dir, moved)) co_return Error{-EINVAL, "cannot move a directory into itself"};
        pfs_entry_id parent{};
        if (ns_->is_local(dir)) {
            auto slot = ns_->resolve(dir, "..");
            if (!slot) co_return slot.error();
            parent = slot->id;
        } else {
            pfs_name_req q{dir, ".."};
            auto body = co_await cluster_.call_meta_ok(dir.owner_node, PFS_MSG_LOOKUP, encode(pfs_x_name_req, q));
            if (!body) co_return body.error();
            auto attr = decode(*body, pfs_x_attr);
            if (!attr) co_return Error{PFS_E_PROTO, "bad LOOKUP reply"};
            parent = attr->id;
        }
        if (same_id(parent, dir)) co_return ok_status();  // the root
        dir = parent;
    }
    co_return Error{-ELOOP, "directory tree too deep"};
}

awaitable<Reply> Service::move_across(const Request& req, const pfs_rename& m) {
    if (m.flags & ~(kRenameNoReplace | kRenameExchange) || m.flags == (kRenameNoReplace | kRenameExchange))
        co_return Reply::fail(EINVAL, "invalid rename flags");
    if (m.flags & kRenameExchange)
        co_return Reply::fail(EXDEV, "an exchange across metadata servers is not supported");
    if (is_dot(m.src_name)) co_return Reply::fail(EBUSY, "cannot rename '.' or '..'");
    if (is_dot(m.dst_name)) co_return Reply::fail((m.flags & kRenameNoReplace) ? EEXIST : EBUSY, "cannot rename onto '.' or '..'");
    auto slot = ns_->resolve(m.src_dir, m.src_name);
    if (!slot) co_return Reply::from(slot.error());
    const pfs_entry_id id = slot->id;
    const uint8_t type = slot->type;
    Holding busy(busy_, EntryKey::of(id));
    if (!busy.held()) co_return Reply::fail(EBUSY, "the entry is being moved or removed");
    const bool local = ns_->is_local(id);
    if (type == DT_DIR) {
        if (auto st = co_await check_not_below(id, m.dst_dir); !st) co_return Reply::from(st.error());
    }
    // The other servers check what is theirs for the client.
    const Caller who = caller(req);
    const Credentials as{who.uid, who.gid, who.groups};
    if (local && type == DT_DIR) {
        if (auto st = ns_->may_access(id, who, W_OK); !st) co_return Reply::from(st.error());
    }

    // 1. The owner records the move.
    const RemoteParent moving{.dir = m.dst_dir, .state = PFS_DETACHED_MOVING, .from = m.src_dir};
    if (local) {
        if (auto st = ns_->set_remote(id, moving); !st) co_return Reply::from(st.error());
        if (auto st = co_await durable_(); !st) co_return Reply::from(st.error());
    } else if (auto st = co_await tell_owner(id, m.src_dir, m.dst_dir, PFS_MOVE_PREPARE, &as); !st) {
        // Recorded or not, the move has not begun; a record left is settled.
        co_return Reply::from(st.error());
    }

    // 2. The target's server adds the entry.
    pfs_remote_link link{m.dst_dir, {}, id, type, (m.flags & kRenameNoReplace) ? PFS_REMOTE_LINK_NOREPLACE : 0u};
    if (!set_field(link.name, m.dst_name)) co_return Reply::fail(ENAMETOOLONG, "name too long");
    auto linked = co_await cluster_.call_meta_ok(m.dst_dir.owner_node, PFS_MSG_REMOTE_LINK,
                                                 encode(pfs_x_remote_link, link), 0, &as);
    if (!linked) {
        if (outcome_unknown(linked.error())) {
            log::warn("move across metadata servers left to settle", {{"ino", id.ino}, {"error", linked.error().message}});
            co_return Reply::from(linked.error());
        }
        Status undone = ok_status();
        if (local) {
            undone = ns_->set_remote(id, std::nullopt);
            if (undone) undone = co_await durable_();
        } else {
            undone = co_await tell_owner(id, m.src_dir, m.dst_dir, PFS_MOVE_ABORT);
        }
        if (!undone) log::warn("aborted move left to settle", {{"ino", id.ino}, {"error", undone.error().message}});
        co_return Reply::from(linked.error());
    }

    // 3. The source's entry goes.
    if (auto st = ns_->drop_entry(m.src_dir, m.src_name, id, now()); !st) {
        log::error("old entry of a moved inode not dropped", {{"ino", id.ino}, {"error", st.error().message}});
        co_return Reply::from(st.error());
    }
    if (local) {
        if (auto st = ns_->set_remote(id, settled_in(m.dst_dir)); !st)
            log::error("moved inode not confirmed", {{"ino", id.ino}, {"error", st.error().message}});
    }
    const pfs_entry_id ids[] = {m.src_dir, id};
    changed(req, ids);
    auto answer = co_await finish(Reply::ok());

    // 4. The owner records the new place; a lost COMMIT is settled there.
    if (!local && answer.status == PFS_OK) {
        if (auto st = co_await tell_owner(id, m.src_dir, m.dst_dir, PFS_MOVE_COMMIT); !st)
            log::warn("moved inode left to settle", {{"ino", id.ino}, {"error", st.error().message}});
    }
    co_return answer;
}

// ---- on the moved inode's owner ----

awaitable<Reply> Service::on_move(Request& req) {
    auto m = body(req, pfs_x_move);
    if (!m) co_return malformed(PFS_MSG_MOVE);
    auto now_at = ns_->detached_state(m->id);
    if (!now_at) {
        // Named by a local entry: a move home that was settled already.
        if (now_at.error().code == -EINVAL && m->phase == PFS_MOVE_COMMIT && ns_->is_local(m->to))
            co_return co_await finish(Reply::ok());
        co_return Reply::from(now_at.error());
    }
    Status st = ok_status();
    switch (m->phase) {
        case PFS_MOVE_PREPARE:
            // The requester holds the entry (maybe in another of its directories).
            if (busy_.contains(EntryKey::of(m->id)) || now_at->state != PFS_DETACHED_CONFIRMED)
                st = Error{-EBUSY, "the inode is being moved or removed"};
            else if (now_at->dir.owner_node != m->from.owner_node || ns_->is_local(m->from))
                st = Error{-EINVAL, "the inode's entry is not on the requester's server"};
            else if (auto a = ns_->getattr(m->id); a && S_ISDIR(a->mode) && !(st = allowed(req, m->id, W_OK)))
                break;  // its ".." changes: the client must be allowed to write it
            else
                st = ns_->set_remote(m->id, RemoteParent{.dir = m->to, .state = PFS_DETACHED_MOVING, .from = m->from});
            break;
        case PFS_MOVE_COMMIT:
        case PFS_MOVE_ABORT: {
            const auto& end = m->phase == PFS_MOVE_COMMIT ? m->to : m->from;
            if (now_at->moving() && same_id(now_at->dir, m->to) && same_id(now_at->from, m->from))
                st = ns_->set_remote(m->id, settled_in(end));
            else if (now_at->moving() || !same_id(now_at->dir, end))
                st = Error{-EINVAL, "the inode is not moving so"};
            break;
        }
    }
    if (!st) co_return Reply::from(st.error());
    co_return co_await finish(Reply::ok());
}

// ---- on the target directory's server ----

awaitable<Reply> Service::on_remote_link(Request& req) {
    auto m = body(req, pfs_x_remote_link);
    if (!m) co_return malformed(PFS_MSG_REMOTE_LINK);
    // For the client the moving server forwards: W and X here, and the
    // sticky rule for an entry it replaces.
    auto existing = ns_->resolve(m->dir, m->name);
    auto may = existing ? co_await may_remove(req, m->dir, existing->id) : allowed(req, m->dir, W_OK | X_OK);
    if (!may) co_return Reply::from(may.error());
    const bool noreplace = (m->flags & PFS_REMOTE_LINK_NOREPLACE) != 0;
    auto link = [&, this](const pfs_entry_id* victim, bool& applied) -> awaitable<Reply> {
        if (victim && !still_names(m->dir, m->name, *victim))
            co_return Reply::fail(EBUSY, "the target changed while the rename waited");
        auto out = ns_->link_moved(m->dir, m->name, m->id, m->type, noreplace, now(), victim != nullptr);
        if (!out) co_return Reply::from(out.error());
        applied = true;
        std::vector<pfs_entry_id> ids{m->dir, m->id};
        co_return co_await moved_reply(req, std::move(ids), std::move(*out));
    };
    // What it replaces of other servers (another server's inode, the other
    // shards of a striped directory) is held for removal first.
    if (auto victim = noreplace ? std::nullopt : held_victim(m->dir, m->name);
        victim && victim->replaceable_by(m->id, m->type))
        co_return co_await with_victim_held(*victim, [&](bool& applied) { return link(&victim->id, applied); });
    bool applied = false;
    co_return co_await link(nullptr, applied);
}

// ---- on the server the inode moved from ----

awaitable<Reply> Service::on_entry_drop(Request& req) {
    auto m = body(req, pfs_x_entry_id);
    if (!m) co_return malformed(PFS_MSG_ENTRY_DROP);
    if (busy_.contains(EntryKey::of(*m))) co_return Reply::fail(EBUSY, "the entry is being moved or removed");
    // Dropped already (or never added): done all the same, once durable.
    if (auto dir = ns_->holder_of(*m)) {
        if (auto st = ns_->drop_entry(*dir, *m, now()); !st) co_return Reply::from(st.error());
        changed(req, std::span<const pfs_entry_id>(&*dir, 1));
    }
    co_return co_await finish(Reply::ok());
}

}  // namespace pfs::meta
