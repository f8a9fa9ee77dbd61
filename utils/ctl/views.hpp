// What the commands share: names of the protocol's enumerations, argument
// parsing, a snapshot of the management map with id -> name lookups, and the
// capacity columns and JSON objects used by several listings.
#pragma once

#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "mgmt_client.hpp"
#include "table.hpp"

namespace pfs::ctl {

using json = nlohmann::ordered_json;

// A fixed char[] field from the wire as a string (stops at the first NUL).
template <size_t N>
std::string text(const char (&field)[N]) {
    return std::string(field, strnlen(field, N));
}

const char* node_type_name(uint16_t type);            // "meta", "storage", "client", "mgmt"
const char* reachability_name(uint8_t reachability);  // "ONLINE", "PROBABLY-OFFLINE", "OFFLINE"
const char* consistency_name(uint8_t consistency);    // "GOOD", "NEEDS-RESYNC", "BAD"
const char* cap_class_name(uint8_t cap_class);        // "normal", "low", "emergency"
// The capacity pool of a target: the worse of its space and inode classes.
uint8_t cap_pool(const pfs_target_info& t);

// A positive decimal id; anything else is a usage error naming `what`.
Result<uint32_t> parse_id(std::string_view text, std::string_view what);
// "good", "needs-resync" or "bad", in any case, '_' for '-' too.
Result<uint8_t> parse_consistency(std::string_view text);
// "meta", "storage" or "client".
Result<uint16_t> parse_node_type(std::string_view text);

// What a command needs to know of the map, fetched once.
struct Snapshot {
    std::vector<pfs_node_info> nodes;
    std::vector<pfs_target_info> targets;
    std::vector<pfs_pool_info> pools;

    std::string node_alias(uint32_t node_id) const;  // "" when unknown
    std::string pool_name(uint32_t pool_id) const;   // "" when unknown
    const pfs_target_info* target(uint32_t target_id) const;
    // Target ids by pool id, ascending.
    std::map<uint32_t, std::vector<uint32_t>> targets_by_pool() const;
};

enum Fetch : unsigned { kNodes = 1, kTargets = 2, kPools = 4 };
Result<Snapshot> fetch(MgmtClient& mgmt, unsigned what);
// POOL as an id or a name, checked against the snapshot's pools.
Result<pfs_pool_info> resolve_pool(const Snapshot& snap, const std::string& word);

// "2 (s1)", or "2" when the name is unknown.
std::string labelled(uint32_t id, const std::string& name);
// "host:port", "[v6]:port", or the host alone for port 0.
std::string host_port(const std::string& host, uint16_t port);

// TOTAL FREE FREE%, and INODES INODES-FREE INODES-FREE%: columns and cells,
// "-" where nothing has been reported yet.
std::vector<Column> space_columns();
std::vector<Column> inode_columns();
void add_space_cells(std::vector<std::string>& row, const pfs_capacity& cap);
void add_inode_cells(std::vector<std::string>& row, const pfs_capacity& cap);
// FREE% of inodes alone, for listings short of room.
std::string inodes_free_percent(const pfs_capacity& cap);
// Appends `more` to `columns`.
void append(std::vector<Column>& columns, std::vector<Column> more);

json capacity_json(const pfs_capacity& cap);
// One JSON document: indented, ending in a newline, bad UTF-8 replaced.
std::string render_json(const json& doc);

}  // namespace pfs::ctl
