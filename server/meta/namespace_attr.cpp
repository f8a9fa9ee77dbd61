// apply()'s handlers for changes to an inode itself: attributes, xattrs,
// stripe patterns, and freeing orphans.
#include "namespace.hpp"
#include "namespace_checks.hpp"

namespace pfs::meta {

namespace {

bool is_user_xattr(std::string_view name) { return name.substr(0, 5) == "user."; }

size_t xattr_list_size(const Xattrs& xattrs) {
    size_t n = 0;
    for (const auto& [name, value] : xattrs) n += name.size() + 1;  // listxattr's NUL-separated list
    return n;
}

// user.* xattrs exist on files and directories only; the VFS refuses
// writes to others with EPERM.
Status check_xattr_write(const Inode& node, std::string_view name) {
    if (auto st = check_xattr_name(name); !st) return st;
    if (is_user_xattr(name) && !node.is_file() && !node.is_dir())
        return fail(-EPERM, "user xattrs only on regular files and directories");
    return ok_status();
}

}  // namespace

Result<Outcome> Namespace::run(const SetattrOp& op) {
    const AttrChanges& c = op.changes;
    if (auto st = check_time(op.now); !st) return st.error();
    if (c.atime && !valid_time(*c.atime)) return fail(-EINVAL, "invalid atime");
    if (c.mtime && !valid_time(*c.mtime)) return fail(-EINVAL, "invalid mtime");
    auto node = find(op.id);
    if (!node) return node.error();
    Inode& n = **node;
    if (c.mode && (*c.mode & ~07777u)) return fail(-EINVAL, "mode bits beyond permissions");
    if (c.size) {
        if (n.is_dir()) return fail(-EISDIR, "cannot truncate a directory");
        if (!n.is_file()) return fail(-EINVAL, "cannot truncate a symlink");
        if (*c.size > kMaxFileSize) return fail(-EFBIG, "size beyond the maximum file size");
    }

    Outcome out;
    Attr& a = n.attr;
    if (c.mode) a.mode = (a.mode & S_IFMT) | *c.mode;
    if (c.uid) a.uid = *c.uid;
    if (c.gid) a.gid = *c.gid;
    if (c.atime) a.atime = *c.atime;
    if (c.mtime) a.mtime = *c.mtime;
    if (c.size) {
        out.size_change = SizeChange{a.size, *c.size};
        if (*c.size != a.size && !c.mtime) a.mtime = op.now;  // POSIX truncate()
        a.size = *c.size;
    }
    a.ctime = op.now;
    // A writer's report, a truncate or a fallocate: the chunk files changed.
    if (c.size || c.mtime) blocks_changed(n);
    out.attr = attr_of(n);
    return out;
}

Result<Outcome> Namespace::run(const SetXattrOp& op) {
    if (auto st = check_time(op.now); !st) return st.error();
    auto node = find(op.id);
    if (!node) return node.error();
    Inode& n = **node;
    if ((op.flags & ~(kXattrCreate | kXattrReplace)) || op.flags == (kXattrCreate | kXattrReplace))
        return fail(-EINVAL, "invalid xattr flags");
    if (auto st = check_xattr_name(op.name); !st) return st.error();
    if (op.value.size() > kXattrValueMax) return fail(-E2BIG, "xattr value larger than 64 KiB");
    if (auto st = check_xattr_write(n, op.name); !st) return st.error();
    auto it = n.xattrs.find(op.name);
    if (it != n.xattrs.end() && (op.flags & kXattrCreate))
        return fail(-EEXIST, "xattr " + quoted(op.name) + " exists");
    if (it == n.xattrs.end()) {
        if (op.flags & kXattrReplace) return fail(-ENODATA, "no xattr " + quoted(op.name));
        if (xattr_list_size(n.xattrs) + op.name.size() + 1 > kXattrListMax)
            return fail(-ENOSPC, "xattr names would exceed 64 KiB");
        n.xattrs.emplace(op.name, op.value);
    } else {
        it->second = op.value;
    }
    n.attr.ctime = op.now;
    return Outcome{.attr = attr_of(n)};
}

Result<Outcome> Namespace::run(const RemoveXattrOp& op) {
    if (auto st = check_time(op.now); !st) return st.error();
    auto node = find(op.id);
    if (!node) return node.error();
    Inode& n = **node;
    if (auto st = check_xattr_write(n, op.name); !st) return st.error();
    auto it = n.xattrs.find(op.name);
    if (it == n.xattrs.end()) return fail(-ENODATA, "no xattr " + quoted(op.name));
    n.xattrs.erase(it);
    n.attr.ctime = op.now;
    return Outcome{.attr = attr_of(n)};
}

Result<Outcome> Namespace::run(const SetPatternOp& op) {
    if (auto st = check_time(op.now); !st) return st.error();
    auto dir = find_dir(op.id);
    if (!dir) return dir.error();
    if (auto st = check_pattern(op.pattern); !st) return st.error();
    (*dir)->dir().pattern = op.pattern;
    (*dir)->attr.ctime = op.now;
    return Outcome{.attr = attr_of(**dir)};
}

Result<Outcome> Namespace::run(const UninlineOp& op) {
    auto node = find(op.id);
    if (!node) return node.error();
    auto* file = std::get_if<FileBody>(&(*node)->body);
    if (!file) return fail(-EINVAL, "not a regular file");
    if (op.begins) {
        if (file->inline_max == 0) return fail(-EINVAL, "the file is not inline");
        file->moving_out = true;
    } else {
        file->inline_max = 0;
        file->moving_out = false;
    }
    return Outcome{.attr = attr_of(**node)};
}

Result<Outcome> Namespace::run(const PurgeOp& op) {
    auto node = find(op.id);
    if (!node) return node.error();
    const Inode& n = **node;
    if (n.attr.nlink > 0) return fail(-EINVAL, "inode " + std::to_string(op.id.ino) + " still has links");
    if (n.opens > 0) return fail(-EBUSY, "inode " + std::to_string(op.id.ino) + " is still open");
    Outcome out{.attr = attr_of(n)};
    out.freed = free_inode(op.id.ino);
    return out;
}

}  // namespace pfs::meta
