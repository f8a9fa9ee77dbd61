#include "registry.hpp"

#include <arpa/inet.h>

#include <nlohmann/json.hpp>

#include "log.hpp"
#include "state_file.hpp"
#include "wire.hpp"

namespace pfs::mgmtd {

using nlohmann::json;

namespace {

// An IP address as text (what a node announces; never a name to resolve).
bool valid_address(const NodeAddr& a) {
    in6_addr buf{};
    return a.port != 0 && a.transport <= PFS_TRANSPORT_RDMA && a.addr.size() < PFS_ADDR_MAX &&
           (::inet_pton(AF_INET, a.addr.c_str(), &buf) == 1 || ::inet_pton(AF_INET6, a.addr.c_str(), &buf) == 1);
}

bool valid_name(const std::string& s, size_t max) {
    if (s.empty() || s.size() >= max) return false;
    for (unsigned char c : s)
        if (!(std::isalnum(c) || c == '.' || c == '_' || c == '-' || c == ':')) return false;
    return true;
}

const char* type_name(uint16_t type) {
    switch (type) {
        case PFS_NODE_META: return "meta";
        case PFS_NODE_STORAGE: return "storage";
        case PFS_NODE_CLIENT: return "client";
        case PFS_NODE_MGMT: return "mgmt";
    }
    return "?";
}

uint64_t age_ms(Clock::time_point then, Clock::time_point now) {
    if (now <= then) return 0;
    return static_cast<uint64_t>(std::chrono::duration_cast<milliseconds>(now - then).count());
}

}  // namespace

Registry::Registry(std::filesystem::path state_file, Settings settings)
    : state_file_(std::move(state_file)), settings_(settings) {}

Result<Registry> Registry::open(std::filesystem::path state_file, Settings settings, Clock::time_point now) {
    Registry reg(state_file, settings);
    auto loaded = state_file::load(state_file);
    switch (loaded.status) {
        case state_file::LoadStatus::missing: {
            reg.pools_[PFS_DEFAULT_POOL_ID] = Pool{PFS_DEFAULT_POOL_ID, "default"};
            auto st = reg.commit(0);
            if (!st) return st.error();
            log::info("created a new management map", {{"state_file", state_file.string()}});
            break;
        }
        case state_file::LoadStatus::ok: {
            auto st = reg.from_json(loaded.value, now);
            if (!st) return st.error();
            reg.saved_ = reg.to_json().dump();
            break;
        }
        default:
            return Error{-EINVAL, loaded.error};
    }
    reg.published_states_ = reg.derived_states(now);
    return reg;
}

json Registry::to_json() const {
    json j;
    j["map_version"] = version_;
    j["next_node_id"] = next_node_id_;
    j["next_target_id"] = next_target_id_;
    j["next_pool_id"] = next_pool_id_;
    j["nodes"] = json::array();
    for (const auto& [id, n] : nodes_) {
        if (n.type == PFS_NODE_CLIENT) continue;  // clients register anew after a restart
        json addrs = json::array();
        for (const auto& a : n.addrs)
            addrs.push_back({{"transport", a.transport == PFS_TRANSPORT_RDMA ? "rdma" : "tcp"},
                             {"addr", a.addr},
                             {"port", a.port}});
        j["nodes"].push_back({{"id", id},
                              {"type", n.type},
                              {"alias", n.alias},
                              {"host", n.host},
                              {"port", n.port},
                              {"addrs", addrs}});
    }
    j["targets"] = json::array();
    for (const auto& [id, t] : targets_)
        j["targets"].push_back({{"id", id},
                                {"node", t.node_id},
                                {"pool", t.pool_id},
                                {"path", t.path},
                                {"consistency", t.consistency}});
    j["pools"] = json::array();
    for (const auto& [id, p] : pools_) j["pools"].push_back({{"id", id}, {"name", p.name}});
    return j;
}

Status Registry::from_json(const json& j, Clock::time_point now) {
    auto bad = [&](const std::string& what) {
        return Error{-EINVAL, "state file " + state_file_.string() + " is invalid (" + what +
                                  "); refusing to start: restore it from backup or remove it to start empty"};
    };
    try {
        nodes_.clear();
        targets_.clear();
        pools_.clear();
        version_ = j.at("map_version").get<uint64_t>();
        next_node_id_ = j.at("next_node_id").get<uint32_t>();
        next_target_id_ = j.at("next_target_id").get<uint32_t>();
        next_pool_id_ = j.at("next_pool_id").get<uint32_t>();
        for (const auto& p : j.at("pools")) {
            Pool pool{p.at("id").get<uint32_t>(), p.at("name").get<std::string>()};
            if (pool.id == 0 || pool.id >= next_pool_id_ || !valid_name(pool.name, PFS_POOL_NAME_MAX))
                return bad("pool " + std::to_string(pool.id));
            pools_[pool.id] = pool;
        }
        if (!pools_.count(PFS_DEFAULT_POOL_ID)) return bad("no default pool");
        for (const auto& n : j.at("nodes")) {
            Node node;
            node.id = n.at("id").get<uint32_t>();
            node.type = n.at("type").get<uint16_t>();
            node.alias = n.at("alias").get<std::string>();
            node.host = n.at("host").get<std::string>();
            node.port = n.at("port").get<uint16_t>();
            // State files before protocol 4 list no more addresses.
            for (const auto& a : n.value("addrs", json::array())) {
                NodeAddr addr{a.at("transport").get<std::string>() == "rdma" ? uint8_t{PFS_TRANSPORT_RDMA}
                                                                             : uint8_t{PFS_TRANSPORT_TCP},
                              a.at("port").get<uint16_t>(), a.at("addr").get<std::string>()};
                if (!valid_address(addr) || node.addrs.size() >= PFS_NODE_ADDRS_MAX)
                    return bad("an address of node " + std::to_string(node.id));
                node.addrs.push_back(addr);
            }
            // A restart is not a failure of the servers: give them one
            // timeout to report in before they count as offline.
            node.last_seen = now;
            if (node.id == 0 || node.id >= next_node_id_ || node.type < PFS_NODE_META || node.type > PFS_NODE_STORAGE)
                return bad("node " + std::to_string(node.id));
            nodes_[node.id] = node;
        }
        for (const auto& t : j.at("targets")) {
            Target target;
            target.id = t.at("id").get<uint32_t>();
            target.node_id = t.at("node").get<uint32_t>();
            target.pool_id = t.at("pool").get<uint32_t>();
            target.path = t.at("path").get<std::string>();
            target.consistency = t.at("consistency").get<uint8_t>();
            if (target.id == 0 || target.id >= next_target_id_ || !nodes_.count(target.node_id) ||
                !pools_.count(target.pool_id) || target.consistency > PFS_CONS_BAD)
                return bad("target " + std::to_string(target.id));
            targets_[target.id] = target;
        }
    } catch (const json::exception& e) {
        return bad(e.what());
    }
    return ok_status();
}

Status Registry::commit(uint32_t changes) {
    ++version_;
    json j = to_json();
    auto st = state_file::save(state_file_, j);
    if (!st) {
        log::error("cannot save the management map; change rejected",
                   {{"state_file", state_file_.string()}, {"error", st.error().message}});
        if (!saved_.empty()) (void)from_json(json::parse(saved_), Clock::now());
        return st;
    }
    saved_ = j.dump();
    pending_changes_ |= changes;
    return st;
}

Result<pfs_register_node_reply> Registry::register_node(const pfs_register_node& req, Clock::time_point now) {
    std::string alias = req.alias;
    if (!valid_name(alias, PFS_ALIAS_MAX))
        return Error{-EINVAL, "invalid node alias '" + alias + "' (letters, digits, . _ - : only)"};
    if (req.node_type < PFS_NODE_META || req.node_type > PFS_NODE_CLIENT)
        return Error{-EINVAL, "cannot register a node of type " + std::to_string(req.node_type)};

    uint32_t id = req.node_id;
    for (const auto& [other_id, n] : nodes_) {
        if (n.alias != alias || n.type != req.node_type) continue;
        if (id == 0) id = other_id;  // the node lost its id file: keep its old id
        else if (id != other_id)
            return Error{-EEXIST, "alias '" + alias + "' is already used by " + type_name(n.type) + " node " +
                                      std::to_string(other_id)};
    }
    if (auto it = nodes_.find(id); id != 0 && it != nodes_.end() && it->second.type != req.node_type)
        return Error{-EEXIST, "node id " + std::to_string(id) + " belongs to a " + type_name(it->second.type) + " node"};
    bool is_new = id == 0 || !nodes_.count(id);
    if (id == 0) id = next_node_id_;
    next_node_id_ = std::max(next_node_id_, id + 1);

    std::vector<NodeAddr> addrs;
    for (uint8_t i = 0; i < req.naddrs && i < PFS_NODE_ADDRS_MAX; ++i) {
        NodeAddr a{req.addrs[i].transport, req.addrs[i].port, req.addrs[i].addr};
        if (!valid_address(a))
            return Error{-EINVAL, "invalid node address '" + a.addr + ":" + std::to_string(a.port) + "'"};
        addrs.push_back(a);
    }
    Node& node = nodes_[id];
    bool changed = is_new || node.alias != alias || node.host != req.host || node.port != req.port ||
                   node.addrs != addrs;
    node.id = id;
    node.type = req.node_type;
    node.alias = alias;
    node.host = req.host;
    node.port = req.port;
    node.addrs = std::move(addrs);
    node.last_seen = now;
    if (changed) {
        auto st = commit(PFS_CHANGE_NODES);
        if (!st) return st.error();
        if (is_new) log::info("node registered", {{"node_id", id}, {"type", type_name(req.node_type)}, {"alias", alias}});
    }
    return pfs_register_node_reply{id, version_};
}

Result<pfs_register_target_reply> Registry::register_target(const pfs_register_target& req) {
    auto node = nodes_.find(req.node_id);
    if (node == nodes_.end()) return Error{PFS_E_UNKNOWN_NODE, "node " + std::to_string(req.node_id) + " is not registered"};
    if (node->second.type != PFS_NODE_STORAGE)
        return Error{-EINVAL, "only storage nodes have storage targets"};
    uint32_t id = req.target_id;
    if (auto it = targets_.find(id); id != 0 && it != targets_.end() && it->second.node_id != req.node_id)
        return Error{-EEXIST, "target " + std::to_string(id) + " belongs to node " + std::to_string(it->second.node_id)};
    bool is_new = id == 0 || !targets_.count(id);
    if (id == 0) id = next_target_id_;
    next_target_id_ = std::max(next_target_id_, id + 1);

    Target& t = targets_[id];
    bool changed = is_new || t.path != req.path;
    t.id = id;
    t.node_id = req.node_id;
    t.path = req.path;
    if (changed) {
        auto st = commit(PFS_CHANGE_TARGETS);
        if (!st) return st.error();
        if (is_new) log::info("target registered", {{"target_id", id}, {"node_id", req.node_id}, {"path", req.path}});
    }
    return pfs_register_target_reply{id, targets_[id].pool_id};
}

Status Registry::heartbeat(uint32_t node_id, std::span<const pfs_target_capacity> caps, Clock::time_point now) {
    auto it = nodes_.find(node_id);
    if (it == nodes_.end()) return Error{PFS_E_UNKNOWN_NODE, "node " + std::to_string(node_id) + " is not registered"};
    for (const auto& c : caps) {
        if (c.target_id == 0) continue;
        auto t = targets_.find(c.target_id);
        if (t == targets_.end() || t->second.node_id != node_id)
            return Error{PFS_E_UNKNOWN_TARGET, "target " + std::to_string(c.target_id) + " is not registered to node " +
                                                   std::to_string(node_id)};
    }
    it->second.last_seen = now;
    for (const auto& c : caps) {
        if (c.target_id == 0) it->second.cap = c.cap;
        else targets_[c.target_id].cap = c.cap;
    }
    return ok_status();
}

Result<uint32_t> Registry::create_pool(uint32_t id, const std::string& name) {
    if (!valid_name(name, PFS_POOL_NAME_MAX)) return Error{-EINVAL, "invalid pool name '" + name + "'"};
    for (const auto& [pid, p] : pools_)
        if (p.name == name) return Error{-EEXIST, "pool '" + name + "' exists already (id " + std::to_string(pid) + ")"};
    if (id != 0 && pools_.count(id)) return Error{-EEXIST, "pool id " + std::to_string(id) + " is taken"};
    if (id == 0) id = next_pool_id_;
    next_pool_id_ = std::max(next_pool_id_, id + 1);
    pools_[id] = Pool{id, name};
    auto st = commit(PFS_CHANGE_POOLS);
    if (!st) return st.error();
    log::info("pool created", {{"pool_id", id}, {"name", name}});
    return id;
}

Status Registry::assign_pool(uint32_t target_id, uint32_t pool_id) {
    auto t = targets_.find(target_id);
    if (t == targets_.end()) return Error{PFS_E_UNKNOWN_TARGET, "no target " + std::to_string(target_id)};
    if (!pools_.count(pool_id)) return Error{PFS_E_UNKNOWN_POOL, "no pool " + std::to_string(pool_id)};
    if (t->second.pool_id == pool_id) return ok_status();
    t->second.pool_id = pool_id;
    return commit(PFS_CHANGE_POOLS | PFS_CHANGE_TARGETS);
}

Status Registry::set_consistency(uint32_t target_id, uint8_t consistency) {
    auto t = targets_.find(target_id);
    if (t == targets_.end()) return Error{PFS_E_UNKNOWN_TARGET, "no target " + std::to_string(target_id)};
    if (consistency > PFS_CONS_BAD) return Error{-EINVAL, "invalid consistency state"};
    if (t->second.consistency == consistency) return ok_status();
    t->second.consistency = consistency;
    log::info("target consistency set", {{"target_id", target_id}, {"state", consistency}});
    return commit(PFS_CHANGE_STATES);
}

uint8_t Registry::reachability(uint32_t node_id, Clock::time_point now) const {
    auto it = nodes_.find(node_id);
    if (it == nodes_.end()) return PFS_REACH_OFFLINE;
    auto age = now - it->second.last_seen;
    if (age >= settings_.offline_after) return PFS_REACH_OFFLINE;
    if (age >= settings_.probably_offline_after) return PFS_REACH_PROBABLY_OFFLINE;
    return PFS_REACH_ONLINE;
}

std::vector<pfs_node_info> Registry::node_infos(uint16_t type, Clock::time_point now) const {
    std::vector<pfs_node_info> out;
    for (const auto& [id, n] : nodes_) {
        if (type != 0 && n.type != type) continue;
        pfs_node_info info{};
        info.node_id = id;
        info.node_type = n.type;
        info.port = n.port;
        info.reachability = reachability(id, now);
        set_field(info.alias, n.alias);
        set_field(info.host, n.host);
        info.last_seen_ms = age_ms(n.last_seen, now);
        info.cap = n.cap;
        for (const auto& a : n.addrs) {
            pfs_node_addr& w = info.addrs[info.naddrs++];
            w.transport = a.transport;
            w.port = a.port;
            set_field(w.addr, a.addr);
        }
        out.push_back(info);
    }
    return out;
}

std::vector<pfs_target_info> Registry::target_infos(Clock::time_point now) const {
    std::vector<pfs_target_info> out;
    for (const auto& [id, t] : targets_) {
        pfs_target_info info{};
        info.target_id = id;
        info.node_id = t.node_id;
        info.pool_id = t.pool_id;
        info.reachability = reachability(t.node_id, now);
        info.consistency = t.consistency;
        info.space_class = capacity_class(t.cap.bytes_free, t.cap.bytes_total, settings_.space_low_pct,
                                          settings_.space_emergency_pct);
        info.inode_class = capacity_class(t.cap.inodes_free, t.cap.inodes_total, settings_.inodes_low_pct,
                                          settings_.inodes_emergency_pct);
        set_field(info.path, t.path);
        info.last_seen_ms = age_ms(nodes_.at(t.node_id).last_seen, now);
        info.cap = t.cap;
        out.push_back(info);
    }
    return out;
}

std::vector<pfs_pool_info> Registry::pool_infos() const {
    std::vector<pfs_pool_info> out;
    for (const auto& [id, p] : pools_) {
        pfs_pool_info info{};
        info.pool_id = id;
        set_field(info.name, p.name);
        out.push_back(info);
    }
    return out;
}

// Reachability of every node, then the capacity classes of every target, as
// a string compared between evaluations.
std::string Registry::derived_states(Clock::time_point now) const {
    std::string s;
    for (const auto& [id, n] : nodes_) s += std::to_string(id) + "r" + std::to_string(reachability(id, now)) + ",";
    s += "|";
    for (const auto& info : target_infos(now))
        s += std::to_string(info.target_id) + "c" + std::to_string(info.space_class) +
             std::to_string(info.inode_class) + ",";
    return s;
}

uint32_t Registry::evaluate(Clock::time_point now) {
    uint32_t changes = 0;
    // Clients are not persisted; one gone for two offline timeouts is forgotten.
    for (auto it = nodes_.begin(); it != nodes_.end();) {
        if (it->second.type == PFS_NODE_CLIENT && now - it->second.last_seen >= 2 * settings_.offline_after) {
            log::info("client timed out, removed", {{"node_id", it->first}, {"alias", it->second.alias}});
            it = nodes_.erase(it);
            changes |= PFS_CHANGE_NODES;
        } else {
            ++it;
        }
    }
    std::string states = derived_states(now);
    if (states != published_states_) {
        auto split_old = published_states_.find('|'), split_new = states.find('|');
        if (published_states_.compare(0, split_old, states, 0, split_new) != 0) changes |= PFS_CHANGE_STATES;
        if (published_states_.compare(split_old, std::string::npos, states, split_new) != 0)
            changes |= PFS_CHANGE_CAPACITY;
        published_states_ = std::move(states);
    }
    if (changes) ++version_;
    return changes | take_changes();
}

uint32_t Registry::take_changes() {
    uint32_t c = pending_changes_;
    pending_changes_ = 0;
    return c;
}

}  // namespace pfs::mgmtd
