#include "views.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <iterator>

#include "exit_status.hpp"

namespace pfs::ctl {

const char* node_type_name(uint16_t type) {
    switch (type) {
        case PFS_NODE_MGMT: return "mgmt";
        case PFS_NODE_META: return "meta";
        case PFS_NODE_STORAGE: return "storage";
        case PFS_NODE_CLIENT: return "client";
    }
    return "unknown";
}

const char* reachability_name(uint8_t reachability) {
    switch (reachability) {
        case PFS_REACH_ONLINE: return "ONLINE";
        case PFS_REACH_PROBABLY_OFFLINE: return "PROBABLY-OFFLINE";
        case PFS_REACH_OFFLINE: return "OFFLINE";
    }
    return "UNKNOWN";
}

const char* consistency_name(uint8_t consistency) {
    switch (consistency) {
        case PFS_CONS_GOOD: return "GOOD";
        case PFS_CONS_NEEDS_RESYNC: return "NEEDS-RESYNC";
        case PFS_CONS_BAD: return "BAD";
    }
    return "UNKNOWN";
}

const char* cap_class_name(uint8_t cap_class) {
    switch (cap_class) {
        case PFS_CAP_NORMAL: return "normal";
        case PFS_CAP_LOW: return "low";
        case PFS_CAP_EMERGENCY: return "emergency";
    }
    return "unknown";
}

uint8_t cap_pool(const pfs_target_info& t) { return std::max(t.space_class, t.inode_class); }

Result<uint32_t> parse_id(std::string_view text, std::string_view what) {
    uint32_t value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value == 0)
        return usage_error("invalid " + std::string(what) + " '" + std::string(text) + "': expected a positive number");
    return value;
}

Result<uint8_t> parse_consistency(std::string_view text) {
    std::string word;
    for (char c : text) word += c == '_' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (word == "good") return uint8_t{PFS_CONS_GOOD};
    if (word == "needs-resync") return uint8_t{PFS_CONS_NEEDS_RESYNC};
    if (word == "bad") return uint8_t{PFS_CONS_BAD};
    return usage_error("invalid state '" + std::string(text) + "': expected good, needs-resync or bad");
}

Result<uint16_t> parse_node_type(std::string_view text) {
    if (text == "meta") return uint16_t{PFS_NODE_META};
    if (text == "storage") return uint16_t{PFS_NODE_STORAGE};
    if (text == "client") return uint16_t{PFS_NODE_CLIENT};
    return usage_error("invalid --type '" + std::string(text) + "': expected meta, storage or client");
}

std::string Snapshot::node_alias(uint32_t node_id) const {
    for (const auto& n : nodes)
        if (n.node_id == node_id) return text(n.alias);
    return {};
}

std::string Snapshot::pool_name(uint32_t pool_id) const {
    for (const auto& p : pools)
        if (p.pool_id == pool_id) return text(p.name);
    return {};
}

const pfs_target_info* Snapshot::target(uint32_t target_id) const {
    for (const auto& t : targets)
        if (t.target_id == target_id) return &t;
    return nullptr;
}

std::map<uint32_t, std::vector<uint32_t>> Snapshot::targets_by_pool() const {
    std::map<uint32_t, std::vector<uint32_t>> out;
    for (const auto& t : targets) out[t.pool_id].push_back(t.target_id);
    for (auto& [pool, ids] : out) std::sort(ids.begin(), ids.end());
    return out;
}

Result<Snapshot> fetch(MgmtClient& mgmt, unsigned what) {
    Snapshot snap;
    if (what & kTargets) {
        auto targets = mgmt.targets();
        if (!targets) return targets.error();
        snap.targets = std::move(*targets);
    }
    if (what & kNodes) {
        auto nodes = mgmt.nodes();
        if (!nodes) return nodes.error();
        snap.nodes = std::move(*nodes);
    }
    if (what & kPools) {
        auto pools = mgmt.pools();
        if (!pools) return pools.error();
        snap.pools = std::move(*pools);
    }
    return snap;
}

Result<pfs_pool_info> resolve_pool(const Snapshot& snap, const std::string& word) {
    bool numeric = !word.empty() && word.find_first_not_of("0123456789") == std::string::npos;
    for (const auto& p : snap.pools) {
        if (numeric ? std::to_string(p.pool_id) == word : text(p.name) == word) return p;
    }
    if (numeric) {
        auto id = parse_id(word, "pool id");
        if (!id) return id.error();
        return refused("unknown storage pool: no pool " + word);
    }
    return refused("unknown storage pool: no pool named '" + word + "'");
}

std::string labelled(uint32_t id, const std::string& name) {
    return name.empty() ? std::to_string(id) : std::to_string(id) + " (" + name + ")";
}

std::string host_port(const std::string& host, uint16_t port) {
    if (port == 0) return host;
    bool v6 = host.find(':') != std::string::npos;
    return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

std::vector<Column> space_columns() {
    return {{"TOTAL", Align::right}, {"FREE", Align::right}, {"FREE%", Align::right}};
}

std::vector<Column> inode_columns() {
    return {{"INODES", Align::right}, {"INODES-FREE", Align::right}, {"INODES-FREE%", Align::right}};
}

void add_space_cells(std::vector<std::string>& row, const pfs_capacity& cap) {
    bool known = cap.bytes_total != 0;
    row.push_back(known ? format_bytes(cap.bytes_total) : "-");
    row.push_back(known ? format_bytes(cap.bytes_free) : "-");
    row.push_back(format_percent(cap.bytes_free, cap.bytes_total));
}

void add_inode_cells(std::vector<std::string>& row, const pfs_capacity& cap) {
    bool known = cap.inodes_total != 0;
    row.push_back(known ? format_count(cap.inodes_total) : "-");
    row.push_back(known ? format_count(cap.inodes_free) : "-");
    row.push_back(inodes_free_percent(cap));
}

std::string inodes_free_percent(const pfs_capacity& cap) { return format_percent(cap.inodes_free, cap.inodes_total); }

void append(std::vector<Column>& columns, std::vector<Column> more) {
    columns.insert(columns.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
}

json capacity_json(const pfs_capacity& cap) {
    return {{"bytes_total", cap.bytes_total},
            {"bytes_free", cap.bytes_free},
            {"inodes_total", cap.inodes_total},
            {"inodes_free", cap.inodes_free}};
}

std::string render_json(const json& doc) {
    return doc.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace pfs::ctl
