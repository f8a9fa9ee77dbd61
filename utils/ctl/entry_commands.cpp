// stat, entry info and entry set: what an entry is and how its contents are
// (files) or will be (directories) striped, like beegfs-ctl --getentryinfo /
// --setpattern and lfs getstripe / setstripe.
#include <sys/stat.h>

#include <algorithm>
#include <optional>

#include "commands.hpp"
#include "exit_status.hpp"
#include "fs_views.hpp"

extern "C" {
#include "pfs_stripe.h"
}

namespace pfs::ctl {
namespace {

using Fields = std::vector<std::pair<std::string, std::string>>;

// An entry's attributes as JSON and as "Label: value" fields (a symlink
// with its target).
struct Described {
    pfs_attr attr{};
    json doc;
    Fields fields;
};

Result<Described> describe(FsClient& fs, const std::string& path) {
    auto attr = fs.stat(path);
    if (!attr) return fs_error(path, attr.error());
    Described d{*attr, attr_json(path, *attr), attr_fields(path, *attr)};
    if ((attr->mode & S_IFMT) == S_IFLNK) {
        auto target = fs.readlink(path);
        if (!target) return fs_error(path, target.error());
        d.doc["symlink_target"] = *target;
        d.fields.emplace_back("Symlink to", *target);
    }
    return d;
}

// The entry's path as given, checked, and the file system.
Result<FsClient*> open_path(Context& ctx, const std::string& path) {
    if (auto st = check_fs_path(path); !st) return st.error();
    return ctx.fs();
}

std::string indented(const std::string& text, const std::string& indent) {
    std::string out;
    size_t start = 0;
    while (start < text.size()) {
        size_t end = text.find('\n', start);
        end = end == std::string::npos ? text.size() : end + 1;
        out += indent + text.substr(start, end - start);
        start = end;
    }
    return out;
}

void add_layout(Described& d, const FileLayout& layout, const Snapshot& snap) {
    if (is_inline_layout(layout)) {
        d.doc["layout"] = {{"chunk_size", layout.chunk_size}, {"pool_id", layout.pool_id}, {"inline", true}};
        d.fields.emplace_back("Data", "inline, with the file's metadata server (moves to the storage targets "
                                      "when it outgrows the directory's inline max)");
        return;
    }
    json targets = json::array();
    Table table({{"INDEX", Align::right}, {"TARGET", Align::right}, {"NODE"}});
    for (size_t i = 0; i < layout.targets.size(); ++i) {
        uint32_t id = layout.targets[i];
        const pfs_target_info* t = snap.target(id);
        uint32_t node = t ? t->node_id : 0;
        targets.push_back({{"target_id", id}, {"node_id", node}, {"node_alias", snap.node_alias(node)}});
        table.add_row({std::to_string(i), std::to_string(id), t ? labelled(node, snap.node_alias(node)) : "?"});
    }
    d.doc["layout"] = {{"chunk_size", layout.chunk_size},
                       {"pool_id", layout.pool_id},
                       {"pool_name", snap.pool_name(layout.pool_id)},
                       {"targets", std::move(targets)}};
    Fields fields{{"Chunk size", format_chunk_size(layout.chunk_size)},
                  {"Pool", labelled(layout.pool_id, snap.pool_name(layout.pool_id))},
                  {"Targets", std::to_string(layout.targets.size()) + ", in stripe order:"}};
    d.fields.emplace_back("Stripe layout", "RAID0\n" + render_fields(fields, "  ") + indented(table.render(), "    "));
}

// A striped directory's shards: where each part of its names lives.
void add_shards(Described& d, const std::vector<pfs_entry_id>& shards, const Snapshot& snap) {
    json list = json::array();
    Table table({{"SHARD", Align::right}, {"NODE"}, {"INODE", Align::right}});
    for (size_t i = 0; i < shards.size(); ++i) {
        const uint32_t node = shards[i].owner_node;
        list.push_back({{"node_id", node}, {"node_alias", snap.node_alias(node)}, {"ino", shards[i].ino}});
        table.add_row({std::to_string(i), labelled(node, snap.node_alias(node)), std::to_string(shards[i].ino)});
    }
    d.doc["shards"] = std::move(list);
    d.fields.emplace_back("Striped over", std::to_string(shards.size()) + " metadata servers, by name hash:\n" +
                                              indented(table.render(), "  "));
}

std::string pattern_text(const pfs_pattern& p, const Snapshot& snap, const std::string& indent) {
    return render_fields({{"Chunk size", format_chunk_size(p.chunk_size)},
                          {"Targets", std::to_string(p.num_targets)},
                          {"Pool", labelled(p.pool_id, snap.pool_name(p.pool_id))},
                          {"Inline max", p.inline_max ? format_chunk_size(p.inline_max) : "0 (files never inline)"},
                          {"Dir stripes", p.dir_stripes > 1 ? std::to_string(p.dir_stripes) + " metadata servers"
                                                            : "1 (new directories not striped)"}},
                         indent);
}

// render_fields, except that a value with several lines goes below its label.
std::string render_described(const Fields& fields) {
    Fields simple;
    std::string blocks;
    for (const auto& [label, value] : fields) {
        size_t nl = value.find('\n');
        if (nl == std::string::npos) simple.emplace_back(label, value);
        else blocks += label + ": " + value.substr(0, nl) + "\n" + value.substr(nl + 1);
    }
    return render_fields(simple) + blocks;
}

}  // namespace

Result<std::string> stat_entry(Context& ctx) {
    const std::string& path = ctx.args[0];
    auto fs = open_path(ctx, path);
    if (!fs) return fs.error();
    auto d = describe(**fs, path);
    if (!d) return d.error();
    return ctx.json ? render_json(d->doc) : render_fields(d->fields);
}

Result<std::string> entry_info(Context& ctx) {
    const std::string& path = ctx.args[0];
    auto fs = open_path(ctx, path);
    if (!fs) return fs.error();
    auto d = describe(**fs, path);
    if (!d) return d.error();
    auto snap = fetch(ctx.mgmt, kNodes | kTargets | kPools);
    if (!snap) return snap.error();
    uint32_t meta = d->attr.id.owner_node;
    d->fields.emplace(d->fields.begin() + 3, "Metadata node", labelled(meta, snap->node_alias(meta)));

    if ((d->attr.mode & S_IFMT) == S_IFREG) {
        auto layout = (*fs)->layout(path);
        if (!layout) return fs_error(path, layout.error());
        add_layout(*d, *layout, *snap);
    } else if (is_dir(d->attr)) {
        auto pattern = (*fs)->get_pattern(path);
        if (!pattern) return fs_error(path, pattern.error());
        d->doc["pattern"] = pattern_json(*pattern, *snap);
        d->fields.emplace_back("Stripe pattern for new files", "RAID0\n" + pattern_text(*pattern, *snap, "  "));
        if (d->attr.xattrs & PFS_ATTR_STRIPED) {
            auto shards = (*fs)->shards(path);
            if (!shards) return fs_error(path, shards.error());
            add_shards(*d, *shards, *snap);
        }
    }
    return ctx.json ? render_json(d->doc) : render_described(d->fields);
}

Result<std::string> entry_set(Context& ctx) {
    const std::string& path = ctx.args[0];
    const Options& o = ctx.options;
    if (!o.has("chunk-size") && !o.has("num-targets") && !o.has("pool") && !o.has("inline-max") && !o.has("dir-stripes"))
        return usage_error("entry set changes --chunk-size, --num-targets, --pool, --inline-max or --dir-stripes "
                           "(any of them)\nusage: " +
                           usage_line(*find_command("entry", "set")));
    if (auto st = check_fs_path(path); !st) return st.error();
    // Check every argument before changing anything.
    std::optional<uint32_t> chunk_size, num_targets;
    if (o.has("chunk-size")) {
        auto size = parse_size(o.get<std::string>("chunk-size"), "chunk size");
        if (!size) return size.error();
        if (*size > UINT32_MAX || pfs_stripe_check(static_cast<uint32_t>(*size), 1) != 0)
            return usage_error("invalid chunk size '" + o.get<std::string>("chunk-size") +
                               "': a power of two from 64K to 1G");
        chunk_size = static_cast<uint32_t>(*size);
    }
    if (o.has("num-targets")) {
        auto n = parse_id(o.get<std::string>("num-targets"), "number of targets");
        if (!n) return n.error();
        if (*n > PFS_STRIPE_TARGETS_MAX)
            return usage_error("invalid number of targets " + std::to_string(*n) + ": at most " +
                               std::to_string(PFS_STRIPE_TARGETS_MAX));
        num_targets = *n;
    }
    std::optional<uint32_t> inline_max;
    if (o.has("inline-max")) {
        auto size = parse_size(o.get<std::string>("inline-max"), "inline-max");
        if (!size) return size.error();
        if (*size > PFS_INLINE_MAX)
            return usage_error("invalid inline-max '" + o.get<std::string>("inline-max") + "': at most 1M");
        inline_max = static_cast<uint32_t>(*size);
    }
    std::optional<uint32_t> dir_stripes;
    if (o.has("dir-stripes")) {
        auto n = parse_id(o.get<std::string>("dir-stripes"), "dir-stripes");
        if (!n) return n.error();
        if (*n > PFS_DIR_SHARDS_MAX)
            return usage_error("invalid dir-stripes " + std::to_string(*n) + ": at most " +
                               std::to_string(PFS_DIR_SHARDS_MAX));
        dir_stripes = *n;
    }
    auto snap = fetch(ctx.mgmt, kPools);
    if (!snap) return snap.error();
    std::optional<uint32_t> pool_id;
    if (o.has("pool")) {
        auto pool = resolve_pool(*snap, o.get<std::string>("pool"));
        if (!pool) return pool.error();
        pool_id = pool->pool_id;
    }

    auto fs = ctx.fs();
    if (!fs) return fs.error();
    auto pattern = (*fs)->get_pattern(path);
    if (!pattern) return fs_error(path, pattern.error());
    pattern->chunk_size = chunk_size.value_or(pattern->chunk_size);
    pattern->num_targets = num_targets.value_or(pattern->num_targets);
    pattern->pool_id = pool_id.value_or(pattern->pool_id);
    pattern->dir_stripes = dir_stripes.value_or(pattern->dir_stripes);
    // A smaller chunk size alone brings the inline max down with it (the
    // inline data fits the first chunk), as the user did not name one.
    pattern->inline_max = inline_max.value_or(std::min(pattern->inline_max, pattern->chunk_size));
    if (pattern->inline_max > pattern->chunk_size)
        return usage_error("inline-max " + std::to_string(pattern->inline_max) + " is above the chunk size " +
                           std::to_string(pattern->chunk_size));
    if (auto st = (*fs)->set_pattern(path, *pattern); !st) return fs_error(path, st.error());
    if (ctx.json) return render_json({{"path", path}, {"pattern", pattern_json(*pattern, *snap)}});
    return "stripe pattern for new files in " + path + ":\n" + pattern_text(*pattern, *snap, "  ");
}

}  // namespace pfs::ctl
