// apply()'s handlers for the operations on directory entries. Each checks
// everything first and changes state only once nothing can fail, so a
// failed op leaves no trace. The error precedence follows Linux's VFS.
#include <dirent.h>

#include "namespace.hpp"
#include "namespace_checks.hpp"

namespace pfs::meta {

namespace {

// A directory's ".." moves from one parent to the other.
void move_dir(Inode& node, Inode& from, Inode& to) {
    --from.attr.nlink;
    ++to.attr.nlink;
    node.dir().parent = to.attr.id.ino;
}

}  // namespace

Result<Outcome> Namespace::run(const CreateOp& op) {
    if (auto st = check_time(op.now); !st) return st.error();
    auto parent = find_dir(op.parent);
    if (!parent) return parent.error();
    if (auto st = check_new_entry(**parent, op.name); !st) return st.error();
    if (auto st = check_new_id(op.id); !st) return st.error();
    if (op.mode & ~07777u) return fail(-EINVAL, "invalid file mode");
    if (auto st = check_layout(op.layout); !st) return st.error();
    Attr a{.id = op.id,
           .mode = S_IFREG | op.mode,
           .uid = op.uid,
           .gid = op.gid,
           .nlink = 1,
           .atime = op.now,
           .mtime = op.now,
           .ctime = op.now};
    if (auto st = check_inline_max(op.inline_max, op.layout); !st) return st.error();
    FileBody body{.layout = op.layout, .inline_max = op.inline_max, .blocks = 0};
    return Outcome{.attr = attr_of(add_inode(**parent, op.name, a, std::move(body)))};
}

Result<Outcome> Namespace::run(const MkdirOp& op) {
    if (auto st = check_time(op.now); !st) return st.error();
    auto parent = find_dir(op.parent);
    if (!parent) return parent.error();
    if (auto st = check_new_entry(**parent, op.name); !st) return st.error();
    if (auto st = check_new_id(op.id, !op.shards.empty()); !st) return st.error();
    if (op.mode & ~07777u) return fail(-EINVAL, "invalid directory mode");
    if (auto st = check_pattern(op.pattern); !st) return st.error();
    if ((*parent)->attr.nlink == UINT32_MAX) return fail(-EMLINK, "too many subdirectories");
    auto shards = new_shards(op.id, op.shards, 0, 0);
    if (!shards) return shards.error();
    DirBody body;
    body.parent = op.parent.ino;
    body.pattern = op.pattern;
    body.shards = std::move(*shards);
    Inode& node =
        add_inode(**parent, op.name, new_dir_attr(op.id, op.mode, op.uid, op.gid, op.now), std::move(body));
    ++(*parent)->attr.nlink;
    add_shard_entries(node);
    reserved_.erase(op.id.ino);
    return Outcome{.attr = attr_of(node)};
}

Result<Outcome> Namespace::run(const SymlinkOp& op) {
    if (auto st = check_time(op.now); !st) return st.error();
    auto parent = find_dir(op.parent);
    if (!parent) return parent.error();
    if (auto st = check_new_entry(**parent, op.name); !st) return st.error();
    if (auto st = check_new_id(op.id); !st) return st.error();
    if (auto st = check_symlink_target(op.target); !st) return st.error();
    Attr a{.id = op.id,
           .mode = S_IFLNK | 0777,
           .uid = op.uid,
           .gid = op.gid,
           .nlink = 1,
           .size = op.target.size(),
           .atime = op.now,
           .mtime = op.now,
           .ctime = op.now};
    return Outcome{.attr = attr_of(add_inode(**parent, op.name, a, SymlinkBody{op.target}))};
}

Result<Outcome> Namespace::run(const MknodOp& op) {
    if (auto st = check_time(op.now); !st) return st.error();
    auto parent = find_dir(op.parent);
    if (!parent) return parent.error();
    if (auto st = check_new_entry(**parent, op.name); !st) return st.error();
    if (auto st = check_new_id(op.id); !st) return st.error();
    if (!pfs_mknod_mode_valid(op.mode)) return fail(-EINVAL, "invalid special file mode");
    bool device = S_ISCHR(op.mode) || S_ISBLK(op.mode);
    Attr a{.id = op.id,
           .mode = op.mode,
           .uid = op.uid,
           .gid = op.gid,
           .nlink = 1,
           .atime = op.now,
           .mtime = op.now,
           .ctime = op.now,
           .rdev = device ? op.rdev : 0};
    return Outcome{.attr = attr_of(add_inode(**parent, op.name, a, SpecialBody{}))};
}

Result<Outcome> Namespace::run(const TmpfileOp& op) {
    if (auto st = check_time(op.now); !st) return st.error();
    auto dir = find_dir(op.dir);
    if (!dir) return dir.error();
    if (!(*dir)->accepts_entries()) return fail(-ENOENT, "the directory is being removed");
    if (auto st = check_new_id(op.id); !st) return st.error();
    if (op.mode & ~07777u) return fail(-EINVAL, "invalid file mode");
    if (auto st = check_layout(op.layout); !st) return st.error();
    if (auto st = check_inline_max(op.inline_max, op.layout); !st) return st.error();
    Inode& node = inodes_[op.id.ino];
    node.attr = Attr{.id = op.id,
                     .mode = S_IFREG | op.mode,
                     .uid = op.uid,
                     .gid = op.gid,
                     .nlink = 0,
                     .atime = op.now,
                     .mtime = op.now,
                     .ctime = op.now,
                     .btime = op.now};
    node.body = FileBody{.layout = op.layout, .inline_max = op.inline_max, .blocks = 0};
    node.linkable = true;
    next_ino_ = std::max<uint64_t>(next_ino_, op.id.ino + 1);
    count(node, +1);
    orphans_.insert(op.id.ino);
    return Outcome{.attr = attr_of(node)};
}

Result<Outcome> Namespace::run(const LinkOp& op) {
    if (auto st = check_time(op.now); !st) return st.error();
    auto node = find(op.id);
    if (!node) return node.error();
    auto parent = find_dir(op.parent);
    if (!parent) return parent.error();
    if (auto st = check_new_entry(**parent, op.name); !st) return st.error();
    Inode& n = **node;
    if (n.is_dir()) return fail(-EPERM, "hard links to directories are not allowed");
    if (n.remote) return fail(-EXDEV, "the file's entry is on another metadata server");
    if (n.attr.nlink == 0 && !n.linkable) return fail(-ENOENT, "the file has been unlinked");
    if (n.attr.nlink >= kLinkMax) return fail(-EMLINK, "too many links");
    (*parent)->dir().entries->insert(op.name, n.attr.id, n.dtype());
    if (n.attr.nlink == 0) orphans_.erase(n.attr.id.ino);  // an O_TMPFILE's first name
    n.linkable = false;
    touch_dir(**parent, op.now);
    ++n.attr.nlink;
    n.attr.ctime = op.now;
    return Outcome{.attr = attr_of(n)};
}

Result<Outcome> Namespace::run(const UnlinkOp& op) {
    if (auto st = check_time(op.now); !st) return st.error();
    auto parent = find_dir(op.parent);
    if (!parent) return parent.error();
    if (auto st = check_name(op.name); !st) return st.error();
    if (is_dot(op.name)) return fail(-EISDIR, quoted(op.name) + " is a directory");
    if (auto st = check_shard(**parent, op.name); !st) return st.error();
    const auto* slot = (*parent)->dir().entries->find(op.name);
    if (!slot) return fail(-ENOENT, "no entry " + quoted(op.name));
    if (slot->type == DT_DIR) return fail(-EISDIR, quoted(op.name) + " is a directory");
    if (!is_local(slot->id)) {
        // Its owner has prepared the removal of the file's link.
        Outcome out{.attr = Attr{.id = slot->id, .mode = mode_of_dtype(slot->type), .ctime = op.now}};
        remote_entries_.erase(EntryKey::of(slot->id));
        (*parent)->dir().entries->erase(op.name);
        touch_dir(**parent, op.now);
        return out;
    }
    auto node = find(slot->id);
    if (!node) return node.error();
    Inode& n = **node;
    if (n.is_dir()) return fail(-EISDIR, quoted(op.name) + " is a directory");
    if (n.remote) return fail(-EBUSY, quoted(op.name) + " is moving to another metadata server");
    (*parent)->dir().entries->erase(op.name);
    touch_dir(**parent, op.now);
    --n.attr.nlink;
    n.attr.ctime = op.now;
    Outcome out{.attr = attr_of(n)};
    out.freed = settle(n, op.keep_orphan);
    return out;
}

Result<Outcome> Namespace::run(const RmdirOp& op) {
    if (auto st = check_time(op.now); !st) return st.error();
    auto parent = find_dir(op.parent);
    if (!parent) return parent.error();
    if (auto st = check_name(op.name); !st) return st.error();
    if (op.name == ".") return fail(-EINVAL, "cannot remove '.'");
    if (op.name == "..") return fail(-ENOTEMPTY, "cannot remove '..'");
    if (auto st = check_shard(**parent, op.name); !st) return st.error();
    const auto* slot = (*parent)->dir().entries->find(op.name);
    if (!slot) return fail(-ENOENT, "no entry " + quoted(op.name));
    if (slot->type != DT_DIR) return fail(-ENOTDIR, quoted(op.name) + " is no directory");
    if (!is_local(slot->id)) {
        // Its owner has checked it is empty and keeps it so.
        Outcome out{.attr = Attr{.id = slot->id, .mode = S_IFDIR, .ctime = op.now}};
        remote_entries_.erase(EntryKey::of(slot->id));
        (*parent)->dir().entries->erase(op.name);
        --(*parent)->attr.nlink;
        touch_dir(**parent, op.now);
        return out;
    }
    auto node = find(slot->id);
    if (!node) return node.error();
    Inode& n = **node;
    if (!n.is_dir()) return fail(-ENOTDIR, quoted(op.name) + " is no directory");
    if (n.remote) return fail(-EBUSY, quoted(op.name) + " is moving to another metadata server");
    if (!n.dir().entries->empty()) return fail(-ENOTEMPTY, quoted(op.name) + " is not empty");
    (*parent)->dir().entries->erase(op.name);
    --(*parent)->attr.nlink;
    touch_dir(**parent, op.now);
    Outcome out{.attr = attr_of(n)};
    out.attr.nlink = 0;
    out.attr.ctime = op.now;
    free_inode(n.attr.id.ino);
    return out;
}

Result<Outcome> Namespace::run(const RenameOp& op) {
    if (auto st = check_time(op.now); !st) return st.error();
    bool exchange = op.flags & kRenameExchange;
    bool noreplace = op.flags & kRenameNoReplace;
    const bool checked = (op.flags & kRenameAncestryChecked) && !exchange;
    const bool victim_held = op.flags & kRenameVictimHeld;
    if ((op.flags & ~(kRenameNoReplace | kRenameExchange | kRenameAncestryChecked | kRenameVictimHeld)) ||
        (exchange && noreplace))
        return fail(-EINVAL, "invalid rename flags");
    auto src_parent = find_dir(op.src_parent);
    if (!src_parent) return src_parent.error();
    auto dst_parent = find_dir(op.dst_parent);
    if (!dst_parent) return dst_parent.error();
    if (auto st = check_name(op.src_name); !st) return st.error();
    if (auto st = check_name(op.dst_name); !st) return st.error();
    if (is_dot(op.src_name)) return fail(-EBUSY, "cannot rename " + quoted(op.src_name));
    if (is_dot(op.dst_name))
        return fail(noreplace ? -EEXIST : -EBUSY, "cannot rename onto " + quoted(op.dst_name));
    Inode& sp = **src_parent;
    Inode& dp = **dst_parent;
    if (auto st = check_shard(sp, op.src_name); !st) return st.error();
    if (auto st = check_shard(dp, op.dst_name); !st) return st.error();
    const auto* src_slot = sp.dir().entries->find(op.src_name);
    if (!src_slot) return fail(-ENOENT, "no entry " + quoted(op.src_name));
    const auto* dst_slot = dp.dir().entries->find(op.dst_name);
    if (noreplace && dst_slot) return fail(-EEXIST, quoted(op.dst_name) + " exists");
    if (exchange && !dst_slot) return fail(-ENOENT, "no entry " + quoted(op.dst_name));
    if (!dp.accepts_entries()) return fail(-ENOENT, "the directory is being removed");
    // An entry naming another server's directory has no inode here.
    auto src_node = entry_inode(*src_slot);
    if (!src_node) return src_node.error();
    Inode* src = *src_node;
    Inode* dst = nullptr;
    // The target names another server's inode, which its owner holds.
    std::optional<Directory::Slot> remote_victim;
    if (dst_slot) {
        if (!is_local(dst_slot->id)) {
            if (same_id(dst_slot->id, src_slot->id))  // one inode: nothing to do
                return Outcome{.attr = Attr{.id = src_slot->id, .mode = mode_of_dtype(src_slot->type)}};
            if (exchange) return fail(-EXDEV, quoted(op.dst_name) + " is on another metadata server");
            if (auto st = check_remote_victim(dst_slot->type, src_slot->type == DT_DIR, op.dst_name, victim_held); !st)
                return st.error();
            remote_victim = *dst_slot;
        }
    }
    if (dst_slot && !remote_victim) {
        auto found = find(dst_slot->id);
        if (!found) return found.error();
        dst = *found;
        if (dst->remote) return fail(-EBUSY, quoted(op.dst_name) + " is moving to another metadata server");
    }
    if (src && src->remote) return fail(-EBUSY, quoted(op.src_name) + " is moving to another metadata server");
    const bool src_is_dir = src_slot->type == DT_DIR;
    const pfs_entry_id src_id = src_slot->id;
    const uint8_t src_type = src_slot->type;
    const bool moved = &sp != &dp;
    // Neither directory may end up inside itself. Beyond a detached
    // directory the way up is another server's: not decided here.
    if (moved && src_is_dir) {
        switch (ancestry(dp.attr.id.ino, src ? src->attr.id.ino : 0)) {
        case Ancestry::yes: return fail(-EINVAL, "cannot move a directory into itself");
        case Ancestry::unknown:
            if (checked) break;
            return fail(-EXDEV, "the target directory's ancestors are on another server");
        case Ancestry::no: break;
        }
    }
    if (moved && dst && dst->is_dir()) {
        switch (ancestry(sp.attr.id.ino, dst->attr.id.ino)) {
        case Ancestry::yes:
            return fail(exchange ? -EINVAL : -ENOTEMPTY, quoted(op.dst_name) + " contains the source");
        case Ancestry::unknown:
            if (checked) break;  // an empty victim contains nothing
            return fail(-EXDEV, "the source directory's ancestors are on another server");
        case Ancestry::no: break;
        }
    }
    if (src && dst == src) return Outcome{.attr = attr_of(*src)};  // two links to one inode: nothing to do
    if (dst && !exchange)
        if (auto st = check_victim(*dst, src_is_dir, op.dst_name, victim_held); !st) return st.error();
    // A directory's ".." moves from one parent to the other (for another
    // server's directory only the link counts here change).
    auto move_subdir = [](Inode* node, Inode& from, Inode& to) {
        if (node) move_dir(*node, from, to);
        else {
            --from.attr.nlink;
            ++to.attr.nlink;
        }
    };

    Outcome out;
    if (exchange) {
        out.replaced = dst->attr.id;
        sp.dir().entries->repoint(op.src_name, dst->attr.id, dst->dtype());
        dp.dir().entries->repoint(op.dst_name, src_id, src_type);
        if (moved && src_is_dir) move_subdir(src, sp, dp);
        if (moved && dst->is_dir()) move_dir(*dst, dp, sp);
        dst->attr.ctime = op.now;
    } else {
        if (dst || remote_victim) {
            // The target keeps its cookie: readers that listed it are not
            // shown the name a second time.
            out.replaced = dst ? dst->attr.id : remote_victim->id;
            dp.dir().entries->repoint(op.dst_name, src_id, src_type);
        } else {
            dp.dir().entries->insert(op.dst_name, src_id, src_type);
        }
        sp.dir().entries->erase(op.src_name);
        if (moved && src_is_dir) move_subdir(src, sp, dp);
        if (dst) out.freed = drop_victim(dp, *dst, op.keep_orphan, op.now);
        if (remote_victim) drop_remote_victim(dp, remote_victim->id, remote_victim->type);
    }
    if (!src && moved) remote_entries_[EntryKey::of(src_id)] = dp.attr.id.ino;
    touch_dir(sp, op.now);
    touch_dir(dp, op.now);
    if (src) {
        src->attr.ctime = op.now;
        out.attr = attr_of(*src);
    } else {
        out.attr = Attr{.id = src_id, .mode = mode_of_dtype(src_type), .ctime = op.now};
    }
    return out;
}

Status Namespace::check_victim_kind(bool victim_is_dir, bool src_is_dir, std::string_view name) {
    if (src_is_dir && !victim_is_dir) return fail(-ENOTDIR, quoted(name) + " is no directory");
    if (!src_is_dir && victim_is_dir) return fail(-EISDIR, quoted(name) + " is a directory");
    return ok_status();
}

Status Namespace::check_victim(const Inode& victim, bool src_is_dir, std::string_view name, bool victim_held) {
    if (auto st = check_victim_kind(victim.is_dir(), src_is_dir, name); !st) return st;
    if (victim.is_dir() && !victim.dir().entries->empty()) return fail(-ENOTEMPTY, quoted(name) + " is not empty");
    // Whether its other shards are empty is theirs to say.
    if (victim.is_dir() && victim.dir().shards.striped() && !victim_held)
        return fail(-EXDEV, quoted(name) + " is a striped directory");
    return ok_status();
}

Status Namespace::check_remote_victim(uint8_t type, bool src_is_dir, std::string_view name, bool victim_held) {
    if (auto st = check_victim_kind(type == DT_DIR, src_is_dir, name); !st) return st;
    if (!victim_held) return fail(-EXDEV, quoted(name) + " is on another metadata server");
    return ok_status();
}

void Namespace::drop_remote_victim(Inode& parent, const pfs_entry_id& id, uint8_t type) {
    remote_entries_.erase(EntryKey::of(id));
    if (type == DT_DIR) --parent.attr.nlink;
}

std::optional<FreedFile> Namespace::drop_victim(Inode& parent, Inode& victim, bool keep_orphan, Timespec now) {
    if (victim.is_dir()) {
        --parent.attr.nlink;
        free_inode(victim.attr.id.ino);
        return std::nullopt;
    }
    --victim.attr.nlink;
    victim.attr.ctime = now;
    return settle(victim, keep_orphan);
}

}  // namespace pfs::meta
