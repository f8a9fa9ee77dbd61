// The metadata server's namespace in memory: inodes, directories, stripe
// layouts, xattrs, open counts. Pure logic: no I/O, no threads, the time
// passed in by the caller.
//
// Every mutation is planned into an Op and executed by apply(), the single
// place that changes state; the observer sees each applied op, so a journal
// that records them and replays them onto a snapshot rebuilds the same
// namespace. Errors are negative errno values as Linux returns them.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "access.hpp"
#include "entry_key.hpp"
#include "inode.hpp"
#include "namespace_ops.hpp"
#include "result.hpp"

namespace pfs::meta {

// A file whose inode is gone: the caller deletes its chunks.
struct FreedFile {
    pfs_entry_id id{};
    StripeLayout layout;
    uint64_t size = 0;
    bool was_inline = false;  // its data is in this server's inline store
};

struct SizeChange {
    uint64_t old_size = 0;
    uint64_t new_size = 0;
};

// What apply() did.
struct Outcome {
    // The inode created or changed; for unlink/rmdir the removed entry's
    // inode after the removal; for rename the moved inode.
    Attr attr{};
    std::optional<pfs_entry_id> replaced{};  // rename: the inode the target name pointed to
    std::optional<FreedFile> freed{};        // a file's last link and last open are gone
    std::optional<SizeChange> size_change{};  // setattr was given a file's size
};

// A count of a file's st_blocks over its targets, started by
// Namespace::start_blocks_count.
struct BlocksCount {
    StripeLayout layout;
    uint64_t epoch = 0;
};

struct Created {
    Attr attr;
    bool created = true;  // false: non-exclusive create found the file
};

struct DirEntry {
    std::string name;
    pfs_entry_id id{};
    uint8_t type = 0;     // DT_*
    uint64_t cookie = 0;  // pass back to resume after this entry
};

struct DirPage {
    std::vector<DirEntry> entries;
    uint64_t next_cookie = 0;  // the last entry's cookie (the given one when empty)
    bool eof = false;
};

struct Counts {
    uint64_t inodes = 0;
    uint64_t directories = 0;
    uint64_t files = 0;
    uint64_t symlinks = 0;
    uint64_t specials = 0;  // FIFOs, sockets, devices
    uint64_t orphans = 0;
};

// An inode of this server whose entry lives on another one (or moves).
struct Detached {
    pfs_entry_id id{};
    RemoteParent remote;
};

// Picks the storage targets for a new file (elsewhere: it needs the map of
// targets and their states).
using ChooseTargets = std::function<Result<std::vector<uint32_t>>(const StripePattern&)>;

class Namespace {
public:
    // An empty namespace: the root directory (ino 1, 0755, owned by root)
    // with the default stripe pattern.
    explicit Namespace(uint32_t owner_node, Timespec now = {});
    Namespace(Namespace&&) = default;
    Namespace& operator=(Namespace&&) = default;

    uint32_t owner_node() const { return owner_; }
    pfs_entry_id root() const;
    bool is_local(const pfs_entry_id& id) const { return id.owner_node == owner_; }

    // ---- queries ----
    Result<Attr> getattr(const pfs_entry_id& id) const;
    // "." and ".." resolve to the directory and its parent. An entry naming
    // a directory of another server is -EREMOTE here: see resolve().
    Result<Attr> lookup(const pfs_entry_id& dir, std::string_view name) const;
    // The id a name in dir stands for, and its DT_ type; it may belong to
    // another server (a detached directory's ".." always does).
    Result<Directory::Slot> resolve(const pfs_entry_id& dir, std::string_view name) const;
    // Whether an entry here names `remote`, an inode of another server.
    bool names(const pfs_entry_id& remote) const;
    // The name of an entry in dir (here) that names id.
    std::optional<std::string> entry_name(const pfs_entry_id& dir, const pfs_entry_id& id) const;
    // Detached inodes with an ino above `after`, at most max, by ino.
    std::vector<Detached> detached(uint64_t after, size_t max) const;
    // Where a detached inode's entry is, and its state.
    Result<RemoteParent> detached_state(const pfs_entry_id& id) const;
    // The detached inodes still CREATED, REMOVING or MOVING.
    std::vector<Detached> unsettled() const;
    Result<StripeLayout> layout(const pfs_entry_id& file) const;
    // A regular file's FileBody::inline_max: 0 unless its data is inline.
    Result<uint32_t> inline_max(const pfs_entry_id& file) const;
    Result<StripePattern> pattern(const pfs_entry_id& dir) const;
    Result<std::string> readlink(const pfs_entry_id& id) const;
    // Up to max_entries entries after `cookie` (0: from the start, "." and
    // ".." first with cookies 1 and 2).
    Result<DirPage> readdir(const pfs_entry_id& dir, uint64_t cookie, uint32_t max_entries) const;
    Result<std::string> get_xattr(const pfs_entry_id& id, std::string_view name) const;
    Result<std::vector<std::string>> list_xattrs(const pfs_entry_id& id) const;
    // Permission checks (access.hpp) against an inode of this server.
    Status may_access(const pfs_entry_id& id, const Caller& c, int mask) const;
    Status may_setattr(const pfs_entry_id& id, const Caller& c, AttrChanges& changes, bool times_now) const;
    Status may_xattr(const pfs_entry_id& id, const Caller& c, std::string_view name, bool write) const;
    Counts counts() const;
    // Inodes with no links left (unlinked while open, or left so by a crash).
    std::vector<pfs_entry_id> orphans() const;
    // Files freed whose chunks may still be on their targets: every freed
    // file joins, in the same op that frees it (so a crash cannot lose it),
    // and leaves with reaped() once its chunks are gone everywhere.
    const std::map<EntryKey, StripeLayout>& reaping() const { return reaping_; }

    // ---- mutations: each plans an Op and applies it ----
    // mode: permission bits. With exclusive false an existing non-directory
    // is returned instead of EEXIST (O_CREAT without O_EXCL).
    // may_inline: the new file may keep its data inline, as dir's pattern
    // says (the client follows inline layouts).
    Result<Created> create(const pfs_entry_id& dir, std::string_view name, uint32_t mode, uint32_t uid,
                           uint32_t gid, Timespec now, const ChooseTargets& choose, bool exclusive = true,
                           bool may_inline = false);
    // O_TMPFILE: a file at nlink 0 that no entry names, striped by dir's
    // pattern; the caller opens it at once (it is freed at its last close
    // unless link() names it first).
    Result<Attr> tmpfile(const pfs_entry_id& dir, uint32_t mode, uint32_t uid, uint32_t gid, Timespec now,
                         const ChooseTargets& choose, bool may_inline = false);
    // shards: a striped directory's, its own reserved id (reserve_dir_id)
    // first, the others made on other servers with it as their parent.
    Result<Attr> mkdir(const pfs_entry_id& dir, std::string_view name, uint32_t mode, uint32_t uid,
                       uint32_t gid, Timespec now, std::vector<pfs_entry_id> shards = {},
                       std::optional<uint32_t> dir_stripes = {});
    // What mkdir would give a new directory (set-group-ID inheritance, the
    // parent's pattern; dir_stripes: the pattern's, set) once the parent and
    // the name pass its checks; for a directory made on another server.
    struct NewDir {
        uint32_t mode = 0;
        uint32_t uid = 0;
        uint32_t gid = 0;
        StripePattern pattern;
    };
    Result<NewDir> plan_dir(const pfs_entry_id& dir, std::string_view name, uint32_t mode, uint32_t uid,
                            uint32_t gid) const;
    Result<Attr> symlink(const pfs_entry_id& dir, std::string_view name, std::string_view target,
                         uint32_t uid, uint32_t gid, Timespec now);
    // A FIFO, socket or device: mode carries the type (pfs_mknod_mode_valid).
    Result<Attr> mknod(const pfs_entry_id& dir, std::string_view name, uint32_t mode, uint32_t rdev,
                       uint32_t uid, uint32_t gid, Timespec now);
    Result<Attr> link(const pfs_entry_id& id, const pfs_entry_id& dir, std::string_view name, Timespec now);
    Result<Outcome> unlink(const pfs_entry_id& dir, std::string_view name, Timespec now);
    Result<Outcome> rmdir(const pfs_entry_id& dir, std::string_view name, Timespec now);
    // flags: kRenameNoReplace, kRenameExchange.
    Result<Outcome> rename(const pfs_entry_id& src_dir, std::string_view src_name,
                           const pfs_entry_id& dst_dir, std::string_view dst_name, uint32_t flags,
                           Timespec now);
    Result<Outcome> setattr(const pfs_entry_id& id, const AttrChanges& changes, Timespec now);
    // setattr, lazy: a size and mtime that a write or close(2) made, which
    // promise no durability (fsync does).
    Result<Outcome> setattr_lazily(const pfs_entry_id& id, const AttrChanges& changes, Timespec now) {
        lazy_ = true;
        auto out = setattr(id, changes, now);
        lazy_ = false;
        return out;
    }
    // flags: kXattrCreate, kXattrReplace.
    Status set_xattr(const pfs_entry_id& id, std::string_view name, std::string_view value, uint32_t flags,
                     Timespec now);
    Status remove_xattr(const pfs_entry_id& id, std::string_view name, Timespec now);
    Status set_pattern(const pfs_entry_id& dir, const StripePattern& pattern, Timespec now);
    // An inline file's data was copied to its layout's targets and synced
    // there: it is inline no more. begins: the copy is about to start (its
    // removal then deletes what the targets may hold of it).
    Status uninline(const pfs_entry_id& file, bool begins = false);

    // ---- directories across metadata servers ----
    // On the new directory's server: a directory for an entry in parent,
    // a directory of another server; mode, owner and pattern as the
    // parent's owner decided them.
    // shards: as mkdir's. place: a shard of parent, a striped directory of
    // another server, instead of a directory for an entry in it.
    Result<Attr> mkdir_detached(const pfs_entry_id& parent, uint32_t mode, uint32_t uid, uint32_t gid,
                                const StripePattern& pattern, Timespec now, std::vector<pfs_entry_id> shards = {},
                                DirShards place = {});

    // ---- striped directories ----
    // A fresh id for a striped directory, known before it is made (its
    // shards on other servers name it as their parent). Not journaled: an
    // id never used is just skipped.
    pfs_entry_id reserve_dir_id();
    void release_dir_id(const pfs_entry_id& id);
    // Where dir's entries are (not striped: count 1).
    Result<DirShards> shards(const pfs_entry_id& dir) const;
    // The striped directory id is a shard of (index 1 and up), if it is one.
    std::optional<pfs_entry_id> shard_master(const pfs_entry_id& id) const;
    // CONFIRMED, or REMOVING (-ENOTEMPTY unless an empty directory), or
    // CREATED.
    Status set_detached_state(const pfs_entry_id& id, uint8_t state);
    // Removes an empty detached directory, or a detached file's one link
    // (freed, or kept as an orphan while open).
    Result<std::optional<FreedFile>> remove_detached(const pfs_entry_id& id);
    // On the parent's server: the entry naming a directory made on another.
    Result<Attr> add_remote_dir(const pfs_entry_id& dir, std::string_view name, const pfs_entry_id& id,
                                Timespec now);

    // ---- entries moving between metadata servers ----
    // On the inode's owner: where its entry is (nullopt: here, by a local
    // entry), e.g. MOVING from one directory to another.
    Status set_remote(const pfs_entry_id& id, const std::optional<RemoteParent>& remote);
    // On the target directory's server: an entry naming an inode moved in
    // (of another server, or one of this server MOVING into dir), replacing
    // a local entry of the name unless noreplace.
    // victim_held: what of the entry it replaces lies on other servers (a
    // striped directory's other shards, another server's inode) is held for
    // removal there (else replacing it is -EXDEV).
    Result<Outcome> link_moved(const pfs_entry_id& dir, std::string_view name, const pfs_entry_id& id,
                               uint8_t type, bool noreplace, Timespec now, bool victim_held = false);
    // Drops the entry dir/name, which names id, an inode of another server
    // or one MOVING out of dir; the inode itself is left as it is.
    Status drop_entry(const pfs_entry_id& dir, std::string_view name, const pfs_entry_id& id, Timespec now);
    // The same for whichever entry of dir names id (none: done already).
    Status drop_entry(const pfs_entry_id& dir, const pfs_entry_id& id, Timespec now);
    // The directory here whose entry names id, an inode of another server.
    std::optional<pfs_entry_id> holder_of(const pfs_entry_id& id) const;

    // Open handles keep an unlinked inode alive. Not journaled: after a
    // restart nothing is open and orphans() lists what the crash left.
    Status open(const pfs_entry_id& id);
    // The last close of an unlinked file frees it (through a PurgeOp).
    Result<std::optional<FreedFile>> close(const pfs_entry_id& id);
    // Frees an orphan that is not open (recovery).
    Result<std::optional<FreedFile>> purge_orphan(const pfs_entry_id& id);
    // These files' chunks are deleted on every target (at most kReapedMax).
    Status reaped(std::vector<pfs_entry_id> ids);

    // st_blocks of regular files, counted on the targets by the caller. Not
    // journaled: it is learnt again. Starts a count of id's if it is
    // unknown, none runs and the file is not open (a writer's next report
    // would undo it): the layout to ask and the epoch to end it with.
    std::optional<BlocksCount> start_blocks_count(const pfs_entry_id& id);
    // The count ended: blocks is kept unless it failed (nullopt) or the
    // file changed since it started.
    void end_blocks_count(const pfs_entry_id& id, uint64_t epoch, std::optional<uint64_t> blocks);
    // The file's data may have changed unseen (a client ended with it open
    // for writing): its st_blocks is unknown until counted again.
    void blocks_changed(const pfs_entry_id& id);

    // ---- replication and persistence ----
    // The one place state changes. All or nothing: on error nothing changed.
    Result<Outcome> apply(const Op& op);
    // Called after every successful apply(), with the op.
    void set_observer(std::function<void(const Op&)> observer) { observer_ = std::move(observer); }
    // Whether the op being applied need not be durable soon
    // (setattr_lazily): the observer may let its record wait for one that
    // must be.
    bool applying_lazily() const { return lazy_; }

    // The whole namespace (open counts aside), deterministic: two namespaces
    // with the same history give the same bytes. Written as a sequence of
    // bounded records, so a big namespace can stream to a file.
    Status snapshot_to(const std::function<void(std::span<const uint8_t>)>& write) const;
    Result<std::vector<uint8_t>> snapshot() const;
    // Bounds-checked and verified (links, counts, tree shape): a damaged
    // snapshot is an error, never a crash or a half-built namespace.
    static Result<Namespace> restore(std::span<const uint8_t> bytes);

private:
    using InodeMap = std::unordered_map<uint64_t, Inode>;

    Result<const Inode*> find(const pfs_entry_id& id) const;
    Result<Inode*> find(const pfs_entry_id& id);
    Result<const Inode*> find_dir(const pfs_entry_id& id) const;
    Result<Inode*> find_dir(const pfs_entry_id& id);
    Attr attr_of(const Inode& node) const;
    void blocks_changed(Inode& node);
    pfs_entry_id next_id() const;
    // Whether the directory `ino` is `ancestor` or lies below it; unknown
    // when the way up leaves this server (a detached directory) first.
    enum class Ancestry { no, yes, unknown };
    Ancestry ancestry(uint64_t ino, uint64_t ancestor) const;
    // A directory's "..".
    pfs_entry_id parent_of(const Inode& dir) const;
    // A name's inode when the entry is local, nullptr when it names a
    // directory of another server.
    Result<Inode*> entry_inode(const Directory::Slot& slot);

    // reserved: a striped directory's id, which reserve_dir_id handed out
    // (when replayed, one no inode has).
    Status check_new_id(const pfs_entry_id& id, bool reserved = false) const;
    // A new directory's shards (DirShards) from its op, checked.
    Result<DirShards> new_shards(const pfs_entry_id& id, const std::vector<pfs_entry_id>& ids, uint32_t index,
                                 uint32_t count) const;
    void add_shard_entries(const Inode& dir);

    Result<Outcome> run(const CreateOp& op);
    Result<Outcome> run(const MkdirOp& op);
    Result<Outcome> run(const SymlinkOp& op);
    Result<Outcome> run(const LinkOp& op);
    Result<Outcome> run(const UnlinkOp& op);
    Result<Outcome> run(const RmdirOp& op);
    Result<Outcome> run(const RenameOp& op);
    Result<Outcome> run(const SetattrOp& op);
    Result<Outcome> run(const SetXattrOp& op);
    Result<Outcome> run(const RemoveXattrOp& op);
    Result<Outcome> run(const SetPatternOp& op);
    Result<Outcome> run(const PurgeOp& op);
    Result<Outcome> run(const DetachedMkdirOp& op);
    Result<Outcome> run(const DetachedStateOp& op);
    Result<Outcome> run(const DetachedRmdirOp& op);
    Result<Outcome> run(const RemoteEntryOp& op);
    Result<Outcome> run(const MoveStateOp& op);
    Result<Outcome> run(const MovedLinkOp& op);
    Result<Outcome> run(const DropEntryOp& op);
    Result<Outcome> run(const DetachedUnlinkOp& op);
    Result<Outcome> run(const ReapedOp& op);
    Result<Outcome> run(const MknodOp& op);
    Result<Outcome> run(const TmpfileOp& op);
    Result<Outcome> run(const UninlineOp& op);

    // Shared by create, mkdir and symlink once the op is validated.
    Inode& add_inode(Inode& parent, std::string_view name, Attr attr, decltype(Inode::body) body);
    // A rename's (or a moved-in entry's) existing target, the victim: may
    // it be replaced by a directory (src_is_dir) or a non-directory? Then
    // drop it once its entry names the source.
    // victim_held: a striped victim's other shards are held empty.
    // (A victim of another server's is checked by its owner and its type
    // here: check_remote_victim.)
    static Status check_victim(const Inode& victim, bool src_is_dir, std::string_view name,
                               bool victim_held = false);
    std::optional<FreedFile> drop_victim(Inode& parent, Inode& victim, bool keep_orphan, Timespec now);
    // A victim that is another server's inode (type: its entry's), which
    // its owner holds for removal when victim_held (it checked a directory
    // is empty): only the types are checked here.
    static Status check_remote_victim(uint8_t type, bool src_is_dir, std::string_view name, bool victim_held);
    // ENOTDIR or EISDIR when the source's kind is not the victim's.
    static Status check_victim_kind(bool victim_is_dir, bool src_is_dir, std::string_view name);
    // Its entry now names the source: the owner removes the inode once this
    // is durable (RMDIR_DETACHED COMMIT), or settles it so.
    void drop_remote_victim(Inode& parent, const pfs_entry_id& id, uint8_t type);
    // For a non-directory that may have lost its last link: frees it, or
    // keeps it as an orphan while it is open (or the op says it was).
    std::optional<FreedFile> settle(Inode& node, bool keep_orphan);
    std::optional<FreedFile> free_inode(uint64_t ino);
    void count(const Inode& node, int delta);
    // Restore: links, link counts, parents and reachability agree.
    Status verify();

    uint32_t owner_ = 0;
    uint64_t next_ino_ = kRootIno + 1;
    InodeMap inodes_;
    std::set<uint64_t> orphans_;
    std::set<uint64_t> detached_;                 // inodes with a remote entry (Inode::remote)
    std::map<EntryKey, uint64_t> remote_entries_;  // other servers' inodes an entry here names: its directory
    std::map<EntryKey, StripeLayout> reaping_;     // freed files whose chunks may remain
    std::set<uint64_t> reserved_;                  // reserve_dir_id's, not used yet
    Counts counts_;
    std::function<void(const Op&)> observer_;
    bool lazy_ = false;
};

}  // namespace pfs::meta
