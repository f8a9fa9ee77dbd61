// node list, target list, pool list.
#include "commands.hpp"
#include "views.hpp"

namespace pfs::ctl {

Result<std::string> node_list(Context& ctx) {
    uint16_t type = 0;
    if (ctx.options.has("type")) {
        auto parsed = parse_node_type(ctx.options.get<std::string>("type"));
        if (!parsed) return parsed.error();
        type = *parsed;
    }
    auto nodes = ctx.mgmt.nodes(type);
    if (!nodes) return nodes.error();

    if (ctx.json) {
        json list = json::array();
        for (const auto& n : *nodes)
            list.push_back({{"node_id", n.node_id},
                            {"type", node_type_name(n.node_type)},
                            {"alias", text(n.alias)},
                            {"host", text(n.host)},
                            {"port", n.port},
                            {"reachability", reachability_name(n.reachability)},
                            {"last_seen_ms", n.last_seen_ms},
                            {"capacity", capacity_json(n.cap)}});
        return render_json({{"nodes", std::move(list)}});
    }
    Table table({{"ID", Align::right},
                 {"TYPE"},
                 {"ALIAS"},
                 {"HOST:PORT"},
                 {"REACHABILITY"},
                 {"LAST-SEEN", Align::right}});
    for (const auto& n : *nodes)
        table.add_row({std::to_string(n.node_id), node_type_name(n.node_type), text(n.alias),
                       host_port(text(n.host), n.port), reachability_name(n.reachability),
                       format_age_ms(n.last_seen_ms)});
    return table.render();
}

namespace {

json target_json(const pfs_target_info& t, const Snapshot& snap) {
    return {{"target_id", t.target_id},
            {"node_id", t.node_id},
            {"node_alias", snap.node_alias(t.node_id)},
            {"pool_id", t.pool_id},
            {"pool_name", snap.pool_name(t.pool_id)},
            {"path", text(t.path)},
            {"reachability", reachability_name(t.reachability)},
            {"consistency", consistency_name(t.consistency)},
            {"space_class", cap_class_name(t.space_class)},
            {"inode_class", cap_class_name(t.inode_class)},
            {"capacity", capacity_json(t.cap)},
            {"last_seen_ms", t.last_seen_ms}};
}

}  // namespace

Result<std::string> target_list(Context& ctx) {
    auto snap = fetch(ctx.mgmt, kTargets | kNodes | kPools);
    if (!snap) return snap.error();

    if (ctx.json) {
        json list = json::array();
        for (const auto& t : snap->targets) list.push_back(target_json(t, *snap));
        return render_json({{"targets", std::move(list)}});
    }
    const bool state = ctx.options.get<bool>("state"), space = ctx.options.get<bool>("space");
    std::vector<Column> columns{{"TARGET", Align::right}, {"NODE"}, {"POOL"}};
    if (state) append(columns, {{"REACHABILITY"}, {"CONSISTENCY"}});
    if (space) {
        append(columns, space_columns());
        append(columns, {{"INODES-FREE%", Align::right}, {"CAP-POOL"}});
    }
    columns.push_back({"PATH"});  // last: the widest and least regular column
    Table table(std::move(columns));
    for (const auto& t : snap->targets) {
        std::vector<std::string> row{std::to_string(t.target_id), labelled(t.node_id, snap->node_alias(t.node_id)),
                                     labelled(t.pool_id, snap->pool_name(t.pool_id))};
        if (state) {
            row.push_back(reachability_name(t.reachability));
            row.push_back(consistency_name(t.consistency));
        }
        if (space) {
            add_space_cells(row, t.cap);
            row.push_back(inodes_free_percent(t.cap));
            row.push_back(cap_class_name(cap_pool(t)));
        }
        row.push_back(text(t.path));
        table.add_row(std::move(row));
    }
    return table.render();
}

Result<std::string> pool_list(Context& ctx) {
    auto snap = fetch(ctx.mgmt, kPools | kTargets);
    if (!snap) return snap.error();
    auto members = snap->targets_by_pool();

    if (ctx.json) {
        json list = json::array();
        for (const auto& p : snap->pools)
            list.push_back({{"pool_id", p.pool_id}, {"name", text(p.name)}, {"targets", members[p.pool_id]}});
        return render_json({{"pools", std::move(list)}});
    }
    Table table({{"ID", Align::right}, {"NAME"}, {"TARGETS"}});
    for (const auto& p : snap->pools) {
        std::string ids;
        for (uint32_t id : members[p.pool_id]) ids += (ids.empty() ? "" : ",") + std::to_string(id);
        table.add_row({std::to_string(p.pool_id), text(p.name), ids.empty() ? "-" : ids});
    }
    return table.render();
}

}  // namespace pfs::ctl
