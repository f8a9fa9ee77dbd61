// Entries whose inode, or part of it, lies on other metadata servers: an
// entry naming another server's inode (a directory placed there, a file
// moved in by a rename), and a striped directory of this server, whose
// other shards are theirs. Removing such an entry, or renaming over it,
// asks those servers to hold what is theirs for removal first
// (RMDIR_DETACHED PREPARE: a directory must be empty, and takes no new
// entries), then changes the entry here, durably, then commits them
// (COMMIT: removed; for a file, freed once no client has it open), or
// aborts them (ABORT) when the entry stays. A crash in between leaves them
// REMOVING: their servers settle them (ENTRY_CHECK), and this server
// answers PENDING while the operation is under way (busy_).
#include <dirent.h>

#include "log.hpp"
#include "namespace_checks.hpp"
#include "service.hpp"
#include "service_helpers.hpp"

namespace pfs::meta {

std::optional<HeldVictim> Service::held_victim(const pfs_entry_id& dir, std::string_view name) const {
    if (is_dot(name)) return std::nullopt;
    auto slot = ns_->resolve(dir, name);
    if (!slot) return std::nullopt;
    if (!ns_->is_local(slot->id)) return HeldVictim{.id = slot->id, .type = slot->type, .held = {slot->id}};
    if (slot->type != DT_DIR) return std::nullopt;
    auto shards = ns_->shards(slot->id);
    if (!shards || !shards->striped()) return std::nullopt;
    auto others = shards->others();
    return HeldVictim{.id = slot->id, .type = DT_DIR, .held = {others.begin(), others.end()}};
}

awaitable<Status> Service::tell_held(std::span<const pfs_entry_id> ids, uint8_t phase) {
    Status result = ok_status();
    for (size_t i = 0; i < ids.size(); ++i) {
        pfs_rmdir_detached rd{ids[i], phase};
        auto r = co_await cluster_.call_meta_ok(ids[i].owner_node, PFS_MSG_RMDIR_DETACHED,
                                                encode(pfs_x_rmdir_detached, rd));
        if (r) continue;
        result = r.error();
        if (phase != PFS_RMDIR_PREPARE) {
            // Settled by its server (ENTRY_CHECK) in the end.
            log::warn("removal on another metadata server left to settle",
                      {{"ino", ids[i].ino}, {"node", ids[i].owner_node}, {"error", r.error().message}});
            continue;
        }
        // Not empty, or away: those prepared take entries again.
        pfs_rmdir_detached undo{};
        undo.phase = PFS_RMDIR_ABORT;
        for (size_t j = 0; j < i; ++j) {
            undo.id = ids[j];
            co_await cluster_.call_meta_ok(undo.id.owner_node, PFS_MSG_RMDIR_DETACHED, encode(pfs_x_rmdir_detached, undo));
        }
        co_return result;
    }
    co_return result;
}

awaitable<Reply> Service::with_victim_held(const HeldVictim& victim,
                                           const std::function<awaitable<Reply>(bool& applied)>& op) {
    Holding busy(busy_, EntryKey::of(victim.id));
    if (!busy.held()) co_return Reply::fail(EBUSY, "the entry is being removed or moved");
    if (auto st = co_await tell_held(victim.held, PFS_RMDIR_PREPARE); !st) co_return Reply::from(st.error());
    bool applied = false;
    auto answer = co_await op(applied);
    // Once the entry is durably gone (a lost COMMIT is settled by the
    // other server), or kept. Gone but not durably (the journal failed,
    // the server stops): they stay prepared, for their servers to settle
    // with whatever this one recovers.
    if (answer.status == PFS_OK) co_await tell_held(victim.held, PFS_RMDIR_COMMIT);
    else if (!applied) co_await tell_held(victim.held, PFS_RMDIR_ABORT);
    co_return answer;
}

bool Service::still_names(const pfs_entry_id& dir, std::string_view name, const pfs_entry_id& id) const {
    auto slot = ns_->resolve(dir, name);
    return slot && same_id(slot->id, id);
}

awaitable<Reply> Service::remove_held(const Request& req, const pfs_entry_id& dir, std::string_view name,
                                      const HeldVictim& victim) {
    co_return co_await with_victim_held(victim, [&](bool& applied) -> awaitable<Reply> {
        // Renamed or replaced while the other servers were asked: it stays.
        if (!still_names(dir, name, victim.id))
            co_return Reply::fail(EBUSY, "the entry changed while it was being removed");
        auto out = victim.type == DT_DIR ? ns_->rmdir(dir, name, now()) : ns_->unlink(dir, name, now());
        if (!out) co_return Reply::from(out.error());
        applied = true;
        const pfs_entry_id ids[] = {dir, victim.id};
        changed(req, ids);
        if (ns_->is_local(victim.id)) callbacks_.forget(victim.id);
        co_return co_await finish(Reply::ok());
    });
}

awaitable<Reply> Service::rename_over_held(const Request& req, const pfs_rename& m, const HeldVictim& victim) {
    co_return co_await with_victim_held(victim, [&](bool& applied) -> awaitable<Reply> {
        auto out = co_await rename_here(m, kRenameVictimHeld, &victim.id);
        if (!out) co_return Reply::from(out.error());
        applied = true;
        std::vector<pfs_entry_id> ids{m.src_dir, m.dst_dir, out->attr.id};
        co_return co_await moved_reply(req, std::move(ids), std::move(*out));
    });
}

bool HeldVictim::replaceable_by(const pfs_entry_id& src, uint8_t src_type) const {
    return !same_id(src, id) && (src_type == DT_DIR) == (type == DT_DIR);
}

}  // namespace pfs::meta
