// fsck --readonly: walks the namespace from the root (directories by
// READDIR, file layouts by an open for reading), lists every storage
// target's chunk files (CHUNK_LIST) and reports what does not fit:
//   orphan chunks    a chunk file whose entry does not exist, or whose
//                    file's layout does not name that target;
//   dangling entries a directory entry whose inode does not answer, or a
//                    file whose layout names a target not in the map;
//   orphan dirs      a directory of one metadata server meant to be named
//                    by an entry on another (LIST_DETACHED) that no entry
//                    names (ENTRY_CHECK asks again after the walk).
// A crash in the middle of a mkdir or rmdir across servers leaves such a
// directory for a moment: its server settles it within seconds.
// A file unlinked while open keeps its chunks until its last close: its
// inode still answers GETATTR, so its chunks are not orphans. Files with no
// data have no chunk files, which is no problem either. An entry that
// vanishes while fsck looks at it is no dangling entry: each one found is
// looked up again by its path. Chunks of inodes that are gone are listed
// again a second later: pfs-meta deletes them in batches after the unlink,
// and only those still there are orphans.
//
// --repair then mends what it found (the admin role): orphan chunks are
// deleted; an orphan directory no entry names is removed when empty (one
// with entries is left, reported); one its server is still settling is
// left to it.
//
// Exit status: 0 clean, 1 problems found (printed; with --repair, whether
// each was repaired), 2 could not check (a server did not answer). Without
// --repair it changes nothing.
#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "commands.hpp"
#include "exit_status.hpp"
#include "fs_views.hpp"

namespace pfs::ctl {
namespace {

constexpr int kFsckProblems = 1;
constexpr int kFsckUnchecked = kExitNotChecked;

struct IdHash {
    size_t operator()(const pfs_entry_id& id) const {
        return std::hash<uint64_t>()(id.ino * 0x9e3779b97f4a7c15ULL ^ ((uint64_t{id.owner_node} << 32) | id.generation));
    }
};
struct IdEqual {
    bool operator()(const pfs_entry_id& a, const pfs_entry_id& b) const {
        return a.ino == b.ino && a.owner_node == b.owner_node && a.generation == b.generation;
    }
};
template <class V>
using IdMap = std::unordered_map<pfs_entry_id, V, IdHash, IdEqual>;
using IdSet = std::unordered_set<pfs_entry_id, IdHash, IdEqual>;

struct Problem {
    std::string kind;  // "orphan_chunk", "dangling_entry" or "orphan_directory"
    pfs_entry_id id{};
    std::string path;        // dangling entries
    uint32_t target_id = 0;  // orphan chunks
    uint64_t size = 0;
    std::string reason;
    std::optional<bool> repaired{};  // --repair: whether it was
    std::string repair_note{};
};

// The inode is gone (ESTALE: the metadata server knows no such inode).
bool is_gone(const Error& e) {
    return e.code == -ENOENT || e.code == -ESTALE || e.code == PFS_E_UNKNOWN_NODE;
}

Error unchecked(const std::string& what, const Error& e) {
    return Error{kFsckUnchecked, "fsck: " + what + ": " + e.message + "; nothing was checked to the end"};
}

std::string target_label(const Snapshot& snap, uint32_t target_id);

class Fsck {
public:
    Fsck(FsClient& fs, const Snapshot& snap) : fs_(fs), snap_(snap) {
        for (const auto& t : fs.targets()) in_map_.insert(t.target_id);
    }

    Status walk();
    Status check_detached();
    Status check_chunks();
    void repair();

    std::vector<Problem> problems;
    uint64_t directories = 0, files = 0, others = 0, chunks = 0;

private:
    struct Dir {
        pfs_entry_id id;
        std::string path;
    };
    Status check_files(const std::vector<Dir>& found);
    Status check_others(const std::vector<Dir>& found);
    // Confirmed by confirm_dangling(). not_a_dir: the entry says directory,
    // the inode answers as something else.
    void dangling(const Dir& entry, std::string reason, bool not_a_dir = false) {
        suspects_.push_back({Problem{"dangling_entry", entry.id, entry.path, 0, 0, std::move(reason)}, not_a_dir});
    }
    Status confirm_dangling();
    void orphan(const pfs_chunk_entry& c, uint32_t target, std::string reason) {
        problems.push_back(Problem{"orphan_chunk", c.file, "", target, c.size, std::move(reason)});
    }
    // A chunk of an inode that is gone: an orphan, unless its deletion is
    // still on its way (pfs-meta batches them; confirm_deleted() looks again).
    void maybe_orphan(const pfs_chunk_entry& c, uint32_t target) { deleting_.emplace_back(c, target); }
    Status confirm_deleted();
    // fn(chunk) for every chunk of the target, page by page (CHUNK_LIST).
    template <class F>
    Status each_chunk(uint32_t target, F&& fn) {
        pfs_chunk_cookie cookie{};
        for (;;) {
            auto page = fs_.chunk_list(target, cookie, PFS_CHUNK_LIST_MAX);
            if (!page) return unchecked("cannot list the chunks of " + target_label(snap_, target), page.error());
            for (const auto& c : page->entries) fn(c);
            if (page->eof) return ok_status();
            cookie = page->next;
        }
    }

    FsClient& fs_;
    const Snapshot& snap_;
    std::unordered_set<uint32_t> in_map_;
    IdMap<std::vector<uint32_t>> layouts_;  // every file found: its targets
    IdSet not_files_;                       // directories, symlinks, ...
    IdSet dirs_seen_;                       // every directory the walk reached
    std::vector<std::pair<Problem, bool>> suspects_;  // dangling entries, unless they just changed
    std::vector<std::pair<pfs_chunk_entry, uint32_t>> deleting_;  // chunks of gone inodes, per target
};

// Longer than pfs-meta lingers over chunk deletions (ChunkReaper) plus
// their way to the storage servers.
constexpr auto kDeletionGrace = std::chrono::seconds(1);

Status Fsck::walk() {
    auto root = fs_.root();
    if (!root) return unchecked("the root directory", root.error());
    IdSet& seen = dirs_seen_;
    seen.insert(*root);
    std::vector<Dir> level{{*root, "/"}};
    while (!level.empty()) {
        std::vector<pfs_entry_id> ids;
        for (const auto& d : level) ids.push_back(d.id);
        auto listed = fs_.readdir_all(ids);
        std::vector<Dir> next, regular, other;
        for (size_t i = 0; i < level.size(); ++i) {
            if (!listed[i]) {
                const Error& e = listed[i].error();
                if (level[i].path != "/" && e.code == -ENOTDIR)
                    dangling(level[i], "listed as a directory, its inode is none", true);
                else if (level[i].path == "/" || !is_gone(e))
                    return unchecked("cannot read directory " + level[i].path, e);
                else
                    dangling(level[i], "the directory's inode does not answer: " + e.message);
                continue;
            }
            ++directories;
            not_files_.insert(level[i].id);
            for (const auto& e : *listed[i]) {
                Dir entry{e.id, join_path(level[i].path, e.name)};
                if (e.type == DT_DIR) {
                    if (seen.insert(e.id).second) next.push_back(std::move(entry));
                } else if (e.type == DT_REG) {
                    regular.push_back(std::move(entry));
                } else {
                    other.push_back(std::move(entry));
                }
            }
        }
        if (auto st = check_files(regular); !st) return st;
        if (auto st = check_others(other); !st) return st;
        level = std::move(next);
    }
    return confirm_dangling();
}

Status Fsck::check_detached() {
    // Unreached directories by the server their entry should be on.
    std::map<uint32_t, std::vector<pfs_detached_dir>> unreached;
    for (const auto& node : fs_.meta_nodes()) {
        auto dirs = fs_.detached_dirs(node.node_id);
        if (!dirs) return unchecked("cannot list the directories of metadata node " + std::to_string(node.node_id),
                                    dirs.error());
        for (const auto& d : *dirs)
            if (!dirs_seen_.count(d.id)) unreached[d.parent.owner_node].push_back(d);
    }
    for (const auto& [owner, dirs] : unreached) {
        std::vector<pfs_entry_id> ids;
        for (const auto& d : dirs) ids.push_back(d.id);
        auto states = fs_.entry_states(owner, ids);
        if (!states && !is_gone(states.error()))
            return unchecked("cannot ask metadata node " + std::to_string(owner) + " about its entries", states.error());
        for (size_t i = 0; i < dirs.size(); ++i) {
            uint8_t state = states ? (*states)[i] : uint8_t{PFS_ENTRY_ABSENT};
            if (state == PFS_ENTRY_PRESENT) continue;  // made since the walk
            std::string reason = state == PFS_ENTRY_PENDING ? "an operation on it is under way"
                                 : dirs[i].state == PFS_DETACHED_CONFIRMED
                                     ? "no entry names it"
                                     : "left half made or half removed; its server settles it";
            problems.push_back(Problem{"orphan_directory", dirs[i].id, "", 0, 0, std::move(reason)});
        }
    }
    return ok_status();
}

Status Fsck::confirm_dangling() {
    for (auto& [p, not_a_dir] : suspects_) {
        auto now = fs_.stat(p.path);
        const bool same = now && now->id.ino == p.id.ino && now->id.owner_node == p.id.owner_node &&
                          now->id.generation == p.id.generation;
        if (not_a_dir ? !same || S_ISDIR(now->mode) : now || now.error().code == -ENOENT)
            continue;  // replaced or removed meanwhile
        if (!not_a_dir && !is_gone(now.error())) return unchecked("cannot stat " + p.path, now.error());
        problems.push_back(std::move(p));
    }
    suspects_.clear();
    return ok_status();
}

Status Fsck::check_files(const std::vector<Dir>& found) {
    std::vector<pfs_entry_id> ids;
    for (const auto& f : found) ids.push_back(f.id);
    auto layouts = fs_.layout_all(ids);
    for (size_t i = 0; i < found.size(); ++i) {
        if (!layouts[i]) {
            if (!is_gone(layouts[i].error())) return unchecked("cannot open " + found[i].path, layouts[i].error());
            dangling(found[i], "the file's inode does not answer: " + layouts[i].error().message);
            continue;
        }
        ++files;
        for (uint32_t t : layouts[i]->targets)
            if (!in_map_.count(t)) dangling(found[i], "its layout names target " + std::to_string(t) + ", not in the map");
        layouts_[found[i].id] = layouts[i]->targets;  // hard links: the same inode again, the same layout
    }
    return ok_status();
}

Status Fsck::check_others(const std::vector<Dir>& found) {
    std::vector<pfs_entry_id> ids;
    for (const auto& f : found) ids.push_back(f.id);
    auto attrs = fs_.stat_all(ids);
    for (size_t i = 0; i < found.size(); ++i) {
        if (!attrs[i]) {
            if (!is_gone(attrs[i].error())) return unchecked("cannot stat " + found[i].path, attrs[i].error());
            dangling(found[i], "the entry's inode does not answer: " + attrs[i].error().message);
            continue;
        }
        ++others;
        not_files_.insert(found[i].id);
    }
    return ok_status();
}

Status Fsck::check_chunks() {
    // Chunks of entries the walk did not find: (chunk, target).
    std::vector<std::pair<pfs_chunk_entry, uint32_t>> unknown;
    for (const auto& t : fs_.targets()) {
        auto listed = each_chunk(t.target_id, [&](const pfs_chunk_entry& c) {
            ++chunks;
            auto it = layouts_.find(c.file);
            if (it != layouts_.end()) {
                if (std::find(it->second.begin(), it->second.end(), t.target_id) == it->second.end())
                    orphan(c, t.target_id, "the file's layout does not name this target");
            } else if (not_files_.count(c.file)) {
                orphan(c, t.target_id, "the entry is not a regular file");
            } else {
                unknown.emplace_back(c, t.target_id);
            }
        });
        if (!listed) return listed.error();
    }
    if (unknown.empty()) return ok_status();
    // Not in the namespace: unlinked but still open (its inode answers and
    // its layout names the target), created since the walk, or an orphan.
    std::vector<pfs_entry_id> ids;
    for (const auto& [c, target] : unknown) ids.push_back(c.file);
    auto attrs = fs_.stat_all(ids);
    std::vector<pfs_entry_id> live_files;
    for (size_t i = 0; i < unknown.size(); ++i) {
        if (attrs[i] && (attrs[i]->mode & S_IFMT) == S_IFREG) live_files.push_back(ids[i]);
        else if (attrs[i]) orphan(unknown[i].first, unknown[i].second, "the entry is not a regular file");
        else if (is_gone(attrs[i].error())) maybe_orphan(unknown[i].first, unknown[i].second);
        else return unchecked("cannot stat entry " + entry_id_string(ids[i]), attrs[i].error());
    }
    auto layouts = fs_.layout_all(live_files);
    IdMap<std::vector<uint32_t>> live;
    for (size_t i = 0; i < live_files.size(); ++i) {
        if (layouts[i]) live[live_files[i]] = layouts[i]->targets;
        else if (!is_gone(layouts[i].error()))
            return unchecked("cannot open entry " + entry_id_string(live_files[i]), layouts[i].error());
    }
    for (size_t i = 0; i < unknown.size(); ++i) {
        if (!attrs[i] || (attrs[i]->mode & S_IFMT) != S_IFREG) continue;
        auto it = live.find(ids[i]);
        if (it == live.end()) maybe_orphan(unknown[i].first, unknown[i].second);
        else if (std::find(it->second.begin(), it->second.end(), unknown[i].second) == it->second.end())
            orphan(unknown[i].first, unknown[i].second, "the file's layout does not name this target");
    }
    return confirm_deleted();
}

Status Fsck::confirm_deleted() {
    if (deleting_.empty()) return ok_status();
    std::this_thread::sleep_for(kDeletionGrace);
    std::map<uint32_t, IdSet> still;  // by target: what is there now
    for (const auto& [c, target] : deleting_) still[target];
    for (auto& [target, chunks_now] : still) {
        auto listed = each_chunk(target, [&](const pfs_chunk_entry& c) { chunks_now.insert(c.file); });
        if (!listed) return listed.error();
    }
    for (const auto& [c, target] : deleting_)
        if (still[target].count(c.file)) orphan(c, target, "no such entry");
    deleting_.clear();
    return ok_status();
}

void Fsck::repair() {
    for (auto& p : problems) {
        Status st = ok_status();
        if (p.kind == "orphan_chunk") {
            st = fs_.chunk_unlink(p.target_id, p.id);
        } else if (p.kind == "orphan_directory" && p.reason == "no entry names it") {
            st = fs_.remove_detached_dir(p.id);
            if (!st && st.error().code == -ENOTEMPTY) st = Error{-ENOTEMPTY, "it holds entries; left as it is"};
        } else if (p.kind == "orphan_directory") {
            st = Error{-EBUSY, "left to its server, which settles it"};
        } else {
            st = Error{-EINVAL, "a dangling entry is not repaired: remove it (pfs-ctl rm)"};
        }
        p.repaired = st.ok();
        if (!st) p.repair_note = st.error().message;
    }
}

std::string target_label(const Snapshot& snap, uint32_t target_id) {
    const pfs_target_info* t = snap.target(target_id);
    std::string label = "target " + std::to_string(target_id);
    if (t) label += " on node " + labelled(t->node_id, snap.node_alias(t->node_id));
    return label;
}

std::string render(const Fsck& f, const Snapshot& snap, size_t targets, bool as_json) {
    if (as_json) {
        json list = json::array();
        for (const auto& p : f.problems) {
            json j = {{"kind", p.kind}, {"entry_id", entry_id_json(p.id)}};
            if (p.kind == "orphan_chunk") {
                const pfs_target_info* t = snap.target(p.target_id);
                j["target_id"] = p.target_id;
                j["node_id"] = t ? t->node_id : 0;
                j["size"] = p.size;
            } else {
                j["path"] = p.path;
            }
            j["reason"] = p.reason;
            if (p.repaired) {
                j["repaired"] = *p.repaired;
                if (!*p.repaired) j["not_repaired_because"] = p.repair_note;
            }
            list.push_back(std::move(j));
        }
        return render_json({{"clean", f.problems.empty()},
                            {"directories", f.directories},
                            {"files", f.files},
                            {"other_entries", f.others},
                            {"targets", targets},
                            {"chunks", f.chunks},
                            {"problems", std::move(list)}});
    }
    std::string out = "checked " + std::to_string(f.directories) + " directories, " + std::to_string(f.files) +
                      " files, " + std::to_string(f.others) + " other entries, " + std::to_string(f.chunks) +
                      " chunk files on " + std::to_string(targets) + " targets\n";
    for (const auto& p : f.problems) {
        if (p.kind == "orphan_chunk")
            out += "orphan chunk: " + entry_id_string(p.id) + " on " + target_label(snap, p.target_id) + " (" +
                   std::to_string(p.size) + " bytes): " + p.reason;
        else if (p.kind == "orphan_directory")
            out += "orphan directory: " + entry_id_string(p.id) + " on metadata node " +
                   std::to_string(p.id.owner_node) + ": " + p.reason;
        else
            out += "dangling entry: " + p.path + " (" + entry_id_string(p.id) + "): " + p.reason;
        if (p.repaired) out += *p.repaired ? " -- repaired" : " -- not repaired: " + p.repair_note;
        out += "\n";
    }
    out += f.problems.empty() ? "no problems found\n" : std::to_string(f.problems.size()) + " problems found\n";
    return out;
}

}  // namespace

Result<std::string> fsck(Context& ctx) {
    const bool repair = ctx.options.get<bool>("repair");
    if (ctx.options.get<bool>("readonly") == repair)
        return usage_error("fsck: say --readonly (check only) or --repair (check, then mend what it can)");
    auto snap = fetch(ctx.mgmt, kNodes | kTargets);
    if (!snap) return Error{kFsckUnchecked, snap.error().message};
    auto fs = ctx.fs();
    if (!fs) return Error{kFsckUnchecked, fs.error().message};
    Fsck check(**fs, *snap);
    if (auto st = check.walk(); !st) return st.error();
    if (auto st = check.check_detached(); !st) return st.error();
    if (auto st = check.check_chunks(); !st) return st.error();
    if (repair) check.repair();
    if (!check.problems.empty()) ctx.exit_status = kFsckProblems;
    return render(check, *snap, (*fs)->targets().size(), ctx.json);
}

}  // namespace pfs::ctl
