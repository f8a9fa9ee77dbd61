// Inodes whose entries live on another metadata server. A directory placed on another server
// B has its entry here, with its parent's owner A (an entry naming an id of
// B), and lives on B as a detached directory: an inode that no entry of B
// names, which remembers its parent on A. B makes it CREATED and A then adds
// the entry; removal is prepared on B (REMOVING: empty, and no new entries),
// A drops the entry, and B removes it. Whatever a crash cuts short leaves a
// detached directory in one of those two states, settled later by asking A
// whether its entry durably names the directory (the service does that).
#include <dirent.h>

#include "namespace.hpp"
#include "namespace_checks.hpp"

namespace pfs::meta {

bool Namespace::names(const pfs_entry_id& remote) const {
    return remote_entries_.contains(EntryKey::of(remote));
}

std::optional<std::string> Namespace::entry_name(const pfs_entry_id& dir, const pfs_entry_id& id) const {
    auto d = find_dir(dir);
    if (!d) return std::nullopt;
    std::optional<std::string> name;
    (*d)->dir().entries->for_each_after(0, [&](std::string_view n, const Directory::Slot& s) {
        if (same_id(s.id, id)) name = std::string(n);
        return !name;
    });
    return name;
}

std::optional<pfs_entry_id> Namespace::holder_of(const pfs_entry_id& id) const {
    auto it = remote_entries_.find(EntryKey::of(id));
    if (it == remote_entries_.end()) return std::nullopt;
    return inodes_.at(it->second).attr.id;
}

std::vector<Detached> Namespace::detached(uint64_t after, size_t max) const {
    std::vector<Detached> out;
    for (auto it = detached_.upper_bound(after); it != detached_.end() && out.size() < max; ++it) {
        const Inode& n = inodes_.at(*it);
        out.push_back(Detached{n.attr.id, *n.remote});
    }
    return out;
}

Result<RemoteParent> Namespace::detached_state(const pfs_entry_id& id) const {
    auto node = find(id);
    if (!node) return node.error();
    if (!(*node)->remote) return fail(-EINVAL, "not a detached inode");
    return *(*node)->remote;
}

std::vector<Detached> Namespace::unsettled() const {
    std::vector<Detached> out;
    for (uint64_t ino : detached_) {
        const Inode& n = inodes_.at(ino);
        if (n.remote->state != PFS_DETACHED_CONFIRMED) out.push_back(Detached{n.attr.id, *n.remote});
    }
    return out;
}

// ---- planning ----

Result<Attr> Namespace::mkdir_detached(const pfs_entry_id& parent, uint32_t mode, uint32_t uid, uint32_t gid,
                                       const StripePattern& pattern, Timespec now, std::vector<pfs_entry_id> shards,
                                       DirShards place) {
    if (!shards.empty() && !reserved_.contains(shards[0].ino))
        return fail(-EINVAL, "a striped directory's id was not reserved");
    auto done = apply(DetachedMkdirOp{.parent = parent,
                                      .id = shards.empty() ? next_id() : shards[0],
                                      .mode = mode,
                                      .uid = uid,
                                      .gid = gid,
                                      .pattern = pattern,
                                      .now = now,
                                      .shards = std::move(shards),
                                      .shard_index = place.index,
                                      .shard_count = place.index > 0 ? place.count : 0});
    if (!done) return done.error();
    return done->attr;
}

Status Namespace::set_detached_state(const pfs_entry_id& id, uint8_t state) {
    auto done = apply(DetachedStateOp{.id = id, .state = state});
    if (!done) return done.error();
    return ok_status();
}

Result<std::optional<FreedFile>> Namespace::remove_detached(const pfs_entry_id& id) {
    auto node = find(id);
    if (!node) return node.error();
    Result<Outcome> done = (*node)->is_dir()
                               ? apply(DetachedRmdirOp{.id = id})
                               : apply(DetachedUnlinkOp{.id = id, .keep_orphan = (*node)->opens > 0});
    if (!done) return done.error();
    return std::move(done->freed);
}

Result<Attr> Namespace::add_remote_dir(const pfs_entry_id& dir, std::string_view name, const pfs_entry_id& id,
                                       Timespec now) {
    auto done = apply(RemoteEntryOp{.parent = dir, .name = std::string(name), .id = id, .now = now});
    if (!done) return done.error();
    return done->attr;
}

Status Namespace::set_remote(const pfs_entry_id& id, const std::optional<RemoteParent>& remote) {
    auto done = apply(MoveStateOp{.id = id, .remote = remote});
    if (!done) return done.error();
    return ok_status();
}

Result<Outcome> Namespace::link_moved(const pfs_entry_id& dir, std::string_view name, const pfs_entry_id& id,
                                      uint8_t type, bool noreplace, Timespec now, bool victim_held) {
    MovedLinkOp op{.parent = dir, .name = std::string(name), .id = id, .type = type, .now = now,
                   .victim_held = victim_held};
    if (auto d = find_dir(dir); d && !is_dot(name)) {
        if (const auto* slot = (*d)->dir().entries->find(name)) {
            if (noreplace) return fail(-EEXIST, quoted(name) + " exists");
            if (auto victim = find(slot->id)) op.keep_orphan = (*victim)->opens > 0;
        }
    }
    return apply(op);
}

Status Namespace::drop_entry(const pfs_entry_id& dir, std::string_view name, const pfs_entry_id& id,
                             Timespec now) {
    auto done = apply(DropEntryOp{.parent = dir, .name = std::string(name), .id = id, .now = now});
    if (!done) return done.error();
    return ok_status();
}

Status Namespace::drop_entry(const pfs_entry_id& dir, const pfs_entry_id& id, Timespec now) {
    auto name = entry_name(dir, id);
    return name ? drop_entry(dir, *name, id, now) : ok_status();
}

// ---- execution ----

namespace {

Result<Inode*> detached_inode(Result<Inode*> found) {
    if (!found) return found.error();
    if (!(*found)->remote) return fail(-EINVAL, "not a detached inode");
    return *found;
}

bool valid_remote_id(const pfs_entry_id& id) { return id.ino != 0 && id.generation != 0; }

}  // namespace

Result<Outcome> Namespace::run(const DetachedMkdirOp& op) {
    if (auto st = check_time(op.now); !st) return st.error();
    if (is_local(op.parent) || op.parent.ino == 0 || op.parent.generation == 0)
        return fail(-EINVAL, "a detached directory's parent is on another server");
    if (auto st = check_new_id(op.id, !op.shards.empty()); !st) return st.error();
    if (op.mode & ~07777u) return fail(-EINVAL, "invalid directory mode");
    if (auto st = check_pattern(op.pattern); !st) return st.error();
    auto shards = new_shards(op.id, op.shards, op.shard_index, op.shard_count);
    if (!shards) return shards.error();
    Inode& node = inodes_[op.id.ino];
    node.attr = new_dir_attr(op.id, op.mode, op.uid, op.gid, op.now);
    DirBody body;
    body.parent = op.id.ino;
    body.pattern = op.pattern;
    body.shards = std::move(*shards);
    node.body = std::move(body);
    node.remote = RemoteParent{op.parent, PFS_DETACHED_CREATED};
    next_ino_ = std::max<uint64_t>(next_ino_, op.id.ino + 1);
    detached_.insert(op.id.ino);
    count(node, +1);
    add_shard_entries(node);
    reserved_.erase(op.id.ino);
    return Outcome{.attr = attr_of(node)};
}

Result<Outcome> Namespace::run(const DetachedStateOp& op) {
    auto node = detached_inode(find(op.id));
    if (!node) return node.error();
    Inode& n = **node;
    if (op.state > PFS_DETACHED_REMOVING || (op.state == PFS_DETACHED_CREATED && !n.is_dir()))
        return fail(-EINVAL, "invalid detached inode state");
    if (n.remote->moving()) return fail(-EBUSY, "inode " + std::to_string(op.id.ino) + " is moving");
    if (op.state == PFS_DETACHED_REMOVING && n.is_dir() && !n.dir().entries->empty())
        return fail(-ENOTEMPTY, "directory " + std::to_string(op.id.ino) + " is not empty");
    n.remote->state = op.state;
    return Outcome{.attr = attr_of(n)};
}

Result<Outcome> Namespace::run(const DetachedRmdirOp& op) {
    auto node = detached_inode(find(op.id));
    if (!node) return node.error();
    if (!(*node)->is_dir()) return fail(-ENOTDIR, "inode " + std::to_string(op.id.ino) + " is no directory");
    if ((*node)->remote->moving()) return fail(-EBUSY, "inode " + std::to_string(op.id.ino) + " is moving");
    if (!(*node)->dir().entries->empty())
        return fail(-ENOTEMPTY, "directory " + std::to_string(op.id.ino) + " is not empty");
    Outcome out{.attr = attr_of(**node)};
    out.attr.nlink = 0;
    detached_.erase(op.id.ino);
    free_inode(op.id.ino);
    return out;
}

Result<Outcome> Namespace::run(const RemoteEntryOp& op) {
    if (auto st = check_time(op.now); !st) return st.error();
    auto parent = find_dir(op.parent);
    if (!parent) return parent.error();
    Inode& p = **parent;
    if (auto st = check_new_entry(p, op.name); !st) return st.error();
    if (is_local(op.id) || !valid_remote_id(op.id))
        return fail(-EINVAL, "a remote entry names another server's directory");
    if (names(op.id)) return fail(-EEXIST, "an entry names that directory already");
    if (p.attr.nlink == UINT32_MAX) return fail(-EMLINK, "too many subdirectories");
    p.dir().entries->insert(op.name, op.id, DT_DIR);
    ++p.attr.nlink;
    touch_dir(p, op.now);
    remote_entries_.emplace(EntryKey::of(op.id), p.attr.id.ino);
    return Outcome{.attr = Attr{.id = op.id, .mode = S_IFDIR, .nlink = 2, .ctime = op.now}};
}

Result<Outcome> Namespace::run(const MoveStateOp& op) {
    auto node = find(op.id);
    if (!node) return node.error();
    Inode& n = **node;
    if (n.attr.id.ino == kRootIno) return fail(-EBUSY, "the root directory does not move");
    const auto& now_at = n.remote;
    auto named_by = [&](const pfs_entry_id& dir) { return is_local(dir) && entry_name(dir, op.id).has_value(); };
    auto refuse = [&](const char* why) { return fail(-EINVAL, "inode " + std::to_string(op.id.ino) + ": " + why); };
    if (op.remote && op.remote->moving()) {
        const auto& r = *op.remote;
        if (is_local(r.dir) ? is_local(r.from) : !valid_remote_id(r.dir)) return refuse("a move goes to or from another server");
        if (!n.is_dir() && n.attr.nlink != 1) return fail(-EXDEV, "a file with several links does not move");
        if (!now_at) {
            // Out of a local directory, which names it.
            if (!named_by(r.from)) return refuse("the directory it moves from does not name it");
        } else if (now_at->state != PFS_DETACHED_CONFIRMED) {
            return fail(-EBUSY, "inode " + std::to_string(op.id.ino) + " is being made, removed or moved");
        } else if (is_local(r.from) || r.from.owner_node != now_at->dir.owner_node) {
            return refuse("its entry is on another server than the move's source");
        }
    } else if (op.remote) {
        // A move settled on another server's directory: no entry here.
        const auto& r = *op.remote;
        if (r.state != PFS_DETACHED_CONFIRMED || is_local(r.dir)) return refuse("invalid place of a moved inode");
        if (!now_at || !now_at->moving() || (!same_id(now_at->dir, r.dir) && !same_id(now_at->from, r.dir)))
            return refuse("it does not move from or to that directory");
        if (named_by(now_at->dir) || named_by(now_at->from)) return refuse("an entry here still names it");
    } else {
        // A move settled on a local directory: the one entry naming it.
        if (!now_at || !now_at->moving() || !(named_by(now_at->dir) || named_by(now_at->from)))
            return refuse("no local entry names it");
    }
    n.remote = op.remote;
    if (n.remote) detached_.insert(op.id.ino);
    else detached_.erase(op.id.ino);
    return Outcome{.attr = attr_of(n)};
}

Result<Outcome> Namespace::run(const MovedLinkOp& op) {
    if (auto st = check_time(op.now); !st) return st.error();
    auto parent = find_dir(op.parent);
    if (!parent) return parent.error();
    Inode& p = **parent;
    if (auto st = check_name(op.name); !st) return st.error();
    if (is_dot(op.name)) return fail(-EBUSY, "cannot rename onto " + quoted(op.name));
    if (auto st = check_shard(p, op.name); !st) return st.error();
    if (!p.accepts_entries()) return fail(-ENOENT, "the directory is being removed");
    if (!pfs_dtype_valid(op.type)) return fail(-EINVAL, "invalid entry type");
    const bool is_dir = op.type == DT_DIR;
    Inode* moved = nullptr;  // an inode of this server coming back
    if (is_local(op.id)) {
        auto found = find(op.id);
        if (!found) return found.error();
        moved = *found;
        const auto& r = moved->remote;
        if (!r || !r->moving() || !same_id(r->dir, op.parent) || moved->dtype() != op.type)
            return fail(-EINVAL, "inode " + std::to_string(op.id.ino) + " is not moving here");
        // Where the way up leaves this server the coordinator has checked it.
        if (is_dir && ancestry(p.attr.id.ino, op.id.ino) == Ancestry::yes)
            return fail(-EINVAL, "cannot move a directory into itself");
    } else {
        if (!valid_remote_id(op.id)) return fail(-EINVAL, "invalid remote inode");
        if (names(op.id)) return fail(-EEXIST, "an entry names that inode already");
    }
    Inode* victim = nullptr;
    std::optional<Directory::Slot> remote_victim;  // another server's inode, held by its owner
    if (const auto* slot = p.dir().entries->find(op.name); slot && !is_local(slot->id)) {
        if (auto st = check_remote_victim(slot->type, is_dir, op.name, op.victim_held); !st) return st.error();
        remote_victim = *slot;
    } else if (slot) {
        auto found = find(slot->id);
        if (!found) return found.error();
        victim = *found;
        if (victim->remote) return fail(-EBUSY, quoted(op.name) + " is moving to another metadata server");
        if (auto st = check_victim(*victim, is_dir, op.name, op.victim_held); !st) return st.error();
    } else if (auto st = check_new_entry(p, op.name); !st) {
        return st.error();
    }
    const bool replaces_dir = (victim && victim->is_dir()) || (remote_victim && remote_victim->type == DT_DIR);
    if (is_dir && !replaces_dir && p.attr.nlink == UINT32_MAX) return fail(-EMLINK, "too many subdirectories");

    Outcome out;
    if (victim) {
        out.replaced = victim->attr.id;
        p.dir().entries->repoint(op.name, op.id, op.type);
        out.freed = drop_victim(p, *victim, op.keep_orphan, op.now);
    } else if (remote_victim) {
        out.replaced = remote_victim->id;
        p.dir().entries->repoint(op.name, op.id, op.type);
        drop_remote_victim(p, remote_victim->id, remote_victim->type);
    } else {
        p.dir().entries->insert(op.name, op.id, op.type);
    }
    if (is_dir) ++p.attr.nlink;
    touch_dir(p, op.now);
    if (moved) {
        if (is_dir) moved->dir().parent = p.attr.id.ino;
        moved->attr.ctime = op.now;
        out.attr = attr_of(*moved);
    } else {
        remote_entries_.emplace(EntryKey::of(op.id), p.attr.id.ino);
        out.attr = Attr{.id = op.id, .mode = mode_of_dtype(op.type), .ctime = op.now};
    }
    return out;
}

Result<Outcome> Namespace::run(const DropEntryOp& op) {
    if (auto st = check_time(op.now); !st) return st.error();
    auto parent = find_dir(op.parent);
    if (!parent) return parent.error();
    Inode& p = **parent;
    if (auto st = check_name(op.name); !st) return st.error();
    const auto* slot = p.dir().entries->find(op.name);
    if (!slot || !same_id(slot->id, op.id)) return fail(-ENOENT, "no entry " + quoted(op.name) + " naming the inode");
    const bool is_dir = slot->type == DT_DIR;
    Outcome out{.attr = Attr{.id = op.id, .mode = mode_of_dtype(slot->type), .ctime = op.now}};
    if (is_local(op.id)) {
        auto node = find(op.id);
        if (!node) return node.error();
        Inode& n = **node;
        if (!n.remote || !n.remote->moving() || !same_id(n.remote->from, op.parent))
            return fail(-EINVAL, "inode " + std::to_string(op.id.ino) + " is not moving out of the directory");
        n.attr.ctime = op.now;
        out.attr = attr_of(n);
    } else {
        remote_entries_.erase(EntryKey::of(op.id));
    }
    p.dir().entries->erase(op.name);
    if (is_dir) --p.attr.nlink;
    touch_dir(p, op.now);
    return out;
}

Result<Outcome> Namespace::run(const DetachedUnlinkOp& op) {
    auto node = detached_inode(find(op.id));
    if (!node) return node.error();
    Inode& n = **node;
    if (n.is_dir()) return fail(-EISDIR, "inode " + std::to_string(op.id.ino) + " is a directory");
    if (n.remote->moving()) return fail(-EBUSY, "inode " + std::to_string(op.id.ino) + " is moving");
    n.remote.reset();
    detached_.erase(op.id.ino);
    --n.attr.nlink;
    Outcome out{.attr = attr_of(n)};
    out.freed = settle(n, op.keep_orphan);
    return out;
}

}  // namespace pfs::meta
