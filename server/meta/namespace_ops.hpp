// Every change to the namespace as a plain value: the journal records these,
// recovery replays them. An op carries every decision taken when it was
// planned (allocated ids, chosen targets, the time, whether a victim stays
// as an open orphan), so applying it again to the same state gives the same
// state, byte for byte.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "inode.hpp"
#include "result.hpp"

namespace pfs::meta {

struct CreateOp {
    pfs_entry_id parent{};
    std::string name{};
    pfs_entry_id id{};  // the new inode
    uint32_t mode = 0;  // permission bits (S_IFREG or no type bits)
    uint32_t uid = 0;
    uint32_t gid = 0;
    StripeLayout layout{};
    uint32_t inline_max = 0;  // FileBody::inline_max (op version 2 on)
    Timespec now{};
};

struct MkdirOp {
    pfs_entry_id parent{};
    std::string name{};
    pfs_entry_id id{};
    uint32_t mode = 0;
    uint32_t uid = 0;
    uint32_t gid = 0;
    StripePattern pattern{};
    Timespec now{};
    // A striped directory (op version 3 on): every shard's id, id first
    // (a reserved id: Namespace::reserve_dir_id); empty: not striped.
    std::vector<pfs_entry_id> shards{};
};

struct SymlinkOp {
    pfs_entry_id parent{};
    std::string name{};
    pfs_entry_id id{};
    std::string target{};
    uint32_t uid = 0;
    uint32_t gid = 0;
    Timespec now{};
};

struct LinkOp {
    pfs_entry_id id{};  // the existing inode
    pfs_entry_id parent{};
    std::string name{};
    Timespec now{};
};

struct UnlinkOp {
    pfs_entry_id parent{};
    std::string name{};
    bool keep_orphan = false;  // the victim was open: keep it at nlink 0
    Timespec now{};
};

// Also removes an entry naming a directory on another server (whose owner
// has checked it is empty and holds it so).
struct RmdirOp {
    pfs_entry_id parent{};
    std::string name{};
    Timespec now{};
};

inline constexpr uint32_t kRenameNoReplace = 1u << 0;  // RENAME_NOREPLACE
inline constexpr uint32_t kRenameExchange = 1u << 1;   // RENAME_EXCHANGE
// Set by the server, never by a client: the moved directory's way up, which
// leaves this server, was checked not to pass through it (across servers).
inline constexpr uint32_t kRenameAncestryChecked = 1u << 31;
// Set by the server: what of the entry the rename replaces lies on other
// servers is held for removal there (RMDIR_DETACHED PREPARE): a striped
// directory's other shards, or the inode an entry of another server's
// names, which its owner removes once the rename is durable.
inline constexpr uint32_t kRenameVictimHeld = 1u << 30;

struct RenameOp {
    pfs_entry_id src_parent{};
    std::string src_name{};
    pfs_entry_id dst_parent{};
    std::string dst_name{};
    uint32_t flags = 0;
    bool keep_orphan = false;  // a replaced file was open: keep it at nlink 0
    Timespec now{};
};

struct AttrChanges {
    std::optional<uint32_t> mode{};  // permission bits; the type never changes
    std::optional<uint32_t> uid{};
    std::optional<uint32_t> gid{};
    std::optional<uint64_t> size{};  // regular files only
    std::optional<Timespec> atime{};
    std::optional<Timespec> mtime{};
};

struct SetattrOp {
    pfs_entry_id id{};
    AttrChanges changes{};
    Timespec now{};
};

inline constexpr uint32_t kXattrCreate = 1;   // XATTR_CREATE
inline constexpr uint32_t kXattrReplace = 2;  // XATTR_REPLACE

struct SetXattrOp {
    pfs_entry_id id{};
    std::string name{};
    std::string value{};  // bytes, not text
    uint32_t flags = 0;
    Timespec now{};
};

struct RemoveXattrOp {
    pfs_entry_id id{};
    std::string name{};
    Timespec now{};
};

struct SetPatternOp {
    pfs_entry_id id{};  // a directory
    StripePattern pattern{};
    Timespec now{};
};

// Frees an inode that has no links left and is no longer open: the last
// close of an unlinked file, or recovery cleaning up orphans.
struct PurgeOp {
    pfs_entry_id id{};
};

// A directory made here for an entry on another metadata server (its
// parent's owner): no entry of this server names it. It starts CREATED.
struct DetachedMkdirOp {
    pfs_entry_id parent{};  // on another server
    pfs_entry_id id{};
    uint32_t mode = 0;
    uint32_t uid = 0;
    uint32_t gid = 0;
    StripePattern pattern{};
    Timespec now{};
    // Op version 3 on. A striped directory: as MkdirOp::shards. Or a shard
    // (index 1 and up) of parent, a striped directory of count shards.
    std::vector<pfs_entry_id> shards{};
    uint32_t shard_index = 0;
    uint32_t shard_count = 0;
};

// A detached directory confirmed (CONFIRMED), its removal prepared
// (REMOVING: it must be empty, and takes no entries until settled).
struct DetachedStateOp {
    pfs_entry_id id{};
    uint8_t state = 0;  // enum pfs_detached_state
};

// Removes an empty detached directory: its entry is gone, or never was.
struct DetachedRmdirOp {
    pfs_entry_id id{};
};

// An entry naming a directory on another metadata server.
struct RemoteEntryOp {
    pfs_entry_id parent{};
    std::string name{};
    pfs_entry_id id{};  // owned by another server
    Timespec now{};
};

// On an inode's owner: where its entry is (none: a local entry names it).
struct MoveStateOp {
    pfs_entry_id id{};
    std::optional<RemoteParent> remote{};
};

// On the target directory's server: an entry naming an inode moved in, of
// another server or one of this server MOVING into parent. A local entry of
// that name is replaced (the planner checked for noreplace).
struct MovedLinkOp {
    pfs_entry_id parent{};
    std::string name{};
    pfs_entry_id id{};
    uint8_t type = 0;          // DT_*
    bool keep_orphan = false;  // a replaced file was open: keep it at nlink 0
    Timespec now{};
    // What of the entry replaced lies on other servers is held for removal
    // there (op version 3 on), as kRenameVictimHeld says.
    bool victim_held = false;
};

// Drops an entry whose inode moved: one of another server, or one of this
// server MOVING out of parent. The inode is not touched.
struct DropEntryOp {
    pfs_entry_id parent{};
    std::string name{};
    pfs_entry_id id{};
    Timespec now{};
};

// A detached file's entry (on another server) is gone: its one link is.
struct DetachedUnlinkOp {
    pfs_entry_id id{};
    bool keep_orphan = false;  // it was open: keep it at nlink 0
};

// The chunks of these freed files are gone from every target of their
// layouts: they leave the set of files to reap.
struct ReapedOp {
    std::vector<pfs_entry_id> ids{};
};

// A FIFO, socket, character or block device.
struct MknodOp {
    pfs_entry_id parent{};
    std::string name{};
    pfs_entry_id id{};
    uint32_t mode = 0;  // S_IFIFO, S_IFSOCK, S_IFCHR or S_IFBLK | permission bits
    uint32_t rdev = 0;  // devices: new_encode_dev(); others 0
    uint32_t uid = 0;
    uint32_t gid = 0;
    Timespec now{};
};

// O_TMPFILE: a regular file no entry names, at nlink 0 (in dir's file
// system, with dir's pattern); it lives while open, or once LINK names it.
struct TmpfileOp {
    pfs_entry_id dir{};
    pfs_entry_id id{};
    uint32_t mode = 0;  // permission bits
    uint32_t uid = 0;
    uint32_t gid = 0;
    StripeLayout layout{};
    uint32_t inline_max = 0;  // FileBody::inline_max (op version 2 on)
    Timespec now{};
};

// An inline file's data is on its storage targets now (copied and synced
// there first): it is inline no more. begins (op version 4 on): only that
// the copy starts, so that the targets may hold chunks of it from now on.
struct UninlineOp {
    pfs_entry_id id{};
    bool begins = false;
};

// The encoding tags an op with its index here: append new kinds at the end.
using Op = std::variant<CreateOp, MkdirOp, SymlinkOp, LinkOp, UnlinkOp, RmdirOp, RenameOp, SetattrOp,
                        SetXattrOp, RemoveXattrOp, SetPatternOp, PurgeOp, DetachedMkdirOp, DetachedStateOp,
                        DetachedRmdirOp, RemoteEntryOp, MoveStateOp, MovedLinkOp, DropEntryOp, DetachedUnlinkOp,
                        ReapedOp, MknodOp, TmpfileOp, UninlineOp>;

// Files in one ReapedOp at most.
inline constexpr size_t kReapedMax = 4096;

// Little-endian, versioned, through the shared C codec. Fails only for an
// op whose strings or lists exceed the namespace's limits (which apply()
// would refuse anyway).
Result<std::vector<uint8_t>> encode_op(const Op& op);
// Bounds-checked: any truncation, trailing byte or out-of-range field is an
// error. Semantic checks (names, modes, layouts) are apply()'s.
Result<Op> decode_op(std::span<const uint8_t> bytes);

}  // namespace pfs::meta
