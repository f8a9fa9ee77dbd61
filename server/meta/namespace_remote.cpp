// Directories across metadata servers. A directory placed on another server
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

bool Namespace::names(const pfs_entry_id& remote_dir) const {
    return remote_entries_.contains(EntryKey::of(remote_dir));
}

std::vector<DetachedDir> Namespace::detached(uint64_t after, size_t max) const {
    std::vector<DetachedDir> out;
    for (auto it = detached_.upper_bound(after); it != detached_.end() && out.size() < max; ++it) {
        const Inode& n = inodes_.at(*it);
        out.push_back(DetachedDir{n.attr.id, *n.dir().remote});
    }
    return out;
}

Result<uint8_t> Namespace::detached_state(const pfs_entry_id& id) const {
    auto node = find(id);
    if (!node) return node.error();
    if (!(*node)->is_dir() || !(*node)->dir().remote) return fail(-EINVAL, "not a detached directory");
    return (*node)->dir().remote->state;
}

std::vector<DetachedDir> Namespace::unsettled() const {
    std::vector<DetachedDir> out;
    for (uint64_t ino : detached_) {
        const Inode& n = inodes_.at(ino);
        if (n.dir().remote->state != PFS_DETACHED_CONFIRMED) out.push_back(DetachedDir{n.attr.id, *n.dir().remote});
    }
    return out;
}

// ---- planning ----

Result<Attr> Namespace::mkdir_detached(const pfs_entry_id& parent, uint32_t mode, uint32_t uid, uint32_t gid,
                                       const StripePattern& pattern, Timespec now) {
    auto done = apply(DetachedMkdirOp{.parent = parent,
                                      .id = next_id(),
                                      .mode = mode,
                                      .uid = uid,
                                      .gid = gid,
                                      .pattern = pattern,
                                      .now = now});
    if (!done) return done.error();
    return done->attr;
}

Status Namespace::set_detached_state(const pfs_entry_id& id, uint8_t state) {
    auto done = apply(DetachedStateOp{.id = id, .state = state});
    if (!done) return done.error();
    return ok_status();
}

Status Namespace::remove_detached(const pfs_entry_id& id) {
    auto done = apply(DetachedRmdirOp{.id = id});
    if (!done) return done.error();
    return ok_status();
}

Result<Attr> Namespace::add_remote_dir(const pfs_entry_id& dir, std::string_view name, const pfs_entry_id& id,
                                       Timespec now) {
    auto done = apply(RemoteEntryOp{.parent = dir, .name = std::string(name), .id = id, .now = now});
    if (!done) return done.error();
    return done->attr;
}

// ---- execution ----

namespace {

Result<Inode*> detached_dir(Result<Inode*> found) {
    if (!found) return found.error();
    if (!(*found)->is_dir() || !(*found)->dir().remote) return fail(-EINVAL, "not a detached directory");
    return *found;
}

}  // namespace

Result<Outcome> Namespace::run(const DetachedMkdirOp& op) {
    if (auto st = check_time(op.now); !st) return st.error();
    if (is_local(op.parent) || op.parent.ino == 0 || op.parent.generation == 0)
        return fail(-EINVAL, "a detached directory's parent is on another server");
    if (auto st = check_new_id(op.id); !st) return st.error();
    if (op.mode & ~07777u) return fail(-EINVAL, "invalid directory mode");
    if (auto st = check_pattern(op.pattern); !st) return st.error();
    Inode& node = inodes_[op.id.ino];
    node.attr = new_dir_attr(op.id, op.mode, op.uid, op.gid, op.now);
    DirBody body;
    body.parent = op.id.ino;
    body.pattern = op.pattern;
    body.remote = RemoteParent{op.parent, PFS_DETACHED_CREATED};
    node.body = std::move(body);
    next_ino_ = std::max<uint64_t>(next_ino_, op.id.ino + 1);
    detached_.insert(op.id.ino);
    count(node, +1);
    return Outcome{.attr = attr_of(node)};
}

Result<Outcome> Namespace::run(const DetachedStateOp& op) {
    auto node = detached_dir(find(op.id));
    if (!node) return node.error();
    DirBody& d = (*node)->dir();
    if (op.state > PFS_DETACHED_REMOVING) return fail(-EINVAL, "invalid detached directory state");
    if (op.state == PFS_DETACHED_REMOVING && !d.entries->empty())
        return fail(-ENOTEMPTY, "directory " + std::to_string(op.id.ino) + " is not empty");
    d.remote->state = op.state;
    return Outcome{.attr = attr_of(**node)};
}

Result<Outcome> Namespace::run(const DetachedRmdirOp& op) {
    auto node = detached_dir(find(op.id));
    if (!node) return node.error();
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
    if (is_local(op.id) || op.id.ino == 0 || op.id.generation == 0)
        return fail(-EINVAL, "a remote entry names another server's directory");
    if (names(op.id)) return fail(-EEXIST, "an entry names that directory already");
    if (p.attr.nlink == UINT32_MAX) return fail(-EMLINK, "too many subdirectories");
    p.dir().entries->insert(op.name, op.id, DT_DIR);
    ++p.attr.nlink;
    touch_dir(p, op.now);
    remote_entries_.insert(EntryKey::of(op.id));
    return Outcome{.attr = Attr{.id = op.id, .mode = S_IFDIR, .nlink = 2, .ctime = op.now}};
}

}  // namespace pfs::meta
