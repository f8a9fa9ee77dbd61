#include "access.hpp"

#include "namespace_checks.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

namespace pfs::meta {
namespace {

// The POSIX ACL xattr format (linux/posix_acl_xattr.h).
constexpr uint32_t kAclVersion = 2;
constexpr uint16_t kUserObj = 0x01, kUser = 0x02, kGroupObj = 0x04, kGroup = 0x08, kMask = 0x10, kOther = 0x20;
constexpr size_t kAclHeader = 4, kAclEntry = 8;

struct AclEntry {
    uint16_t tag;
    uint16_t perm;
    uint32_t id;
};

uint32_t le32(std::string_view s, size_t at) {
    uint32_t v = 0;
    for (int i = 3; i >= 0; --i) v = v << 8 | static_cast<uint8_t>(s[at + static_cast<size_t>(i)]);
    return v;
}

uint16_t le16(std::string_view s, size_t at) {
    return static_cast<uint16_t>(static_cast<uint8_t>(s[at]) | static_cast<uint8_t>(s[at + 1]) << 8);
}

// The entries of a well-formed ACL value; empty when malformed.
std::vector<AclEntry> parse_acl(std::string_view value) {
    std::vector<AclEntry> out;
    if (value.size() < kAclHeader || (value.size() - kAclHeader) % kAclEntry || le32(value, 0) != kAclVersion)
        return out;
    for (size_t at = kAclHeader; at < value.size(); at += kAclEntry)
        out.push_back(AclEntry{le16(value, at), le16(value, at + 2), le32(value, at + 4)});
    return out;
}

// posix_acl_permission(): the entry that applies to the caller, limited by
// the mask where the mask limits it.
Status acl_permission(const Attr& attr, const std::vector<AclEntry>& acl, const Caller& c, uint32_t want) {
    auto granted = [&](uint16_t perm) { return (perm & want) == want ? ok_status() : fail(-EACCES, "permission denied"); };
    auto masked = [&](size_t i, uint16_t perm) {
        for (size_t m = i + 1; m < acl.size(); ++m)
            if (acl[m].tag == kMask) return granted(perm & acl[m].perm);
        return granted(perm);
    };
    bool found = false;
    for (size_t i = 0; i < acl.size(); ++i) {
        const AclEntry& e = acl[i];
        switch (e.tag) {
        case kUserObj:
            if (c.uid == attr.uid) return granted(e.perm);
            break;
        case kUser:
            if (c.uid == e.id) return masked(i, e.perm);
            break;
        case kGroupObj:
        case kGroup:
            if (c.in_group(e.tag == kGroupObj ? attr.gid : e.id)) {
                found = true;
                if ((e.perm & want) == want) return masked(i, e.perm);
            }
            break;
        case kMask:
            break;
        case kOther:
            if (found) return fail(-EACCES, "permission denied");
            return granted(e.perm);
        }
    }
    return fail(-EACCES, "permission denied (ACL without an entry for others)");
}

bool is_owner(const Attr& attr, const Caller& c) { return c.root() || c.uid == attr.uid; }

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

}  // namespace

bool Caller::in_group(uint32_t g) const { return g == gid || std::find(groups.begin(), groups.end(), g) != groups.end(); }

Status may_access(const Attr& attr, const Xattrs& xattrs, const Caller& c, int mask) {
    if (mask & ~(R_OK | W_OK | X_OK)) return fail(-EINVAL, "unknown access mask bits");
    const auto want = static_cast<uint32_t>(mask);
    if (c.root()) {
        if (!(want & X_OK) || S_ISDIR(attr.mode) || (attr.mode & 0111)) return ok_status();
        return fail(-EACCES, "no execute bit set");
    }
    if (auto it = xattrs.find(kAclAccess); it != xattrs.end()) {
        auto acl = parse_acl(it->second);
        if (!acl.empty()) return acl_permission(attr, acl, c, want);
    }
    uint32_t bits = attr.mode;
    if (c.uid == attr.uid) bits >>= 6;
    else if (c.in_group(attr.gid)) bits >>= 3;
    if ((bits & want) != want) return fail(-EACCES, "permission denied");
    return ok_status();
}

Status may_unlink_from(const Attr& dir, uint32_t victim_uid, const Caller& c) {
    if (!(dir.mode & S_ISVTX) || c.root() || c.uid == dir.uid || c.uid == victim_uid) return ok_status();
    return fail(-EPERM, "sticky directory: only the owner of the entry or of the directory may remove it");
}

Status may_setattr(const Attr& attr, const Xattrs& xattrs, const Caller& c, AttrChanges& changes, bool times_now) {
    const bool owner = is_owner(attr, c);
    auto may_write = [&] { return may_access(attr, xattrs, c, W_OK); };
    if (changes.uid && *changes.uid != attr.uid && !c.root())
        return fail(-EPERM, "only root may give a file away");
    if (changes.uid && !owner) return fail(-EPERM, "only the owner may change the owner");
    if (changes.gid && !c.root() && !(owner && (*changes.gid == attr.gid || c.in_group(*changes.gid))))
        return fail(-EPERM, "only the owner may change the group, to one of its own groups");
    if (changes.mode && !owner) {
        // Someone who may write the file may drop its set-ID bits (what a
        // write does to a set-user-ID file), and nothing else.
        const uint32_t now_bits = attr.mode & 07777;
        const bool only_drops_set_id = (*changes.mode & ~(S_ISUID | S_ISGID)) == (now_bits & ~(S_ISUID | S_ISGID)) &&
                                       !(*changes.mode & ~now_bits);
        if (!only_drops_set_id) return fail(-EPERM, "only the owner may change the mode");
        if (auto st = may_write(); !st) return st;
    }
    if (changes.size) {
        if (auto st = may_write(); !st && !owner) return st;
    }
    if (changes.atime || changes.mtime) {
        if (!times_now && !owner) return fail(-EPERM, "only the owner may set explicit times");
        if (times_now && !owner) {
            if (auto st = may_write(); !st) return st;
        }
    }

    // Linux's adjustments, in the order notify_change makes them.
    if (changes.mode && !c.root() && !c.in_group(changes.gid ? *changes.gid : attr.gid)) *changes.mode &= ~S_ISGID;
    const bool new_owner = (changes.uid && *changes.uid != attr.uid) || (changes.gid && *changes.gid != attr.gid);
    if (new_owner && !S_ISDIR(attr.mode)) {
        uint32_t mode = changes.mode ? *changes.mode : attr.mode & 07777;
        uint32_t kill = S_ISUID;
        if ((mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP)) kill |= S_ISGID;
        if (mode & kill) changes.mode = mode & ~kill;
    }
    return ok_status();
}

Status may_xattr(const Attr& attr, const Xattrs& xattrs, const Caller& c, std::string_view name, bool write) {
    if (starts_with(name, "trusted.")) {
        if (!c.root()) return fail(-EPERM, "trusted.* xattrs are root's");
        return ok_status();
    }
    if (starts_with(name, "security.")) {
        if (write && !c.root()) return fail(-EPERM, "security.* xattrs are set by root");
        return ok_status();
    }
    if (name == kAclAccess || name == kAclDefault) {
        if (write && !is_owner(attr, c)) return fail(-EPERM, "only the owner may change an ACL");
        if (write && name == kAclDefault && !S_ISDIR(attr.mode))
            return fail(-EACCES, "default ACLs are for directories");
        return ok_status();
    }
    if (starts_with(name, "user.")) {
        const bool file_or_dir = S_ISREG(attr.mode) || S_ISDIR(attr.mode);
        if (write && !file_or_dir) return fail(-EPERM, "user xattrs only on regular files and directories");
        if (!file_or_dir) return ok_status();  // there are none to read
        if (write && S_ISDIR(attr.mode) && (attr.mode & S_ISVTX) && !is_owner(attr, c))
            return fail(-EPERM, "user xattrs of a sticky directory are its owner's");
        return may_access(attr, xattrs, c, write ? W_OK : R_OK);
    }
    return ok_status();  // the namespace refuses other names
}

bool lists_xattr(std::string_view name, const Caller& c) { return c.root() || !starts_with(name, "trusted."); }

Status check_acl(std::string_view value, bool default_acl) {
    if (value.size() < kAclHeader || (value.size() - kAclHeader) % kAclEntry || le32(value, 0) != kAclVersion)
        return fail(-EINVAL, "not a POSIX ACL (version 2 header and 8-byte entries)");
    auto acl = parse_acl(value);
    if (acl.empty()) return default_acl ? ok_status() : fail(-EINVAL, "an access ACL needs entries");
    // posix_acl_valid(): owner, named users, owning group, named groups,
    // the mask (required with named entries), others, in that order.
    auto invalid = [] { return fail(-EINVAL, "malformed ACL (entries missing or out of order)"); };
    uint16_t state = kUserObj;
    bool needs_mask = false;
    for (const auto& e : acl) {
        if (e.perm & ~7u) return fail(-EINVAL, "ACL permission bits beyond rwx");
        switch (e.tag) {
        case kUserObj:
            if (state != kUserObj) return invalid();
            state = kUser;
            break;
        case kUser:
        case kGroup:
            if (state != e.tag) return invalid();
            needs_mask = true;
            break;
        case kGroupObj:
            if (state != kUser) return invalid();
            state = kGroup;
            break;
        case kMask:
            if (state != kGroup) return invalid();
            state = kOther;
            break;
        case kOther:
            if (state != kOther && !(state == kGroup && !needs_mask)) return invalid();
            state = 0;
            break;
        default:
            return fail(-EINVAL, "unknown ACL entry tag");
        }
    }
    return state == 0 ? ok_status() : invalid();
}

}  // namespace pfs::meta
