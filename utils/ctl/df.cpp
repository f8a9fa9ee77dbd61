// df: free space and inodes, like beegfs-df: metadata nodes, storage
// targets, then the totals of each.
#include "commands.hpp"
#include "views.hpp"

namespace pfs::ctl {
namespace {

void add(pfs_capacity& sum, const pfs_capacity& cap) {
    sum.bytes_total += cap.bytes_total;
    sum.bytes_free += cap.bytes_free;
    sum.inodes_total += cap.inodes_total;
    sum.inodes_free += cap.inodes_free;
}

std::vector<pfs_node_info> meta_nodes(const Snapshot& snap) {
    std::vector<pfs_node_info> out;
    for (const auto& n : snap.nodes)
        if (n.node_type == PFS_NODE_META) out.push_back(n);
    return out;
}

std::string render_text(const std::vector<pfs_node_info>& meta, const Snapshot& snap, const pfs_capacity& meta_sum,
                        const pfs_capacity& storage_sum) {
    std::vector<Column> meta_cols{{"NODE", Align::right}, {"ALIAS"}, {"REACHABILITY"}};
    append(meta_cols, space_columns());
    append(meta_cols, inode_columns());
    Table meta_table(std::move(meta_cols));
    for (const auto& n : meta) {
        std::vector<std::string> row{std::to_string(n.node_id), text(n.alias), reachability_name(n.reachability)};
        add_space_cells(row, n.cap);
        add_inode_cells(row, n.cap);
        meta_table.add_row(std::move(row));
    }

    std::vector<Column> storage_cols{{"TARGET", Align::right}, {"NODE"}, {"POOL"}, {"CAP-POOL"}};
    append(storage_cols, space_columns());
    append(storage_cols, inode_columns());
    Table storage_table(std::move(storage_cols));
    for (const auto& t : snap.targets) {
        std::vector<std::string> row{std::to_string(t.target_id), labelled(t.node_id, snap.node_alias(t.node_id)),
                                     labelled(t.pool_id, snap.pool_name(t.pool_id)), cap_class_name(cap_pool(t))};
        add_space_cells(row, t.cap);
        add_inode_cells(row, t.cap);
        storage_table.add_row(std::move(row));
    }

    std::vector<Column> total_cols{{""}};
    append(total_cols, space_columns());
    append(total_cols, inode_columns());
    Table totals(std::move(total_cols));
    for (auto [name, sum] : {std::pair{"metadata", &meta_sum}, std::pair{"storage", &storage_sum}}) {
        std::vector<std::string> row{name};
        add_space_cells(row, *sum);
        add_inode_cells(row, *sum);
        totals.add_row(std::move(row));
    }
    return "METADATA SERVERS:\n" + meta_table.render() + "\nSTORAGE TARGETS:\n" + storage_table.render() +
           "\nTOTAL:\n" + totals.render();
}

}  // namespace

Result<std::string> df(Context& ctx) {
    auto snap = fetch(ctx.mgmt, kNodes | kTargets | kPools);
    if (!snap) return snap.error();
    auto meta = meta_nodes(*snap);
    pfs_capacity meta_sum{}, storage_sum{};
    for (const auto& n : meta) add(meta_sum, n.cap);
    for (const auto& t : snap->targets) add(storage_sum, t.cap);

    if (!ctx.json) return render_text(meta, *snap, meta_sum, storage_sum);
    json meta_list = json::array(), storage_list = json::array();
    for (const auto& n : meta)
        meta_list.push_back({{"node_id", n.node_id},
                             {"alias", text(n.alias)},
                             {"reachability", reachability_name(n.reachability)},
                             {"capacity", capacity_json(n.cap)}});
    for (const auto& t : snap->targets)
        storage_list.push_back({{"target_id", t.target_id},
                                {"node_id", t.node_id},
                                {"node_alias", snap->node_alias(t.node_id)},
                                {"pool_id", t.pool_id},
                                {"pool_name", snap->pool_name(t.pool_id)},
                                {"reachability", reachability_name(t.reachability)},
                                {"cap_pool", cap_class_name(cap_pool(t))},
                                {"capacity", capacity_json(t.cap)}});
    return render_json({{"meta", std::move(meta_list)},
                        {"storage", std::move(storage_list)},
                        {"total", {{"meta", capacity_json(meta_sum)}, {"storage", capacity_json(storage_sum)}}}});
}

}  // namespace pfs::ctl
