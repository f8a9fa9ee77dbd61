// pfs-meta's request handlers: the namespace over the wire. A mutation is
// applied to the namespace, made durable (journal), and only then answered;
// chunk files of freed files are deleted on the storage servers afterwards.
// Client sessions and advisory locks live here too, in memory only.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <unordered_map>
#include <unordered_set>

#include "blocks_counter.hpp"
#include "callbacks.hpp"
#include "chunk_reaper.hpp"
#include "client_policy.hpp"
#include "cluster.hpp"
#include "dir_placement.hpp"
#include "entry_key.hpp"
#include "inline_files.hpp"
#include "lock_table.hpp"
#include "namespace.hpp"
#include "rpc_server.hpp"
#include "sessions.hpp"
#include "striped_io.hpp"
#include "target_chooser.hpp"

namespace pfs::meta {

// An entry whose inode, or part of it, other servers hold: removing it, or
// renaming over it, has them hold that for removal first.
struct HeldVictim {
    pfs_entry_id id{};                 // what the entry names
    uint8_t type = 0;                  // DT_*
    std::vector<pfs_entry_id> held{};  // the other servers' part: the inode, or the other shards

    // Whether a rename of src (of DT_* src_type) may replace it, as far as
    // its kind says: the namespace answers the rest without asking anyone.
    bool replaceable_by(const pfs_entry_id& src, uint8_t src_type) const;
};

class Service {
public:
    // Waits until every op applied so far is durable.
    using Durable = std::function<awaitable<Status>()>;
    // Writes every op applied so far into the journal's file without
    // waiting for its sync; false where it could not (MetaStore::write_out).
    using WrittenOut = std::function<bool()>;

    static constexpr std::chrono::milliseconds kDefaultSessionTimeout{30000};

    Service(asio::any_io_executor ex, RpcServer& server, client::Cluster& cluster, TargetChooser& chooser,
            std::chrono::milliseconds session_timeout = kDefaultSessionTimeout,
            DirPlacement placement = DirPlacement{}, ClientPolicy policy = ClientPolicy{});

    // Handlers answer -EAGAIN until the namespace is attached (after the
    // node is registered and its store recovered).
    void attach(Namespace& ns, Durable durable, WrittenOut written_out = {});
    // The namespace can no longer be made durable: every request from now
    // on is answered EIO, none from the namespace in memory.
    void fail_stop(const Error& why) { stopped_ = why; }
    void install();
    // The store of inline files' data under dir, and its chunk handlers.
    Status open_inline(const std::filesystem::path& dir, const ChunkStoreOptions& chunks);
    // SIGTERM: chunk deletions still queued go out, inline data to disk.
    awaitable<void> stop_cleanly();
    // Frees the files a crash left unlinked but not yet removed, and
    // deletes the inline data a crash left behind (InlineFiles::sweep).
    awaitable<void> purge_orphans();
    // Chunk deletions still queued go out now (clean shutdown).
    awaitable<void> flush_deletions() { return reaper_.flush(); }
    // Retries the deletions of freed files' chunks that have not
    // succeeded (a target was away, the server restarted) every `period`;
    // runs until the executor stops.
    awaitable<void> reap_chunks(std::chrono::milliseconds period);
    static constexpr size_t kReapSweepMax = 4096;  // files queued per round at most
    // Ends the sessions of clients gone silent, every quarter timeout; runs
    // until the executor stops.
    awaitable<void> expire_sessions();
    // Settles the detached inodes a crash left CREATED, REMOVING or MOVING
    // by asking the owners of the directories that may name them, every
    // `period`; runs until the executor stops.
    awaitable<void> settle_detached(std::chrono::milliseconds period);

private:
    using Method = awaitable<Reply> (Service::*)(Request&);

    awaitable<Reply> on_lookup(Request& req);
    awaitable<Reply> on_getattr(Request& req);
    awaitable<Reply> on_create(Request& req);
    awaitable<Reply> on_mkdir(Request& req);
    awaitable<Reply> on_symlink(Request& req);
    awaitable<Reply> on_mknod(Request& req);
    awaitable<Reply> create_tmpfile(Request& req, const pfs_create& m, const Caller& who);
    awaitable<Reply> create_or_find(Request& req, const pfs_create& m);
    awaitable<Reply> create_file(Request& req, const pfs_create& m, const Caller& who);
    // What opening an existing file asks of it, from PFS_CREATE_READ/WRITE.
    static int create_open_mask(uint32_t flags);
    // PFS_CREATE_FIND's answer: a successful reply led by pfs_create_made.
    static Reply said_made(Reply reply, bool made);
    // make(), and once more after a look at the map if it found no targets.
    template <class Make>
    awaitable<std::invoke_result_t<Make>> with_targets(Make make);
    awaitable<Reply> on_readlink(Request& req);
    awaitable<Reply> on_link(Request& req);
    awaitable<Reply> on_unlink(Request& req);
    awaitable<Reply> on_rmdir(Request& req);
    awaitable<Reply> on_rename(Request& req);
    awaitable<Reply> on_setattr(Request& req);
    awaitable<Reply> on_readdir(Request& req);
    awaitable<Reply> on_open(Request& req);
    awaitable<Reply> on_open_name(Request& req);
    awaitable<Reply> find_name(Request& req, const pfs_entry_id& dir, std::string_view name, int mask);
    awaitable<Reply> on_close(Request& req);
    awaitable<Reply> on_close_many(Request& req);
    awaitable<Reply> on_getxattr(Request& req);
    awaitable<Reply> on_setxattr(Request& req);
    awaitable<Reply> on_listxattr(Request& req);
    awaitable<Reply> on_removexattr(Request& req);
    awaitable<Reply> on_statfs(Request& req);
    awaitable<Reply> on_sync_all(Request& req);
    awaitable<Reply> on_get_pattern(Request& req);
    awaitable<Reply> on_set_pattern(Request& req);
    awaitable<Reply> on_lock(Request& req);
    awaitable<Reply> on_getlk(Request& req);
    awaitable<Reply> on_session_renew(Request& req);
    awaitable<Reply> on_session_end(Request& req);
    // The space of files (service_space.cpp).
    awaitable<Reply> on_fallocate(Request& req);
    awaitable<Reply> on_get_layout(Request& req);
    // Directories across metadata servers (service_remote.cpp).
    awaitable<Reply> on_mkdir_on(Request& req);
    awaitable<Reply> on_mkdir_detached(Request& req);
    awaitable<Reply> on_rmdir_detached(Request& req);
    awaitable<Reply> on_entry_check(Request& req);
    awaitable<Reply> on_list_detached(Request& req);
    // MKDIR on the node chosen (0: by the placement policy), striped over
    // `stripes` servers (0: as the parent's pattern says).
    awaitable<Reply> make_dir(const Request& req, const pfs_entry_id& dir, std::string_view name, uint32_t mode,
                              uint32_t node, uint32_t stripes);
    awaitable<Reply> make_remote_dir(const Request& req, const pfs_entry_id& dir, std::string_view name,
                                     const Namespace::NewDir& plan, uint32_t node, uint32_t stripes);
    // Striped directories (service_shards.cpp).
    awaitable<Reply> on_dir_shards(Request& req);
    // A new directory's shards: those asked (0: the parent pattern's
    // dir_stripes, at most the servers online).
    Result<uint32_t> stripes_for(uint32_t asked, const StripePattern& parent) const;
    // The servers for shards 1..stripes-1 of a directory of this one: the
    // ONLINE ones after it, in node id order (fewer when not enough are).
    std::vector<uint32_t> shard_nodes(uint32_t stripes) const;
    // Shards 1.. of the striped directory id (reserved) made on nodes, in
    // order: every shard's id, id first.
    awaitable<Result<std::vector<pfs_entry_id>>> make_shards(const pfs_entry_id& id, const Namespace::NewDir& plan,
                                                             std::span<const uint32_t> nodes);
    // A striped directory made here: named name in parent, or detached
    // (its entry in parent, a directory of another server).
    awaitable<Result<Attr>> make_striped_dir(const pfs_entry_id& parent, std::string_view name,
                                             const Namespace::NewDir& plan, uint32_t stripes, bool detached);
    // Detached directories whose entries (or striped directory) are
    // durable now: CONFIRMED at once, not at their servers' next round of
    // settle_detached (best effort: that round still does it).
    awaitable<void> confirm_detached(std::span<const pfs_entry_id> ids);
    awaitable<void> confirm_shards(const pfs_entry_id& dir);
    // ---- entries whose inode, or part of it, is on other servers
    // (service_victims.cpp) ----
    // dir/name when it names another server's inode, or a striped
    // directory of this server.
    std::optional<HeldVictim> held_victim(const pfs_entry_id& dir, std::string_view name) const;
    // RMDIR_DETACHED's phase to each of ids; a PREPARE that fails is
    // aborted on those prepared.
    awaitable<Status> tell_held(std::span<const pfs_entry_id> ids, uint8_t phase);
    // op() with what of victim other servers have held for removal
    // (RMDIR_DETACHED PREPARE): committed when op succeeded (the entry is
    // durably gone), aborted when it failed before its change.
    // op sets `applied` once its change is in the namespace.
    awaitable<Reply> with_victim_held(const HeldVictim& victim,
                                      const std::function<awaitable<Reply>(bool& applied)>& op);
    // Whether dir/name still names id (after an await).
    bool still_names(const pfs_entry_id& dir, std::string_view name, const pfs_entry_id& id) const;
    // rmdir or unlink of dir/name, which is victim.
    awaitable<Reply> remove_held(const Request& req, const pfs_entry_id& dir, std::string_view name,
                                 const HeldVictim& victim);
    // RENAME (within this server) over victim.
    awaitable<Reply> rename_over_held(const Request& req, const pfs_rename& m, const HeldVictim& victim);
    // A change of a striped directory's permissions (mode, owner, ACLs) or
    // pattern, made on its other shards first (as this server, the body
    // naming each shard).
    // done_already: an error of a shard that means it has the change.
    awaitable<Status> to_other_shards(const pfs_entry_id& dir, uint16_t type,
                                      const std::function<Result<Bytes>(const pfs_entry_id&)>& body_for,
                                      int done_already = 0);
    awaitable<Status> setattr_shards(const pfs_entry_id& dir, const AttrChanges& changes);
    awaitable<Status> xattr_shards(const pfs_xattr_req& m, uint16_t type, std::string_view value);
    // The attributes of an entry that names another server's inode.
    awaitable<Reply> remote_attr(const pfs_entry_id& id);
    // ENTRY_CHECK's PENDING: an operation on id (or on the striped
    // directory id is a shard of) is under way.
    bool entry_pending(const pfs_entry_id& id) const;
    // One round of settle_detached.
    awaitable<void> settle_detached_once();
    // Settles one MOVING inode, given whether the directories it moves
    // from and to name it.
    awaitable<void> settle_move(const Detached& d, bool from_names, bool to_names);
    // Entries moving between metadata servers (service_move.cpp).
    awaitable<Reply> on_move(Request& req);
    awaitable<Reply> on_remote_link(Request& req);
    awaitable<Reply> on_entry_drop(Request& req);
    // RENAME within this server (with these server-side flags too), the
    // loop check walked across servers where the way up leaves this one.
    // victim: the target must still be this inode (EBUSY otherwise).
    awaitable<Result<Outcome>> rename_here(const pfs_rename& m, uint32_t flags,
                                           const pfs_entry_id* victim = nullptr);
    // RENAME from a directory here to one of another server.
    awaitable<Reply> move_across(const Request& req, const pfs_rename& m);
    // -EINVAL when dir is the directory `moved` or lies below it.
    awaitable<Status> check_not_below(const pfs_entry_id& moved, pfs_entry_id dir);
    // Where an inode whose move ends in dir is named: by a local entry
    // (nullopt), or CONFIRMED on dir's server.
    std::optional<RemoteParent> settled_in(const pfs_entry_id& dir) const;
    // MOVE to the owner of id.
    awaitable<Status> tell_owner(const pfs_entry_id& id, const pfs_entry_id& from, const pfs_entry_id& to,
                                 uint8_t phase, const Credentials* as = nullptr);

    // Whom a request acts for (squashed as the client policy says), and
    // the checks of its permissions on an inode here.
    Caller caller(const Request& req) const;
    Status allowed(const Request& req, const pfs_entry_id& id, int mask) const;
    // W and X on dir, and the sticky rule for removing its entry naming id
    // (an inode here or on another server: its owner says who owns it).
    awaitable<Status> may_remove(const Request& req, const pfs_entry_id& dir, const pfs_entry_id& id);
    // RENAME's permissions here: W and X on the source directory and, when
    // it is ours, the target's (its own server checks a target directory
    // of another, at REMOTE_LINK), the sticky rule for the entry moved and
    // one it replaces, and W on a directory that changes parent.
    awaitable<Status> may_rename(const Request& req, const pfs_rename& m);
    // What an open with these O_* flags needs: R_OK and/or W_OK.
    static int open_mask(uint32_t flags);

    // Opens made and closed on behalf of a client's session (client 0: none).
    Status open_for(uint64_t client, const pfs_entry_id& id);
    Result<std::optional<FreedFile>> close_for(uint64_t client, const pfs_entry_id& id);
    // Releases an ended session's locks and closes its opens.
    awaitable<void> end_session(const EndedSession& ended, const char* why);

    // Cache coherence (callbacks.hpp): the requesting client was answered
    // about id; ids changed on behalf of the requesting client, so the
    // other clients that cache them are told (PFS_MSG_INVALIDATE) and the
    // requester watches them.
    void watched(const Request& req, const pfs_entry_id& id);
    void changed(const Request& req, std::span<const pfs_entry_id> ids);
    // A notice to client on its latest connection.
    enum class Notice { sent, no_connection, backlog };
    Notice notify(uint64_t client, uint16_t type, Bytes body);
    // The callback table forgot everything: every client hears it.
    void tell_all_forgotten();
    // A client owed INVALIDATE_ALL gets it ahead of this request's reply.
    void settle_notices(const Request& req);

    // Durable, then the reply; freed chunks go after the reply is settled.
    awaitable<Reply> finish(Result<Reply> reply, std::optional<FreedFile> freed = {});
    awaitable<Reply> finish(Result<Reply> reply, std::vector<FreedFile> freed);
    // The reply before the journal has the change on disk (PFS_SET_LAZY):
    // it is applied, and its record, lazy (Namespace::setattr_lazily), goes with the
    // journal's next batch (durable_later); a failure to write it stops
    // the server as for any other.
    Reply finish_lazily(Result<Reply> reply);
    // The reply before the change is on disk, its record already on its
    // way there (unlink(2) promises no durability: fsync of the directory
    // does, see pfs.ko's dir fsync): a client waits for no sync of its own.
    // What the change freed goes only once its record is durable, so a
    // crash before then brings the name back whole, data and all.
    Reply finish_early(Reply reply, std::optional<FreedFile> freed);
    awaitable<void> settle_early(std::optional<FreedFile> freed);
    // The reply once the change's record is written into the journal's
    // file, before its sync (a create: POSIX makes it durable only at an
    // fsync of the file or its directory, both of which wait for it): a
    // crash of pfs-meta alone loses none of it, a crash of the machine
    // may. As finish where the record cannot be written out so.
    awaitable<Reply> finish_written(Result<Reply> reply);
    // The journal written out within kLazyDurable, without waiting for it.
    void durable_later();
    // InlineFiles's recorder (ChunkRecorder).
    Result<pfs_attr> inline_written(const Request& req, const pfs_entry_id& file, uint64_t end);
    // A name added to dir (mkdir, symlink, link): others are told, the
    // requester watches the entry.
    awaitable<Reply> added_reply(const Request& req, const pfs_entry_id& dir, Result<Attr> attr);
    // An entry renamed or moved in (ids: the directories and the inode;
    // a replaced target is added): others are told, then finish.
    awaitable<Reply> moved_reply(const Request& req, std::vector<pfs_entry_id> ids, Outcome out);
    void delete_chunks(FreedFile freed);
    // A regular file whose st_blocks a stat found unknown is counted
    // (LOOKUP, GETATTR; not OPEN: a read of each file of a data set
    // would cost the targets a CHUNK_STAT each).
    void count_blocks_if_unknown(const Attr& attr);
    // The same for a stat answered now: an inline file's count (made here,
    // at once) goes in attr, in the reply, so the client need not count.
    awaitable<void> count_blocks_now(Attr& attr);
    // OPEN's answer (attributes and layout), the file counted open for the
    // requesting client.
    // mask: what the open asks (R_OK, W_OK): a read-only open of an
    // inline file may get its content too (PFS_FLAG_INLINE_CONTENT).
    awaitable<Reply> opened_reply(const Request& req, const Attr& attr, int mask);
    // A regular file's layout for the requester (InlineFiles::layout_for).
    awaitable<Result<StripeLayout>> layout_for(const Request& req, const pfs_entry_id& file);
    static bool follows_inline(const Request& req) {
        return (req.frame.header.flags & PFS_FLAG_INLINE_LAYOUTS) != 0;
    }
    // Every chunk file of a file cut to its share of size, durably.
    awaitable<Status> truncate_chunks(const pfs_entry_id& file, uint64_t size);
    // io(layout) on the layout for this server's own chunk requests
    // reaching end (InlineFiles::data_layout), again if the data moved.
    template <class Io>
    awaitable<Status> with_data_layout(const pfs_entry_id& file, uint64_t end, Io io);
    // The map fetched again (the chooser follows it), at most every 100 ms.
    awaitable<void> reload_map();
    // The targets' capacity for STATFS, asked of pfs-mgmtd at most once a
    // second (the map's copy is as old as the last change of a target's
    // capacity class); the map's when pfs-mgmtd does not answer.
    awaitable<const std::vector<pfs_target_info>*> capacity_now();

    asio::any_io_executor ex_;
    RpcServer& server_;
    client::Cluster& cluster_;
    client::StripedIo files_;
    BlocksCounter blocks_;
    ChunkReaper reaper_;
    InlineFiles inline_;
    TargetChooser& chooser_;
    std::chrono::steady_clock::time_point map_reloaded_{};
    std::optional<std::vector<pfs_target_info>> capacity_;  // none: pfs-mgmtd did not answer
    std::chrono::steady_clock::time_point capacity_asked_{};
    Namespace* ns_ = nullptr;
    Durable durable_;
    WrittenOut written_out_;
    // How long a lazy record may wait for a change that must be durable.
    static constexpr std::chrono::milliseconds kLazyDurable{100};
    size_t early_in_flight_ = 0;  // changes answered early (finish_early) whose frees are still to go
    std::shared_ptr<bool> durable_due_ = std::make_shared<bool>(false);  // durable_later's sync is on its way
    std::optional<Error> stopped_;
    Sessions sessions_;
    // Opens of requests without a client id (no session), per file: a
    // CLOSE without one may undo only these, never a session's.
    std::map<EntryKey, uint32_t> sessionless_opens_;
    LockTable locks_;
    Callbacks callbacks_;
    DirPlacement placement_;
    ClientPolicy policy_;
    // Cross-server operations under way, for ENTRY_CHECK's answers:
    // MKDIR_DETACHED requests per server; inodes whose entries here are
    // being removed or moved away.
    std::map<uint32_t, uint32_t> mkdirs_in_flight_;
    std::set<EntryKey> busy_;
    // Where each client's notices go: the connection of its latest request.
    std::unordered_map<uint64_t, std::weak_ptr<Channel>> notice_conns_;
    // Clients a notice could not reach over their open connection, or whose
    // session expired while it stayed open: they get INVALIDATE_ALL.
    std::unordered_set<uint64_t> owe_reset_;
};

}  // namespace pfs::meta
