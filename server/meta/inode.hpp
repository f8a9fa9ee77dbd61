// The values the metadata namespace is made of: times, stripe patterns and
// layouts, attributes, and the inode with its kind-specific body.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <span>
#include <variant>
#include <vector>

extern "C" {
#include "pfs_proto.h"
#include "pfs_stripe.h"
}

#include "directory.hpp"
#include "stripe_layout.hpp"

namespace pfs::meta {

inline constexpr uint64_t kRootIno = 1;
inline constexpr uint32_t kNameMax = 255;        // NAME_MAX
inline constexpr uint32_t kSymlinkMax = 4095;    // PATH_MAX without the NUL
inline constexpr uint32_t kXattrNameMax = 255;   // XATTR_NAME_MAX
inline constexpr uint32_t kXattrValueMax = 65536;  // XATTR_SIZE_MAX
inline constexpr uint32_t kXattrListMax = 65536;   // XATTR_LIST_MAX
inline constexpr uint32_t kLinkMax = 65000;      // hard links to one file, as ext4
inline constexpr uint64_t kMaxFileSize = PFS_MAX_FILE_OFFSET;

inline bool same_id(const pfs_entry_id& a, const pfs_entry_id& b) {
    return a.ino == b.ino && a.owner_node == b.owner_node && a.generation == b.generation;
}

struct Timespec {
    int64_t sec = 0;
    uint32_t nsec = 0;  // < 1e9
    friend bool operator==(const Timespec&, const Timespec&) = default;
};

inline bool valid_time(const Timespec& t) { return t.nsec < 1000000000u; }

// What a directory hands down to the files and subdirectories created in it.
struct StripePattern {
    uint32_t chunk_size = 1u << 20;
    uint32_t num_targets = 4;
    uint32_t pool_id = PFS_DEFAULT_POOL_ID;
    // Files made here keep up to this many bytes with the metadata server
    // (0: none); at most chunk_size and PFS_INLINE_MAX.
    uint32_t inline_max = 0;
    // Directories made here are striped over this many metadata servers
    // (0, 1: not striped); at most PFS_DIR_SHARDS_MAX.
    uint32_t dir_stripes = 0;
    friend bool operator==(const StripePattern&, const StripePattern&) = default;
};

// A new file system's root keeps files up to this size inline (and so do
// the directories made under it, which inherit its pattern): reading a
// 100 KiB file is then one round trip to the metadata server, writing one
// skips the storage targets (README, "Inline small files").
inline constexpr uint32_t kDefaultInlineMax = 128u << 10;
inline StripePattern default_root_pattern() { return StripePattern{.inline_max = kDefaultInlineMax}; }

// A file's stripe layout: fixed at create, the targets in stripe order.
using StripeLayout = pfs::StripeLayout;
using pfs::inline_layout;
using pfs::is_inline_layout;

// The attributes stat(2) reports; mode carries the S_IFMT type bits.
struct Attr {
    pfs_entry_id id{};
    uint32_t mode = 0;
    uint32_t uid = 0;
    uint32_t gid = 0;
    uint32_t nlink = 0;
    uint64_t size = 0;  // directories: number of entries; symlinks: target length
    Timespec atime{}, mtime{}, ctime{};
    uint32_t rdev = 0;  // device files: new_encode_dev() of the number
    Timespec btime{};   // creation, never changed (statx's STATX_BTIME)
    // Regular files: st_blocks as last counted on the targets, or
    // PFS_BLOCKS_UNKNOWN (FileBody::blocks); 0 for other types.
    uint64_t blocks = 0;
    // PFS_ATTR_* bits: which xattrs that clients probe on every stat it
    // has (Namespace::attr_of; not kept apart from the xattrs themselves).
    uint32_t xattrs = 0;
};

using Xattrs = std::map<std::string, std::string, std::less<>>;

struct FileBody {
    // The storage targets the data goes to (at once, or once it outgrows
    // inline_max).
    StripeLayout layout;
    // Not 0: the data is inline, kept by this server (its inline store),
    // while it fits in this many bytes. 0 for good once moved out.
    uint32_t inline_max = 0;
    // st_blocks: what the chunk files take, as the last count over the
    // targets found (Namespace::start_blocks_count). Not persisted: a
    // restarted server counts again. A size or mtime set (a writer's
    // report, a truncate, a fallocate) makes it unknown and moves the
    // epoch, so a count that overlapped the change is not kept.
    uint64_t blocks = PFS_BLOCKS_UNKNOWN;
    uint64_t blocks_epoch = 0;
    bool blocks_counting = false;
    // An inline file whose move to its targets has begun (durably): chunk
    // files may be there, left by a move cut short. One that never began
    // has none, and its removal asks its targets for nothing.
    bool moving_out = false;
};

// An inode whose entry lives with another metadata server: the directory
// there that names it. state: enum pfs_detached_state. A directory just
// made (CREATED), an inode about to be removed (REMOVING) or one whose entry
// moves (MOVING, from `from` to `dir`; either may be a directory here) is
// settled by asking the directories' owners whether their entries durably
// name it (ENTRY_CHECK).
struct RemoteParent {
    pfs_entry_id dir{};
    uint8_t state = PFS_DETACHED_CREATED;
    pfs_entry_id from{};  // MOVING only

    bool moving() const { return state == PFS_DETACHED_MOVING; }
};

// A directory striped over metadata servers keeps each name in shard
// pfs_dir_shard(name, count). Shard 0 is the directory itself; the others
// are detached directories of other servers whose RemoteParent is it.
struct DirShards {
    uint32_t index = 0;
    uint32_t count = 1;  // 1: not striped
    // Shard 0 only: every shard's id, its own first.
    std::vector<pfs_entry_id> ids{};

    bool striped() const { return count > 1; }
    // Shard 0: the other shards' ids.
    std::span<const pfs_entry_id> others() const {
        return ids.empty() ? std::span<const pfs_entry_id>{} : std::span<const pfs_entry_id>(ids).subspan(1);
    }
    // Whether `name` belongs in this shard ("." and ".." in every one).
    bool keeps(std::string_view name) const {
        return !striped() || name == "." || name == ".." ||
               pfs_dir_shard(name.data(), static_cast<uint32_t>(name.size()), count) == index;
    }
};

struct DirBody {
    // Behind a pointer: most inodes are files, and a directory's two indexes
    // would otherwise make every inode as big as a directory.
    std::unique_ptr<Directory> entries = std::make_unique<Directory>();
    uint64_t parent = kRootIno;  // for ".." and the rename loop check
    StripePattern pattern;
    DirShards shards{};
};

struct SymlinkBody {
    std::string target;
};

// A FIFO, socket or device (the type in attr.mode, a device's number in
// attr.rdev): the servers keep the inode, clients do its I/O locally.
struct SpecialBody {};

struct Inode {
    Attr attr;
    Xattrs xattrs;
    std::variant<FileBody, DirBody, SymlinkBody, SpecialBody> body;
    uint32_t opens = 0;  // open handles; not persisted (sessions reopen)
    // An O_TMPFILE inode no entry has named yet: LINK may give it its
    // first name (recovery frees it with the other orphans).
    bool linkable = false;
    // Set: named by an entry on another server (a directory's parent is then
    // unused, a file has that one link), or moving there or back.
    std::optional<RemoteParent> remote;

    bool is_file() const { return std::holds_alternative<FileBody>(body); }
    bool is_dir() const { return std::holds_alternative<DirBody>(body); }
    bool is_symlink() const { return std::holds_alternative<SymlinkBody>(body); }
    bool is_special() const { return std::holds_alternative<SpecialBody>(body); }
    DirBody& dir() { return std::get<DirBody>(body); }
    const DirBody& dir() const { return std::get<DirBody>(body); }
    // A directory being removed takes no new entries.
    bool accepts_entries() const { return !remote || remote->state != PFS_DETACHED_REMOVING; }
    // DT_*, as readdir reports it.
    uint8_t dtype() const;
};

// The DT_ type of an S_IFMT type; DT_UNKNOWN for no valid type.
uint8_t dtype_of_mode(uint32_t mode);
// The S_IFMT bits of a DT_ type (S_IFREG for anything unknown).
uint32_t mode_of_dtype(uint8_t type);

}  // namespace pfs::meta
