// Validation shared by the namespace's operations and its snapshot loader,
// with the errno Linux gives for each violation. Internal header.
#pragma once

#include <string>
#include <string_view>

#include "inode.hpp"
#include "result.hpp"

namespace pfs::meta {

inline Error fail(int code, std::string message) { return Error{code, std::move(message)}; }

inline std::string quoted(std::string_view name) { return "'" + std::string(name) + "'"; }

inline bool is_dot(std::string_view name) { return name == "." || name == ".."; }

// A single path component (dots allowed: callers decide what they mean).
inline Status check_name(std::string_view name) {
    if (name.empty()) return fail(-ENOENT, "empty name");
    if (name.size() > kNameMax) return fail(-ENAMETOOLONG, "name longer than 255 bytes");
    if (name.find_first_of(std::string_view("/\0", 2)) != std::string_view::npos)
        return fail(-EINVAL, "name contains '/' or NUL");
    return ok_status();
}

// A name of dir's own shard (a striped directory keeps each name in one).
inline Status check_shard(const Inode& dir, std::string_view name) {
    const DirShards& s = dir.dir().shards;
    if (s.keeps(name)) return ok_status();
    return fail(PFS_E_WRONG_SHARD, quoted(name) + " belongs to shard " +
                                       std::to_string(pfs_dir_shard(name.data(), static_cast<uint32_t>(name.size()), s.count)) +
                                       " of this striped directory, not " + std::to_string(s.index));
}

// A name for a new entry in parent (a directory): valid, its shard's, and
// not taken.
inline Status check_new_entry(const Inode& parent, std::string_view name) {
    if (auto st = check_name(name); !st) return st;
    if (auto st = check_shard(parent, name); !st) return st;
    if (!parent.accepts_entries()) return fail(-ENOENT, "the directory is being removed");
    if (is_dot(name) || parent.dir().entries->find(name)) return fail(-EEXIST, quoted(name) + " exists");
    return ok_status();
}

inline void touch_dir(Inode& dir, Timespec now) { dir.attr.mtime = dir.attr.ctime = now; }

// A directory made at `now`: its own entry and "." link to it.
inline Attr new_dir_attr(const pfs_entry_id& id, uint32_t mode, uint32_t uid, uint32_t gid, Timespec now) {
    return Attr{.id = id,
                .mode = S_IFDIR | mode,
                .uid = uid,
                .gid = gid,
                .nlink = 2,
                .atime = now,
                .mtime = now,
                .ctime = now,
                .btime = now};
}

inline Status check_time(const Timespec& t) {
    if (!valid_time(t)) return fail(-EINVAL, "nanoseconds out of range");
    return ok_status();
}

// A directory's shards agree with each other: shard 0 lists them all
// (itself first, distinct servers' ids), another only knows its place.
inline bool check_shards(const Inode& dir) {
    const DirShards& s = dir.dir().shards;
    if (s.count == 0 || s.count > PFS_DIR_SHARDS_MAX || s.index >= s.count) return false;
    if (s.index > 0) return s.ids.empty() && dir.remote.has_value();
    if (!s.striped()) return s.ids.empty();
    if (s.ids.size() != s.count || !same_id(s.ids[0], dir.attr.id)) return false;
    for (size_t i = 1; i < s.ids.size(); ++i)
        if (s.ids[i].owner_node == dir.attr.id.owner_node || s.ids[i].ino == 0 || s.ids[i].generation == 0)
            return false;
    return true;
}

inline Status check_pattern(const StripePattern& p) {
    if (p.dir_stripes > PFS_DIR_SHARDS_MAX)
        return fail(-EINVAL, "dir-stripes above " + std::to_string(PFS_DIR_SHARDS_MAX));
    if (pfs_stripe_check(p.chunk_size, p.num_targets) || p.pool_id == 0)
        return fail(-EINVAL, "invalid stripe pattern (chunk size a power of two in 64 KiB..1 GiB, "
                             "1..256 targets, a pool)");
    if (p.inline_max > p.chunk_size || p.inline_max > PFS_INLINE_MAX)
        return fail(-EINVAL, "inline-max above the chunk size or " + std::to_string(PFS_INLINE_MAX >> 10) + " KiB");
    return ok_status();
}

// An inline file's data fits in its layout's first chunk: moving it out
// is one copy to the first target.
inline Status check_inline_max(uint32_t inline_max, const StripeLayout& l) {
    if (inline_max > l.chunk_size || inline_max > PFS_INLINE_MAX) return fail(-EINVAL, "invalid inline-max");
    return ok_status();
}

inline Status check_layout(const StripeLayout& l) {
    if (pfs_stripe_check(l.chunk_size, static_cast<uint32_t>(l.targets.size())) || l.pool_id == 0)
        return fail(-EINVAL, "invalid stripe layout");
    for (size_t i = 0; i < l.targets.size(); ++i) {
        if (l.targets[i] == 0) return fail(-EINVAL, "stripe layout names target 0");
        for (size_t j = 0; j < i; ++j)
            if (l.targets[j] == l.targets[i]) return fail(-EINVAL, "stripe layout repeats a target");
    }
    return ok_status();
}

inline Status check_symlink_target(std::string_view target) {
    if (target.empty()) return fail(-ENOENT, "empty symlink target");
    if (target.size() > kSymlinkMax) return fail(-ENAMETOOLONG, "symlink target longer than 4095 bytes");
    if (target.find('\0') != std::string_view::npos) return fail(-EINVAL, "symlink target contains NUL");
    return ok_status();
}

// The namespaces Linux knows; names outside them never reach a file system.
inline Status check_xattr_name(std::string_view name) {
    if (name.empty() || name.size() > kXattrNameMax) return fail(-ERANGE, "xattr name empty or too long");
    if (name.find('\0') != std::string_view::npos) return fail(-EINVAL, "xattr name contains NUL");
    for (std::string_view prefix : {"user.", "trusted.", "security.", "system."}) {
        if (name.substr(0, prefix.size()) != prefix) continue;
        if (name.size() == prefix.size()) return fail(-EINVAL, "xattr name without a name after its prefix");
        return ok_status();
    }
    return fail(-EOPNOTSUPP, "xattr name " + quoted(name) + " is in no known namespace");
}

}  // namespace pfs::meta
