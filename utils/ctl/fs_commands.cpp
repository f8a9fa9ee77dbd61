// The namespace commands: ls, mkdir, rm, mv. Quiet on success like their
// Unix namesakes; --json tells what was done.
#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>

#include "commands.hpp"
#include "exit_status.hpp"
#include "fs_views.hpp"

namespace pfs::ctl {
namespace {

// The path argument checked, and the file system.
Result<FsClient*> open_path(Context& ctx, const std::string& path) {
    if (auto st = check_fs_path(path); !st) return st.error();
    return ctx.fs();
}

struct Listed {
    DirEntry entry;            // entry.attr: with -l
    std::string link_target;   // symlinks, with -l
};

// The entries to list: a directory's, sorted by name, or the entry itself;
// with_attrs: each with the attributes the listing brought (READDIR_PLUS).
Result<std::vector<Listed>> entries_of(FsClient& fs, const std::string& path, const pfs_attr& attr,
                                       bool with_attrs) {
    std::vector<Listed> out;
    if (!is_dir(attr)) {
        out.push_back({DirEntry{path, attr.id, static_cast<uint8_t>(IFTODT(attr.mode)), {}}, {}});
        return out;
    }
    auto entries = with_attrs ? fs.readdir_plus(path) : fs.readdir(path);
    if (!entries) return fs_error(path, entries.error());
    std::sort(entries->begin(), entries->end(), [](const DirEntry& a, const DirEntry& b) { return a.name < b.name; });
    for (auto& e : *entries) out.push_back({std::move(e), {}});
    return out;
}

// Attributes (and symlink targets) for ls -l, asked for the entries the
// listing brought none for (on other metadata servers); entries gone
// meanwhile are dropped.
Status add_attributes(FsClient& fs, const std::string& path, bool is_listing_dir, std::vector<Listed>& items) {
    std::vector<pfs_entry_id> ids;
    for (const auto& item : items)
        if (!item.entry.attr) ids.push_back(item.entry.id);
    auto answers = fs.stat_all(ids);
    std::vector<Result<pfs_attr>> attrs;
    attrs.reserve(items.size());
    size_t next = 0;
    for (const auto& item : items)
        attrs.push_back(item.entry.attr ? Result<pfs_attr>(*item.entry.attr) : std::move(answers[next++]));
    std::vector<Listed> kept;
    for (size_t i = 0; i < items.size(); ++i) {
        std::string where = is_listing_dir ? join_path(path, items[i].entry.name) : path;
        if (!attrs[i] && attrs[i].error().code == -ENOENT) continue;
        if (!attrs[i]) return fs_error(where, attrs[i].error());
        items[i].entry.attr = *attrs[i];
        if ((attrs[i]->mode & S_IFMT) == S_IFLNK) {
            auto target = fs.readlink(where);
            if (target) items[i].link_target = *target;
        }
        kept.push_back(std::move(items[i]));
    }
    items = std::move(kept);
    return ok_status();
}

std::string render_long(const std::vector<Listed>& items) {
    Table table({{"MODE"},
                 {"LINKS", Align::right},
                 {"UID", Align::right},
                 {"GID", Align::right},
                 {"SIZE", Align::right},
                 {"MODIFIED"},
                 {"NAME"}});
    for (const auto& item : items) {
        const pfs_attr& a = *item.entry.attr;
        std::string name = item.entry.name;
        if (!item.link_target.empty()) name += " -> " + item.link_target;
        table.add_row({mode_string(a.mode), std::to_string(a.nlink), std::to_string(a.uid), std::to_string(a.gid),
                       size_or_device(a), format_time(a.mtime), name});
    }
    return table.render();
}

json listing_json(const std::string& path, const std::vector<Listed>& items) {
    json list = json::array();
    for (const auto& item : items) {
        json e = {{"name", item.entry.name}};
        if (item.entry.attr) {
            add_attr_json(e, *item.entry.attr);
            if ((item.entry.attr->mode & S_IFMT) == S_IFLNK) e["symlink_target"] = item.link_target;
        } else {
            e["type"] = dirent_type_name(item.entry.type);
            e["entry_id"] = entry_id_json(item.entry.id);
        }
        list.push_back(std::move(e));
    }
    return {{"path", path}, {"entries", std::move(list)}};
}

// The directories of path from the top: "/a", "/a/b", "/a/b/c".
std::vector<std::string> prefixes(const std::string& path) {
    std::vector<std::string> out;
    for (size_t i = path.find_first_not_of('/'); i != std::string::npos && i < path.size();) {
        size_t end = path.find('/', i);
        if (end == std::string::npos) end = path.size();
        out.push_back(path.substr(0, end));
        i = path.find_first_not_of('/', end);
    }
    return out;
}

struct Removed {
    uint64_t files = 0;  // and symlinks
    uint64_t directories = 0;
};

// Depth first, the directory itself last.
Status remove_tree(FsClient& fs, const std::string& dir, Removed& removed) {
    auto entries = fs.readdir(dir);
    if (!entries) return fs_error(dir, entries.error());
    for (const auto& e : *entries) {
        std::string path = join_path(dir, e.name);
        if (e.type == DT_DIR) {
            if (auto st = remove_tree(fs, path, removed); !st) return st;
            continue;
        }
        auto st = fs.unlink(path);
        if (!st && st.error().code != -ENOENT) return fs_error(path, st.error());
        if (st) ++removed.files;
    }
    auto st = fs.rmdir(dir);
    if (!st) return fs_error(dir, st.error());
    ++removed.directories;
    return ok_status();
}

}  // namespace

Result<std::string> list_dir(Context& ctx) {
    std::string path = ctx.args.empty() ? "/" : ctx.args[0];
    auto fs = open_path(ctx, path);
    if (!fs) return fs.error();
    auto attr = (*fs)->stat(path);
    if (!attr) return fs_error(path, attr.error());
    const bool long_format = ctx.options.get<bool>("long");
    auto items = entries_of(**fs, path, *attr, long_format);
    if (!items) return items.error();
    if (long_format)
        if (auto st = add_attributes(**fs, path, is_dir(*attr), *items); !st) return st.error();

    if (ctx.json) return render_json(listing_json(path, *items));
    if (ctx.options.get<bool>("long")) return render_long(*items);
    std::string out;
    for (const auto& item : *items) out += item.entry.name + "\n";
    return out;
}

Result<std::string> make_dir(Context& ctx) {
    const std::string& path = ctx.args[0];
    auto fs = open_path(ctx, path);
    if (!fs) return fs.error();
    std::vector<std::string> created;
    uint32_t meta_node = 0;
    if (ctx.options.has("meta-node")) {
        auto n = parse_id(ctx.options.get<std::string>("meta-node"), "metadata node id");
        if (!n) return n.error();
        meta_node = *n;
    }
    uint32_t stripes = 0;
    if (ctx.options.has("stripe")) {
        auto n = parse_id(ctx.options.get<std::string>("stripe"), "stripe count");
        if (!n) return n.error();
        if (*n == 0 || *n > PFS_DIR_SHARDS_MAX)
            return usage_error("invalid stripe count " + std::to_string(*n) + ": 1 to " +
                               std::to_string(PFS_DIR_SHARDS_MAX));
        stripes = *n;
    }
    if (!ctx.options.get<bool>("parents")) {
        auto made = (*fs)->mkdir(path, 0755, meta_node, stripes);
        if (!made) return fs_error(path, made.error());
        created.push_back(path);
    } else {
        for (const auto& dir : prefixes(path)) {
            auto existing = (*fs)->stat(dir);
            if (existing && !is_dir(*existing)) return fs_error(dir, Error{-ENOTDIR, ""});
            if (existing) continue;
            if (existing.error().code != -ENOENT) return fs_error(dir, existing.error());
            auto made = (*fs)->mkdir(dir, 0755, dir == path ? meta_node : 0, dir == path ? stripes : 0);
            if (!made && made.error().code != -EEXIST) return fs_error(dir, made.error());
            if (made) created.push_back(dir);
        }
    }
    return ctx.json ? render_json({{"created", created}}) : "";
}

Result<std::string> remove_entry(Context& ctx) {
    const std::string& path = ctx.args[0];
    auto fs = open_path(ctx, path);
    if (!fs) return fs.error();
    if (base_name(path).empty()) return refused(path + ": the root directory cannot be removed");
    auto attr = (*fs)->stat(path);
    if (!attr) return fs_error(path, attr.error());
    Removed removed;
    if (is_dir(*attr)) {
        if (!ctx.options.get<bool>("recursive")) return refused(path + ": Is a directory (rm -r removes trees)");
        if (auto st = remove_tree(**fs, path, removed); !st) return st.error();
    } else {
        if (auto st = (*fs)->unlink(path); !st) return fs_error(path, st.error());
        ++removed.files;
    }
    if (!ctx.json) return std::string();
    return render_json({{"removed_files", removed.files}, {"removed_directories", removed.directories}});
}

Result<std::string> move_entry(Context& ctx) {
    const std::string &from = ctx.args[0], &dst = ctx.args[1];
    if (auto st = check_fs_path(dst); !st) return st.error();
    auto fs = open_path(ctx, from);
    if (!fs) return fs.error();
    if (auto src = (*fs)->stat(from); !src) return fs_error(from, src.error());
    // Into DST when it is a directory, as mv does.
    std::string to = dst;
    if (auto target = (*fs)->stat(dst); target && is_dir(*target)) to = join_path(dst, base_name(from));
    if (auto st = (*fs)->rename(from, to); !st) return fs_error(to, st.error());
    return ctx.json ? render_json({{"from", from}, {"to", to}}) : "";
}

}  // namespace pfs::ctl
