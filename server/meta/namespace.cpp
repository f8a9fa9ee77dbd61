// Queries, the planning half of each mutation, open counts and the shared
// bookkeeping. The executing half (apply's handlers) is in namespace_dir.cpp
// and namespace_attr.cpp.
#include "namespace.hpp"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

#include "namespace_checks.hpp"

namespace pfs::meta {

namespace {

// Inode numbers are never reused, so every inode is in its first generation;
// the field is there for the protocol's sake.
constexpr uint32_t kGeneration = 1;

}  // namespace

uint8_t dtype_of_mode(uint32_t mode) {
    switch (mode & S_IFMT) {
        case S_IFREG: return DT_REG;
        case S_IFDIR: return DT_DIR;
        case S_IFLNK: return DT_LNK;
        case S_IFIFO: return DT_FIFO;
        case S_IFSOCK: return DT_SOCK;
        case S_IFCHR: return DT_CHR;
        case S_IFBLK: return DT_BLK;
    }
    return DT_UNKNOWN;
}

uint32_t mode_of_dtype(uint8_t type) {
    uint32_t mode = DTTOIF(type);
    return pfs_dtype_valid(type) ? mode : S_IFREG;
}

uint8_t Inode::dtype() const { return dtype_of_mode(attr.mode); }

Namespace::Namespace(uint32_t owner_node, Timespec now) : owner_(owner_node) {
    Inode root;
    root.attr = Attr{.id = {kRootIno, owner_node, kGeneration},
                     .mode = S_IFDIR | 0755,
                     .nlink = 2,
                     .atime = now,
                     .mtime = now,
                     .ctime = now,
                     .btime = now};
    root.body = DirBody{.pattern = default_root_pattern()};
    count(root, +1);
    inodes_.emplace(kRootIno, std::move(root));
}

pfs_entry_id Namespace::root() const { return inodes_.at(kRootIno).attr.id; }

pfs_entry_id Namespace::next_id() const { return pfs_entry_id{next_ino_, owner_, kGeneration}; }

Status Namespace::check_new_id(const pfs_entry_id& id, bool reserved) const {
    // A reserved id may be passed by ids handed out after it; it is still
    // no inode's.
    const bool fresh = id.ino >= next_ino_ || (reserved && id.ino > kRootIno && !inodes_.contains(id.ino));
    if (id.owner_node != owner_ || !fresh || id.generation == 0)
        return fail(-EINVAL, "inode id " + std::to_string(id.ino) + " is not a fresh id of this server");
    return ok_status();
}

pfs_entry_id Namespace::reserve_dir_id() {
    pfs_entry_id id = next_id();
    reserved_.insert(next_ino_++);
    return id;
}

void Namespace::release_dir_id(const pfs_entry_id& id) { reserved_.erase(id.ino); }

Result<DirShards> Namespace::shards(const pfs_entry_id& dir) const {
    auto d = find_dir(dir);
    if (!d) return d.error();
    return (*d)->dir().shards;
}

std::optional<pfs_entry_id> Namespace::shard_master(const pfs_entry_id& id) const {
    auto d = find(id);
    if (!d || !(*d)->is_dir() || (*d)->dir().shards.index == 0) return std::nullopt;
    return (*d)->remote->dir;
}

Result<DirShards> Namespace::new_shards(const pfs_entry_id& id, const std::vector<pfs_entry_id>& ids,
                                        uint32_t index, uint32_t count) const {
    if (index > 0) {
        if (!ids.empty() || count < 2 || count > PFS_DIR_SHARDS_MAX || index >= count)
            return fail(-EINVAL, "invalid shard of a striped directory");
        return DirShards{.index = index, .count = count};
    }
    if (ids.empty()) return DirShards{};
    if (ids.size() < 2 || ids.size() > PFS_DIR_SHARDS_MAX || !same_id(ids[0], id))
        return fail(-EINVAL, "invalid shards of a striped directory");
    for (size_t i = 1; i < ids.size(); ++i) {
        if (is_local(ids[i]) || ids[i].ino == 0 || ids[i].generation == 0 || names(ids[i]))
            return fail(-EINVAL, "a striped directory's shard is no fresh directory of another server");
        for (size_t j = 1; j < i; ++j)
            if (same_id(ids[i], ids[j])) return fail(-EINVAL, "a striped directory repeats a shard");
    }
    return DirShards{.index = 0, .count = static_cast<uint32_t>(ids.size()), .ids = ids};
}

void Namespace::add_shard_entries(const Inode& dir) {
    const auto& ids = dir.dir().shards.ids;
    for (size_t i = 1; i < ids.size(); ++i) remote_entries_.emplace(EntryKey::of(ids[i]), dir.attr.id.ino);
}

Result<const Inode*> Namespace::find(const pfs_entry_id& id) const {
    auto it = inodes_.find(id.ino);
    if (id.owner_node != owner_ || it == inodes_.end() || it->second.attr.id.generation != id.generation)
        return fail(-ESTALE, "no inode " + std::to_string(id.ino) + " here");
    return &it->second;
}

Result<Inode*> Namespace::find(const pfs_entry_id& id) {
    auto found = std::as_const(*this).find(id);
    if (!found) return found.error();
    return const_cast<Inode*>(*found);
}

Result<const Inode*> Namespace::find_dir(const pfs_entry_id& id) const {
    auto found = find(id);
    if (found && !(*found)->is_dir())
        return fail(-ENOTDIR, "inode " + std::to_string(id.ino) + " is no directory");
    return found;
}

Result<Inode*> Namespace::find_dir(const pfs_entry_id& id) {
    auto found = std::as_const(*this).find_dir(id);
    if (!found) return found.error();
    return const_cast<Inode*>(*found);
}

Attr Namespace::attr_of(const Inode& node) const {
    Attr a = node.attr;
    const DirShards* shards = node.is_dir() ? &node.dir().shards : nullptr;
    if (node.is_dir()) a.size = node.dir().entries->size();
    // Its subdirectories are counted in shards elsewhere: "unknown", as
    // btrfs says (find(1) then looks into every directory).
    if (shards && shards->striped()) a.nlink = 1;
    if (const auto* file = std::get_if<FileBody>(&node.body)) a.blocks = file->blocks;
    a.xattrs = 0;
    if (node.xattrs.contains(std::string_view(kAclAccess))) a.xattrs |= PFS_ATTR_ACL_ACCESS;
    if (node.xattrs.contains(std::string_view(kAclDefault))) a.xattrs |= PFS_ATTR_ACL_DEFAULT;
    constexpr std::string_view security = "security.";
    auto it = node.xattrs.lower_bound(security);
    if (it != node.xattrs.end() && it->first.starts_with(security)) a.xattrs |= PFS_ATTR_SECURITY;
    // The striped directory itself: its other shards are no client's business.
    if (shards && shards->striped() && shards->index == 0) a.xattrs |= PFS_ATTR_STRIPED;
    return a;
}

Namespace::Ancestry Namespace::ancestry(uint64_t ino, uint64_t ancestor) const {
    for (uint64_t cur = ino;;) {
        if (cur == ancestor) return Ancestry::yes;
        const Inode& d = inodes_.at(cur);
        if (d.remote) return Ancestry::unknown;
        if (cur == kRootIno) return Ancestry::no;
        cur = d.dir().parent;
    }
}

pfs_entry_id Namespace::parent_of(const Inode& dir) const {
    // A moving directory's parent is the one whose entry still counts.
    if (dir.remote) return dir.remote->moving() ? dir.remote->from : dir.remote->dir;
    const Inode& parent = inodes_.at(dir.dir().parent);
    // In a shard of a striped directory: that directory.
    if (parent.dir().shards.index > 0) return parent.remote->dir;
    return parent.attr.id;
}

Result<Inode*> Namespace::entry_inode(const Directory::Slot& slot) {
    if (!is_local(slot.id)) return static_cast<Inode*>(nullptr);
    return find(slot.id);
}

// ---- queries ----

Result<Attr> Namespace::getattr(const pfs_entry_id& id) const {
    auto node = find(id);
    if (!node) return node.error();
    return attr_of(**node);
}

Result<Attr> Namespace::lookup(const pfs_entry_id& dir, std::string_view name) const {
    auto slot = resolve(dir, name);
    if (!slot) return slot.error();
    if (!is_local(slot->id))
        return fail(-EREMOTE, quoted(name) + " is on metadata server " + std::to_string(slot->id.owner_node));
    return getattr(slot->id);
}

Result<Directory::Slot> Namespace::resolve(const pfs_entry_id& dir, std::string_view name) const {
    auto d = find_dir(dir);
    if (!d) return d.error();
    if (auto st = check_name(name); !st) return st.error();
    if (auto st = check_shard(**d, name); !st) return st.error();
    const DirBody& body = (*d)->dir();
    if (name == ".") return Directory::Slot{dir, DT_DIR, 1};
    if (name == "..") return Directory::Slot{parent_of(**d), DT_DIR, 2};
    const auto* slot = body.entries->find(name);
    if (!slot) return fail(-ENOENT, "no entry " + quoted(name));
    return *slot;
}

Result<StripeLayout> Namespace::layout(const pfs_entry_id& file) const {
    auto node = find(file);
    if (!node) return node.error();
    if (!(*node)->is_file()) return fail(-EINVAL, "not a regular file");
    return std::get<FileBody>((*node)->body).layout;
}

Result<uint32_t> Namespace::inline_max(const pfs_entry_id& file) const {
    auto node = find(file);
    if (!node) return node.error();
    if (!(*node)->is_file()) return fail(-EINVAL, "not a regular file");
    return std::get<FileBody>((*node)->body).inline_max;
}

Result<StripePattern> Namespace::pattern(const pfs_entry_id& dir) const {
    auto d = find_dir(dir);
    if (!d) return d.error();
    return (*d)->dir().pattern;
}

Result<std::string> Namespace::readlink(const pfs_entry_id& id) const {
    auto node = find(id);
    if (!node) return node.error();
    if (!(*node)->is_symlink()) return fail(-EINVAL, "not a symlink");
    return std::get<SymlinkBody>((*node)->body).target;
}

Result<DirPage> Namespace::readdir(const pfs_entry_id& dir, uint64_t cookie, uint32_t max_entries) const {
    auto d = find_dir(dir);
    if (!d) return d.error();
    if (max_entries == 0) return fail(-EINVAL, "readdir of zero entries");
    const DirBody& body = (*d)->dir();
    // A shard's cookies carry its index (PFS_COOKIE_SHARD_SHIFT); "." and
    // ".." are shard 0's, and a shard's end leads to the next shard.
    const DirShards& shards = body.shards;
    const uint64_t shard_bits = uint64_t{shards.index} << PFS_COOKIE_SHARD_SHIFT;
    if (shards.striped() && pfs_cookie_shard(cookie) != shards.index)
        return fail(PFS_E_WRONG_SHARD, "readdir cookie of shard " + std::to_string(pfs_cookie_shard(cookie)) +
                                           ", not " + std::to_string(shards.index));
    const uint64_t local = shards.striped() ? cookie & PFS_COOKIE_LOCAL_MASK : cookie;
    DirPage page;
    page.next_cookie = cookie;
    page.entries.reserve(std::min<size_t>(max_entries, body.entries->size() + 2));
    auto emit = [&](std::string_view name, const pfs_entry_id& id, uint8_t type, uint64_t c) {
        page.entries.push_back(DirEntry{std::string(name), id, type, shard_bits | c});
        page.next_cookie = shard_bits | c;
    };
    if (shards.index == 0) {
        if (local < 1) emit(".", (*d)->attr.id, DT_DIR, 1);
        if (local < 2) {
            if (page.entries.size() == max_entries) return page;
            emit("..", parent_of(**d), DT_DIR, 2);
        }
    }
    page.eof = true;
    auto entry = [&](std::string_view name, const Directory::Slot& s) {
        if (page.entries.size() == max_entries) {
            page.eof = false;
            return false;
        }
        emit(name, s.id, s.type, s.cookie);
        return true;
    };
    body.entries->for_each_after(std::max<uint64_t>(local, 2), entry);
    if (page.eof && shards.index + 1 < shards.count) {
        page.eof = false;
        page.next_cookie = uint64_t{shards.index + 1} << PFS_COOKIE_SHARD_SHIFT;
    }
    return page;
}

Result<std::string> Namespace::get_xattr(const pfs_entry_id& id, std::string_view name) const {
    auto node = find(id);
    if (!node) return node.error();
    if (auto st = check_xattr_name(name); !st) return st.error();
    auto it = (*node)->xattrs.find(name);
    if (it == (*node)->xattrs.end()) return fail(-ENODATA, "no xattr " + quoted(name));
    return it->second;
}

Result<std::vector<std::string>> Namespace::list_xattrs(const pfs_entry_id& id) const {
    auto node = find(id);
    if (!node) return node.error();
    std::vector<std::string> names;
    names.reserve((*node)->xattrs.size());
    for (const auto& [name, value] : (*node)->xattrs) names.push_back(name);
    return names;
}

Status Namespace::may_access(const pfs_entry_id& id, const Caller& c, int mask) const {
    auto node = find(id);
    if (!node) return node.error();
    return meta::may_access((*node)->attr, (*node)->xattrs, c, mask);
}

Status Namespace::may_setattr(const pfs_entry_id& id, const Caller& c, AttrChanges& changes, bool times_now) const {
    auto node = find(id);
    if (!node) return node.error();
    return meta::may_setattr((*node)->attr, (*node)->xattrs, c, changes, times_now);
}

Status Namespace::may_xattr(const pfs_entry_id& id, const Caller& c, std::string_view name, bool write) const {
    auto node = find(id);
    if (!node) return node.error();
    return meta::may_xattr((*node)->attr, (*node)->xattrs, c, name, write);
}

Counts Namespace::counts() const {
    Counts c = counts_;
    c.orphans = orphans_.size();
    return c;
}

std::vector<pfs_entry_id> Namespace::orphans() const {
    std::vector<pfs_entry_id> ids;
    ids.reserve(orphans_.size());
    for (uint64_t ino : orphans_) ids.push_back(inodes_.at(ino).attr.id);
    return ids;
}

// ---- planning ----

Result<Created> Namespace::create(const pfs_entry_id& dir, std::string_view name, uint32_t mode, uint32_t uid,
                                  uint32_t gid, Timespec now, const ChooseTargets& choose, bool exclusive,
                                  bool may_inline) {
    auto d = find_dir(dir);
    if (!d) return d.error();
    if (auto st = check_name(name); !st) return st.error();
    if (is_dot(name)) return fail(-EEXIST, quoted(name) + " exists");
    if (const auto* slot = (*d)->dir().entries->find(name)) {
        if (exclusive) return fail(-EEXIST, quoted(name) + " exists");
        if (!is_local(slot->id)) return fail(-EISDIR, quoted(name) + " is a directory");
        auto existing = getattr(slot->id);
        if (!existing) return existing.error();
        if (S_ISDIR(existing->mode)) return fail(-EISDIR, quoted(name) + " is a directory");
        return Created{*existing, false};
    }
    if ((mode & S_IFMT) != 0 && (mode & S_IFMT) != S_IFREG)
        return fail(-EINVAL, "create makes regular files only");
    const Inode& parent = **d;
    const StripePattern& pattern = parent.dir().pattern;
    auto targets = choose(pattern);
    if (!targets) return targets.error();
    CreateOp op{.parent = dir,
                .name = std::string(name),
                .id = next_id(),
                .mode = mode & 07777,
                .uid = uid,
                .gid = (parent.attr.mode & S_ISGID) ? parent.attr.gid : gid,
                .layout = {pattern.chunk_size, pattern.pool_id, std::move(*targets)},
                .inline_max = may_inline ? pattern.inline_max : 0,
                .now = now};
    auto done = apply(op);
    if (!done) return done.error();
    return Created{done->attr, true};
}

Result<Attr> Namespace::tmpfile(const pfs_entry_id& dir, uint32_t mode, uint32_t uid, uint32_t gid, Timespec now,
                               const ChooseTargets& choose, bool may_inline) {
    auto d = find_dir(dir);
    if (!d) return d.error();
    const Inode& parent = **d;
    const StripePattern& pattern = parent.dir().pattern;
    auto targets = choose(pattern);
    if (!targets) return targets.error();
    TmpfileOp op{.dir = dir,
                 .id = next_id(),
                 .mode = mode & 07777,
                 .uid = uid,
                 .gid = (parent.attr.mode & S_ISGID) ? parent.attr.gid : gid,
                 .layout = {pattern.chunk_size, pattern.pool_id, std::move(*targets)},
                 .inline_max = may_inline ? pattern.inline_max : 0,
                 .now = now};
    auto done = apply(op);
    if (!done) return done.error();
    return done->attr;
}

Result<Namespace::NewDir> Namespace::plan_dir(const pfs_entry_id& dir, std::string_view name, uint32_t mode,
                                              uint32_t uid, uint32_t gid) const {
    auto d = find_dir(dir);
    if (!d) return d.error();
    const Inode& parent = **d;
    if (auto st = check_new_entry(parent, name); !st) return st.error();
    // A set-group-ID directory hands its group, and the bit, down.
    bool sgid = parent.attr.mode & S_ISGID;
    return NewDir{.mode = (mode & 07777) | (sgid ? S_ISGID : 0),
                  .uid = uid,
                  .gid = sgid ? parent.attr.gid : gid,
                  .pattern = parent.dir().pattern};
}

Result<Attr> Namespace::mkdir(const pfs_entry_id& dir, std::string_view name, uint32_t mode, uint32_t uid,
                              uint32_t gid, Timespec now, std::vector<pfs_entry_id> shards,
                              std::optional<uint32_t> dir_stripes) {
    auto plan = plan_dir(dir, name, mode, uid, gid);
    if (!plan) return plan.error();
    if (dir_stripes) plan->pattern.dir_stripes = *dir_stripes;
    if (!shards.empty() && !reserved_.contains(shards[0].ino))
        return fail(-EINVAL, "a striped directory's id was not reserved");
    MkdirOp op{.parent = dir,
               .name = std::string(name),
               .id = shards.empty() ? next_id() : shards[0],
               .mode = plan->mode,
               .uid = plan->uid,
               .gid = plan->gid,
               .pattern = plan->pattern,
               .now = now,
               .shards = std::move(shards)};
    auto done = apply(op);
    if (!done) return done.error();
    return done->attr;
}

Result<Attr> Namespace::symlink(const pfs_entry_id& dir, std::string_view name, std::string_view target,
                                uint32_t uid, uint32_t gid, Timespec now) {
    auto d = find_dir(dir);
    if (!d) return d.error();
    const Inode& parent = **d;
    SymlinkOp op{.parent = dir,
                 .name = std::string(name),
                 .id = next_id(),
                 .target = std::string(target),
                 .uid = uid,
                 .gid = (parent.attr.mode & S_ISGID) ? parent.attr.gid : gid,
                 .now = now};
    auto done = apply(op);
    if (!done) return done.error();
    return done->attr;
}

Result<Attr> Namespace::mknod(const pfs_entry_id& dir, std::string_view name, uint32_t mode, uint32_t rdev,
                              uint32_t uid, uint32_t gid, Timespec now) {
    auto d = find_dir(dir);
    if (!d) return d.error();
    const Inode& parent = **d;
    MknodOp op{.parent = dir,
               .name = std::string(name),
               .id = next_id(),
               .mode = mode,
               .rdev = rdev,
               .uid = uid,
               .gid = (parent.attr.mode & S_ISGID) ? parent.attr.gid : gid,
               .now = now};
    auto done = apply(op);
    if (!done) return done.error();
    return done->attr;
}

Result<Attr> Namespace::link(const pfs_entry_id& id, const pfs_entry_id& dir, std::string_view name,
                             Timespec now) {
    auto done = apply(LinkOp{.id = id, .parent = dir, .name = std::string(name), .now = now});
    if (!done) return done.error();
    return done->attr;
}

Result<Outcome> Namespace::unlink(const pfs_entry_id& dir, std::string_view name, Timespec now) {
    UnlinkOp op{.parent = dir, .name = std::string(name), .now = now};
    if (auto d = find_dir(dir); d && !is_dot(name))
        if (const auto* slot = (*d)->dir().entries->find(name))
            if (auto victim = find(slot->id)) op.keep_orphan = (*victim)->opens > 0;
    return apply(op);
}

Result<Outcome> Namespace::rmdir(const pfs_entry_id& dir, std::string_view name, Timespec now) {
    return apply(RmdirOp{.parent = dir, .name = std::string(name), .now = now});
}

Result<Outcome> Namespace::rename(const pfs_entry_id& src_dir, std::string_view src_name,
                                  const pfs_entry_id& dst_dir, std::string_view dst_name, uint32_t flags,
                                  Timespec now) {
    RenameOp op{.src_parent = src_dir,
                .src_name = std::string(src_name),
                .dst_parent = dst_dir,
                .dst_name = std::string(dst_name),
                .flags = flags,
                .now = now};
    if (auto d = find_dir(dst_dir); d && !is_dot(dst_name))
        if (const auto* slot = (*d)->dir().entries->find(dst_name))
            if (auto victim = find(slot->id)) op.keep_orphan = (*victim)->opens > 0;
    return apply(op);
}

Result<Outcome> Namespace::setattr(const pfs_entry_id& id, const AttrChanges& changes, Timespec now) {
    return apply(SetattrOp{.id = id, .changes = changes, .now = now});
}

Status Namespace::set_xattr(const pfs_entry_id& id, std::string_view name, std::string_view value,
                            uint32_t flags, Timespec now) {
    auto done = apply(SetXattrOp{
        .id = id, .name = std::string(name), .value = std::string(value), .flags = flags, .now = now});
    if (!done) return done.error();
    return ok_status();
}

Status Namespace::remove_xattr(const pfs_entry_id& id, std::string_view name, Timespec now) {
    auto done = apply(RemoveXattrOp{.id = id, .name = std::string(name), .now = now});
    if (!done) return done.error();
    return ok_status();
}

Status Namespace::set_pattern(const pfs_entry_id& dir, const StripePattern& pattern, Timespec now) {
    auto done = apply(SetPatternOp{.id = dir, .pattern = pattern, .now = now});
    if (!done) return done.error();
    return ok_status();
}

Status Namespace::uninline(const pfs_entry_id& file, bool begins) {
    auto done = apply(UninlineOp{.id = file, .begins = begins});
    if (!done) return done.error();
    return ok_status();
}

// ---- open handles ----

Status Namespace::open(const pfs_entry_id& id) {
    auto node = find(id);
    if (!node) return node.error();
    if ((*node)->opens == UINT32_MAX) return fail(-EMFILE, "too many opens of one inode");
    ++(*node)->opens;
    return ok_status();
}

Result<std::optional<FreedFile>> Namespace::close(const pfs_entry_id& id) {
    auto node = find(id);
    if (!node) return node.error();
    Inode& n = **node;
    if (n.opens == 0) return fail(-EBADF, "inode " + std::to_string(id.ino) + " is not open");
    if (--n.opens > 0 || n.attr.nlink > 0) return std::optional<FreedFile>{};
    return purge_orphan(id);
}

// ---- st_blocks ----

std::optional<BlocksCount> Namespace::start_blocks_count(const pfs_entry_id& id) {
    auto node = find(id);
    if (!node || (*node)->opens > 0) return std::nullopt;
    auto* file = std::get_if<FileBody>(&(*node)->body);
    if (!file || file->blocks != PFS_BLOCKS_UNKNOWN || file->blocks_counting) return std::nullopt;
    file->blocks_counting = true;
    return BlocksCount{file->inline_max ? inline_layout(file->layout) : file->layout, file->blocks_epoch};
}

void Namespace::end_blocks_count(const pfs_entry_id& id, uint64_t epoch, std::optional<uint64_t> blocks) {
    auto node = find(id);
    if (!node) return;
    auto* file = std::get_if<FileBody>(&(*node)->body);
    if (!file) return;
    file->blocks_counting = false;
    if (blocks && file->blocks_epoch == epoch) file->blocks = *blocks;
}

void Namespace::blocks_changed(const pfs_entry_id& id) {
    if (auto node = find(id)) blocks_changed(**node);
}

void Namespace::blocks_changed(Inode& node) {
    auto* file = std::get_if<FileBody>(&node.body);
    if (!file) return;
    file->blocks = PFS_BLOCKS_UNKNOWN;
    ++file->blocks_epoch;
}

Result<std::optional<FreedFile>> Namespace::purge_orphan(const pfs_entry_id& id) {
    auto done = apply(PurgeOp{id});
    if (!done) return done.error();
    return std::move(done->freed);
}

// ---- execution ----

Result<Outcome> Namespace::apply(const Op& op) {
    auto done = std::visit([this](const auto& o) { return run(o); }, op);
    if (done && observer_) observer_(op);
    return done;
}

Inode& Namespace::add_inode(Inode& parent, std::string_view name, Attr attr, decltype(Inode::body) body) {
    uint64_t ino = attr.id.ino;
    Inode& node = inodes_[ino];
    node.attr = attr;
    node.attr.btime = attr.ctime;
    node.body = std::move(body);
    parent.dir().entries->insert(name, attr.id, node.dtype());
    parent.attr.mtime = parent.attr.ctime = attr.ctime;
    next_ino_ = std::max(next_ino_, ino + 1);
    count(node, +1);
    return node;
}

std::optional<FreedFile> Namespace::settle(Inode& node, bool keep_orphan) {
    if (node.attr.nlink > 0) return std::nullopt;
    if (keep_orphan || node.opens > 0) {
        orphans_.insert(node.attr.id.ino);
        return std::nullopt;
    }
    return free_inode(node.attr.id.ino);
}

std::optional<FreedFile> Namespace::free_inode(uint64_t ino) {
    auto it = inodes_.find(ino);
    std::optional<FreedFile> freed;
    if (auto* file = std::get_if<FileBody>(&it->second.body)) {
        // An inline file that never began to move has no chunks to delete.
        const bool inline_only = file->inline_max != 0 && !file->moving_out;
        if (inline_only) file->layout.targets.clear();
        else reaping_.insert_or_assign(EntryKey::of(it->second.attr.id), file->layout);
        freed = FreedFile{it->second.attr.id, std::move(file->layout), it->second.attr.size, file->inline_max != 0};
    }
    if (const auto* dir = std::get_if<DirBody>(&it->second.body))
        for (size_t i = 1; i < dir->shards.ids.size(); ++i) remote_entries_.erase(EntryKey::of(dir->shards.ids[i]));
    count(it->second, -1);
    orphans_.erase(ino);
    inodes_.erase(it);
    return freed;
}

Status Namespace::reaped(std::vector<pfs_entry_id> ids) {
    if (ids.empty()) return ok_status();
    if (ids.size() > kReapedMax) return fail(-EINVAL, "too many files in one ReapedOp");
    auto out = apply(ReapedOp{std::move(ids)});
    if (!out) return out.error();
    return ok_status();
}

Result<Outcome> Namespace::run(const ReapedOp& op) {
    if (op.ids.size() > kReapedMax) return fail(-EINVAL, "too many files in one ReapedOp");
    // A file reaped twice (its chunks deleted again) is no error.
    for (const auto& id : op.ids) reaping_.erase(EntryKey::of(id));
    return Outcome{};
}

void Namespace::count(const Inode& node, int delta) {
    auto add = [delta](uint64_t& n) { n += static_cast<uint64_t>(static_cast<int64_t>(delta)); };
    add(counts_.inodes);
    add(node.is_dir()    ? counts_.directories
        : node.is_file() ? counts_.files
        : node.is_symlink() ? counts_.symlinks
                            : counts_.specials);
}

}  // namespace pfs::meta
