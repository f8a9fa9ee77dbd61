// The snapshot: a sequence of records, each a u32 length and a body in the
// shared codec, so no record is unbounded and a big namespace streams.
//
//   header   magic, version, owner node, next ino, inode count
//   inode    kind, attributes, xattrs, body; a directory's header carries
//            its entry count, and its entries follow in records of at most
//            kEntriesPerRecord, in cookie order
//   reaping  (version 4 on) the count of freed files whose chunks may
//            remain, then records of at most kEntriesPerRecord of them (id
//            and layout), in id order
//
// Inodes go out in ino order and entries in cookie order, so the bytes
// depend on the namespace's state alone. Loading checks every field, then
// the whole (verify()): links, link counts, parents, reachability.
#include <dirent.h>

#include <algorithm>
#include <unordered_set>

#include "namespace.hpp"
#include "namespace_checks.hpp"
#include "namespace_codec.hpp"

namespace pfs::meta {

namespace {

using namespace codec;

constexpr uint32_t kSnapshotMagic = 0x534e4650;  // "PFNS"
// 2: a directory record says whether it is detached (parent on another server).
// 3: every inode record says where its entry is when on another server, and
//    whether it moves (RemoteParent with `from`).
// 4: the files freed whose chunks may remain follow the inodes.
// 5: inode records carry rdev, btime and whether LINK may name them (an
//    O_TMPFILE's file); special files (FIFOs, sockets, devices) are a kind
//    of their own.
// 6: patterns carry inline_max, files theirs (FileBody::inline_max).
// 7: patterns carry dir_stripes, directories their shards (DirShards).
// 8: inline files say whether their move to the targets began.
constexpr uint32_t kSnapshotVersion = 8;
constexpr uint32_t kEntriesPerRecord = 4096;
constexpr uint32_t kEntryMinSize = 8 + 4 + 16 + 1;
constexpr uint32_t kXattrMinSize = 8;

enum Kind : uint8_t { kFile = 1, kDir = 2, kSymlink = 3, kSpecial = 4 };

struct Header {
    uint32_t magic = kSnapshotMagic;
    uint32_t version = kSnapshotVersion;
    uint32_t owner = 0;
    uint64_t next_ino = 0;
    uint64_t inodes = 0;
};

void xfer_header(pfs_xdr* x, Header& h) {
    xfer(x, h.magic);
    xfer(x, h.version);
    xfer(x, h.owner);
    xfer(x, h.next_ino);
    xfer(x, h.inodes);
}

// What a directory's inode record says about its entries.
struct DirHeader {
    uint64_t next_cookie = 0;
    uint64_t entries = 0;
};

void xfer_xattrs(pfs_xdr* x, Xattrs& xattrs) {
    auto n = static_cast<uint32_t>(xattrs.size());
    if (pfs_x_count(x, &n, kXattrListMax / 2, kXattrMinSize)) return;
    if (!pfs_xdr_decoding(x)) {
        for (auto& [name, value] : xattrs) {
            xfer_str(x, unconst(name), kXattrNameMax);
            xfer_str(x, value, kXattrValueMax);
        }
        return;
    }
    for (uint32_t i = 0; i < n && !x->err; ++i) {
        std::string name, value;
        xfer_str(x, name, kXattrNameMax);
        xfer_str(x, value, kXattrValueMax);
        if (!x->err && !xattrs.emplace(std::move(name), std::move(value)).second) fail(x);
    }
}

// Version 2: directories only, never MOVING.
void xfer_remote_v2(pfs_xdr* x, std::optional<RemoteParent>& remote) {
    bool detached = false;
    xfer(x, detached);
    if (!detached) return;
    remote.emplace();
    xfer(x, remote->dir);
    xfer(x, remote->state);
    if (remote->state > PFS_DETACHED_REMOVING) fail(x);
}

void xfer_inode(pfs_xdr* x, Inode& n, DirHeader& dh, uint32_t version) {
    uint8_t kind = n.is_file() ? kFile : n.is_dir() ? kDir : n.is_symlink() ? kSymlink : kSpecial;
    xfer(x, kind);
    if (pfs_xdr_decoding(x) && !x->err) {
        if (kind == kFile) n.body = FileBody{};
        else if (kind == kDir) n.body = DirBody{};
        else if (kind == kSymlink) n.body = SymlinkBody{};
        else if (kind == kSpecial && version >= 5) n.body = SpecialBody{};
        else return fail(x);
    }
    Attr& a = n.attr;
    xfer(x, a.id);
    xfer(x, a.mode);
    xfer(x, a.uid);
    xfer(x, a.gid);
    xfer(x, a.nlink);
    xfer(x, a.size);
    xfer(x, a.atime);
    xfer(x, a.mtime);
    xfer(x, a.ctime);
    if (version >= 5) {
        xfer(x, a.rdev);
        xfer(x, a.btime);
        xfer(x, n.linkable);
    } else if (pfs_xdr_decoding(x)) {
        a.btime = a.ctime;  // the best guess older snapshots allow
    }
    xfer_xattrs(x, n.xattrs);
    if (auto* file = std::get_if<FileBody>(&n.body)) {
        xfer(x, file->layout);
        if (version >= 6) xfer(x, file->inline_max);
        if (version >= 8) xfer(x, file->moving_out);
        else if (pfs_xdr_decoding(x)) file->moving_out = file->inline_max != 0;  // not known: maybe
    } else if (auto* dir = std::get_if<DirBody>(&n.body)) {
        xfer(x, dir->parent);
        xfer(x, dir->pattern, version >= 6, version >= 7);
        xfer(x, dh.next_cookie);
        xfer(x, dh.entries);
        if (version == 2) xfer_remote_v2(x, n.remote);
        if (version >= 7) {
            xfer(x, dir->shards.index);
            xfer(x, dir->shards.count);
            xfer(x, dir->shards.ids, PFS_DIR_SHARDS_MAX);
        }
    } else if (auto* link = std::get_if<SymlinkBody>(&n.body)) {
        xfer_str(x, link->target, kSymlinkMax);
    }
    if (version >= 3) xfer(x, n.remote);
}

struct EntryRecord {
    uint64_t cookie = 0;
    std::string name;
    pfs_entry_id id{};
    uint8_t type = 0;
};

void xfer_entries(pfs_xdr* x, std::vector<EntryRecord>& entries) {
    auto n = static_cast<uint32_t>(entries.size());
    if (pfs_x_count(x, &n, kEntriesPerRecord, kEntryMinSize)) return;
    if (pfs_xdr_decoding(x)) entries.resize(n);
    for (auto& e : entries) {
        xfer(x, e.cookie);
        xfer_str(x, e.name, kNameMax);
        xfer(x, e.id);
        xfer(x, e.type);
    }
}

// Appends length-prefixed records through one reused buffer.
class RecordWriter {
public:
    explicit RecordWriter(const std::function<void(std::span<const uint8_t>)>& write) : write_(write) {}

    template <class Body>
    Status put(Body&& body) {
        pfs_xdr x;
        pfs_xdr_init_size(&x);
        body(&x);
        if (x.err) return Error{x.err, "snapshot record too large"};
        uint32_t len = x.pos;
        buf_.resize(4 + size_t{len});
        pfs_xdr_init_encode(&x, buf_.data(), 4);
        pfs_x_u32(&x, &len);
        pfs_xdr_init_encode(&x, buf_.data() + 4, len);
        body(&x);
        if (x.err || x.pos != len) return Error{x.err ? x.err : -EINVAL, "cannot encode snapshot record"};
        write_(buf_);
        return ok_status();
    }

private:
    const std::function<void(std::span<const uint8_t>)>& write_;
    std::vector<uint8_t> buf_;
};

class RecordReader {
public:
    explicit RecordReader(std::span<const uint8_t> in) : in_(in) {}

    bool at_end() const { return pos_ == in_.size(); }

    // Decodes the next record with body; the record must be consumed whole.
    template <class Body>
    Status next(Body&& body) {
        pfs_xdr x;
        if (in_.size() - pos_ < 4) return Error{-EBADMSG, "snapshot truncated"};
        uint32_t len = 0;
        pfs_xdr_init_decode(&x, in_.data() + pos_, 4);
        pfs_x_u32(&x, &len);
        if (in_.size() - pos_ - 4 < len) return Error{-EBADMSG, "snapshot truncated"};
        pfs_xdr_init_decode(&x, in_.data() + pos_ + 4, len);
        body(&x);
        if (pfs_xdr_finish(&x)) return Error{x.err, "malformed snapshot record"};
        pos_ += 4 + size_t{len};
        return ok_status();
    }

private:
    std::span<const uint8_t> in_;
    size_t pos_ = 0;
};

Error damaged(const std::string& what) { return Error{-EBADMSG, "damaged namespace snapshot: " + what}; }

// One inode record on its own: its fields are in range and agree with its
// kind. How it links with the rest is verify()'s.
Status check_inode(const Inode& n, const Header& h) {
    const Attr& a = n.attr;
    std::string which = "inode " + std::to_string(a.id.ino);
    if (a.id.ino == 0 || a.id.ino >= h.next_ino || a.id.owner_node != h.owner || a.id.generation == 0)
        return damaged(which + ": bad id");
    bool kind_ok = n.is_file() ? S_ISREG(a.mode)
                   : n.is_dir() ? S_ISDIR(a.mode)
                   : n.is_symlink() ? S_ISLNK(a.mode)
                                    : pfs_mknod_mode_valid(a.mode);
    if (!kind_ok || (a.mode & ~(S_IFMT | 07777u))) return damaged(which + ": bad mode");
    size_t list = 0;
    for (const auto& [name, value] : n.xattrs) {
        if (!check_xattr_name(name) || value.size() > kXattrValueMax) return damaged(which + ": bad xattr");
        list += name.size() + 1;
    }
    if (list > kXattrListMax) return damaged(which + ": too many xattrs");
    if (const auto* file = std::get_if<FileBody>(&n.body)) {
        if (!check_layout(file->layout) || a.size > kMaxFileSize || !check_inline_max(file->inline_max, file->layout))
            return damaged(which + ": bad layout or size");
    } else if (const auto* link = std::get_if<SymlinkBody>(&n.body)) {
        if (!check_symlink_target(link->target) || a.size != link->target.size())
            return damaged(which + ": bad symlink");
    } else if (n.is_special()) {
        if (!pfs_mknod_mode_valid(a.mode) || a.size != 0) return damaged(which + ": bad special file");
    } else if (!check_pattern(n.dir().pattern) || a.size != 0 || !check_shards(n)) {
        return damaged(which + ": bad directory");
    }
    if (a.rdev && !S_ISCHR(a.mode) && !S_ISBLK(a.mode)) return damaged(which + ": rdev of no device");
    if (!valid_time(a.btime)) return damaged(which + ": bad btime");
    if (n.linkable && (!n.is_file() || a.nlink != 0)) return damaged(which + ": linkable with links");
    if (!n.is_dir() && a.nlink > kLinkMax) return damaged(which + ": too many links");
    return ok_status();
}

// Reads a directory's entry records into it.
Status read_entries(RecordReader& in, Directory& dir, const DirHeader& dh) {
    if (!dir.set_next_cookie(dh.next_cookie)) return damaged("bad cookie counter");
    std::vector<EntryRecord> batch;
    uint64_t last_cookie = 0;
    for (uint64_t got = 0; got < dh.entries; got += batch.size()) {
        batch.clear();
        if (auto st = in.next([&](pfs_xdr* x) { xfer_entries(x, batch); }); !st) return st;
        if (batch.empty() || batch.size() > dh.entries - got) return damaged("entry count mismatch");
        for (const auto& e : batch) {
            bool valid = check_name(e.name) && !is_dot(e.name) && e.cookie > last_cookie &&
                         pfs_dtype_valid(e.type);
            if (!valid || !dir.insert_at(e.name, e.id, e.type, e.cookie)) return damaged("bad entry");
            last_cookie = e.cookie;
        }
    }
    return ok_status();
}

// One freed file whose chunks may remain.
struct ReapRecord {
    pfs_entry_id id{};
    StripeLayout layout;
};

void xfer_reaping(pfs_xdr* x, std::vector<ReapRecord>& batch) {
    auto n = static_cast<uint32_t>(batch.size());
    if (pfs_x_count(x, &n, kEntriesPerRecord, 16 + 12)) return;
    if (pfs_xdr_decoding(x)) batch.resize(n);
    for (auto& r : batch) {
        xfer(x, r.id);
        xfer(x, r.layout);
    }
}

}  // namespace

Status Namespace::snapshot_to(const std::function<void(std::span<const uint8_t>)>& write) const {
    RecordWriter out(write);
    Header h{.owner = owner_, .next_ino = next_ino_, .inodes = inodes_.size()};
    if (auto st = out.put([&](pfs_xdr* x) { xfer_header(x, h); }); !st) return st;
    std::vector<uint64_t> order;
    order.reserve(inodes_.size());
    for (const auto& [ino, node] : inodes_) order.push_back(ino);
    std::sort(order.begin(), order.end());
    std::vector<EntryRecord> batch;
    for (uint64_t ino : order) {
        Inode& n = unconst(inodes_.at(ino));
        DirHeader dh;
        if (n.is_dir()) dh = DirHeader{n.dir().entries->next_cookie(), n.dir().entries->size()};
        if (auto st = out.put([&](pfs_xdr* x) { xfer_inode(x, n, dh, kSnapshotVersion); }); !st) return st;
        if (!n.is_dir()) continue;
        Status st = ok_status();
        auto flush = [&] {
            if (st) st = out.put([&](pfs_xdr* x) { xfer_entries(x, batch); });
            batch.clear();
        };
        n.dir().entries->for_each_after(0, [&](std::string_view name, const Directory::Slot& s) {
            batch.push_back(EntryRecord{s.cookie, std::string(name), s.id, s.type});
            if (batch.size() == kEntriesPerRecord) flush();
            return true;
        });
        if (!batch.empty()) flush();
        if (!st) return st;
    }
    uint64_t reaping = reaping_.size();
    if (auto st = out.put([&](pfs_xdr* x) { xfer(x, reaping); }); !st) return st;
    std::vector<ReapRecord> reap;
    for (auto it = reaping_.begin(); it != reaping_.end();) {
        reap.clear();
        for (; it != reaping_.end() && reap.size() < kEntriesPerRecord; ++it)
            reap.push_back(ReapRecord{it->first.id(), it->second});
        if (auto st = out.put([&](pfs_xdr* x) { xfer_reaping(x, reap); }); !st) return st;
    }
    return ok_status();
}

Result<std::vector<uint8_t>> Namespace::snapshot() const {
    std::vector<uint8_t> bytes;
    auto st = snapshot_to(
        [&](std::span<const uint8_t> record) { bytes.insert(bytes.end(), record.begin(), record.end()); });
    if (!st) return st.error();
    return bytes;
}

Result<Namespace> Namespace::restore(std::span<const uint8_t> bytes) {
    RecordReader in(bytes);
    Header h{.magic = 0, .version = 0};
    if (auto st = in.next([&](pfs_xdr* x) { xfer_header(x, h); }); !st) return st.error();
    if (h.magic != kSnapshotMagic) return Error{-EBADMSG, "not a namespace snapshot"};
    if (h.version < 1 || h.version > kSnapshotVersion)
        return Error{-EPROTONOSUPPORT, "snapshot version " + std::to_string(h.version) + " unknown"};
    if (h.next_ino <= kRootIno) return damaged("bad inode counter");

    Namespace ns(h.owner);
    ns.inodes_.clear();
    ns.counts_ = {};
    ns.next_ino_ = h.next_ino;
    // The count is not trusted for allocation: the loop ends when the bytes do.
    for (uint64_t i = 0; i < h.inodes; ++i) {
        Inode n;
        DirHeader dh;
        if (auto st = in.next([&](pfs_xdr* x) { xfer_inode(x, n, dh, h.version); }); !st) return st.error();
        if (auto st = check_inode(n, h); !st) return st.error();
        if (n.is_dir())
            if (auto st = read_entries(in, *n.dir().entries, dh); !st) return st.error();
        uint64_t ino = n.attr.id.ino;
        if (n.remote) ns.detached_.insert(ino);
        ns.count(n, +1);
        if (!ns.inodes_.emplace(ino, std::move(n)).second)
            return damaged("inode " + std::to_string(ino) + " twice");
    }
    if (h.version >= 4) {
        uint64_t reaping = 0;
        if (auto st = in.next([&](pfs_xdr* x) { xfer(x, reaping); }); !st) return st.error();
        std::vector<ReapRecord> batch;
        while (ns.reaping_.size() < reaping) {
            if (auto st = in.next([&](pfs_xdr* x) { xfer_reaping(x, batch); }); !st) return st.error();
            if (batch.empty()) return damaged("empty reaping record");
            for (auto& r : batch) {
                if (ns.inodes_.count(r.id.ino) && same_id(ns.inodes_.at(r.id.ino).attr.id, r.id))
                    return damaged("a live inode among the files to reap");
                if (!ns.reaping_.emplace(EntryKey::of(r.id), std::move(r.layout)).second)
                    return damaged("a file to reap twice");
            }
        }
        if (ns.reaping_.size() != reaping) return damaged("wrong count of files to reap");
    }
    if (!in.at_end()) return damaged("trailing bytes");
    if (auto st = ns.verify(); !st) return st.error();
    return ns;
}

Status Namespace::verify() {
    auto root = inodes_.find(kRootIno);
    if (root == inodes_.end() || !root->second.is_dir() || root->second.dir().parent != kRootIno ||
        root->second.remote)
        return damaged("no root directory");
    std::unordered_map<uint64_t, uint32_t> links;       // entries naming each inode
    std::unordered_map<uint64_t, uint32_t> subdirs;     // per directory
    for (const auto& [ino, node] : inodes_) {
        if (!node.is_dir()) continue;
        Status st = ok_status();
        const pfs_entry_id dir_id = node.attr.id;
        for (size_t i = 1; i < node.dir().shards.ids.size(); ++i)
            if (!remote_entries_.emplace(EntryKey::of(node.dir().shards.ids[i]), ino).second)
                return damaged("directory " + std::to_string(ino) + " has a shard named twice");
        node.dir().entries->for_each_after(0, [&](std::string_view, const Directory::Slot& s) {
            if (!is_local(s.id)) {
                // Another server's inode: only its type is known here.
                bool known_type = pfs_dtype_valid(s.type);
                if (!known_type || s.id.ino == 0 || s.id.generation == 0 || names(s.id)) {
                    st = damaged("directory " + std::to_string(ino) + " has a bad remote entry");
                    return false;
                }
                remote_entries_.emplace(EntryKey::of(s.id), ino);
                if (s.type == DT_DIR) ++subdirs[ino];
                return true;
            }
            auto child = find(s.id);
            if (!child || (*child)->dtype() != s.type || s.id.ino == kRootIno) {
                st = damaged("directory " + std::to_string(ino) + " has a bad entry");
                return false;
            }
            // Named here and elsewhere only while its entry moves in or out.
            if (const auto& r = (*child)->remote; r && (!r->moving() || (!same_id(r->from, dir_id) && !same_id(r->dir, dir_id)))) {
                st = damaged("detached inode " + std::to_string(s.id.ino) + " has a local entry");
                return false;
            }
            if ((*child)->is_dir()) {
                ++subdirs[ino];
                if ((*child)->dir().parent != ino) {
                    st = damaged("directory " + std::to_string(s.id.ino) + " has a wrong parent");
                    return false;
                }
            }
            return ++links[s.id.ino] <= kLinkMax;
        });
        if (!st) return st;
    }
    for (const auto& [ino, node] : inodes_) {
        uint32_t n = links[ino];
        std::string which = "inode " + std::to_string(ino);
        if (const auto& r = node.remote) {
            bool bad_place = r->moving() ? is_local(r->dir) && is_local(r->from) : is_local(r->dir);
            if (bad_place || (r->state == PFS_DETACHED_CREATED && !node.is_dir()))
                return damaged("detached " + which + " has a bad parent");
            if (n > (r->moving() ? 1u : 0u) || (!node.is_dir() && node.attr.nlink != 1))
                return damaged("detached " + which + " has wrong links");
        } else if (node.is_dir()) {
            if (n != (ino == kRootIno ? 0u : 1u)) return damaged("directory " + std::to_string(ino) + " has wrong links");
        } else {
            if (node.attr.nlink != n) return damaged(which + " has a wrong link count");
            if (n == 0) orphans_.insert(ino);
        }
        if (node.is_dir() && node.attr.nlink != 2 + uint64_t{subdirs[ino]})
            return damaged("directory " + std::to_string(ino) + " has wrong links");
    }
    // Every directory has one parent that names it; only a cycle cut off
    // from the root could still hide. Walk down from the root (and the
    // directories named by other servers) to rule it out.
    std::vector<uint64_t> todo{kRootIno};
    for (uint64_t ino : detached_)
        if (inodes_.at(ino).is_dir() && links[ino] == 0) todo.push_back(ino);
    std::unordered_set<uint64_t> reached;
    while (!todo.empty()) {
        uint64_t ino = todo.back();
        todo.pop_back();
        if (!reached.insert(ino).second) continue;
        inodes_.at(ino).dir().entries->for_each_after(0, [&](std::string_view, const Directory::Slot& s) {
            if (s.type == DT_DIR && is_local(s.id)) todo.push_back(s.id.ino);
            return true;
        });
    }
    if (reached.size() != counts_.directories) return damaged("directories cut off from the root");

    return ok_status();
}

}  // namespace pfs::meta
