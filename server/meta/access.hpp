// Who may do what to an inode, decided on the metadata server with the
// caller's uid and groups, the way Linux decides it for a local file system
// (generic_permission, POSIX ACLs, sticky directories, setattr_prepare,
// xattr_permission) and an NFS server for its clients. The client checks
// too, against attributes it may have cached; this check is the one that
// counts. Pure logic over values.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "inode.hpp"
#include "namespace_ops.hpp"
#include "result.hpp"

namespace pfs::meta {

// Who asks, after squashing: the uid, primary group and supplementary
// groups of the request.
struct Caller {
    uint32_t uid = 0;
    uint32_t gid = 0;
    std::vector<uint32_t> groups;

    bool root() const { return uid == 0; }
    bool in_group(uint32_t g) const;
    static Caller superuser() { return Caller{}; }
};

inline constexpr const char* kAclAccess = "system.posix_acl_access";
inline constexpr const char* kAclDefault = "system.posix_acl_default";

// R_OK | W_OK | X_OK on an inode with attr and xattrs: the ACL in
// system.posix_acl_access when there is one, else the mode bits. Root may
// read and write anything and search any directory, but executes only a
// file someone may execute. -EACCES when refused.
Status may_access(const Attr& attr, const Xattrs& xattrs, const Caller& c, int mask);

// Removing or renaming away an entry of dir (W and X on dir checked
// already) that names an inode owned by victim_uid: in a sticky directory
// only the owner of either, or root, may (-EPERM).
Status may_unlink_from(const Attr& dir, uint32_t victim_uid, const Caller& c);

// SETATTR: who may change what (-EPERM, or -EACCES where write permission
// would do), with changes adjusted as Linux adjusts them: a chmod by
// someone outside the file's group drops set-group-ID, a change of owner
// or group of a non-directory drops set-user-ID (and set-group-ID when it
// means mandatory group execution). times_now: the times asked for are
// "now" (UTIME_NOW), which whoever may write the file may set.
Status may_setattr(const Attr& attr, const Xattrs& xattrs, const Caller& c, AttrChanges& changes, bool times_now);

// Reading (write false) or setting and removing (write true) the xattr
// name: user.* needs read or write permission (and, written, a regular
// file or directory, not someone else's in a sticky directory), trusted.*
// root, security.* root to write, system.posix_acl_* the owner or root to
// write. -EPERM / -EACCES.
Status may_xattr(const Attr& attr, const Xattrs& xattrs, const Caller& c, std::string_view name, bool write);
// Whether listxattr shows name to c (trusted.* only to root).
bool lists_xattr(std::string_view name, const Caller& c);

// A POSIX ACL value as Linux stores it (version 2, entries of tag, perm,
// id in the order the kernel writes them): -EINVAL when malformed.
Status check_acl(std::string_view value, bool default_acl);

}  // namespace pfs::meta
