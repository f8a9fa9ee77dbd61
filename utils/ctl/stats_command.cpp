// stats server: requests and bytes per second of every server in the map,
// from two GET_STATS samples an interval apart.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <thread>

#include "commands.hpp"
#include "exit_status.hpp"
#include "stats_probe.hpp"
#include "views.hpp"

namespace pfs::ctl {
namespace {

struct Rates {
    double ops = 0, errors = 0, bytes_in = 0, bytes_out = 0;
};

// A server as the table names it, and what it did over the interval.
struct ServerRates {
    uint32_t node_id = 0;
    uint16_t node_type = 0;
    std::string alias{};
    std::string error{};  // why there are no rates ("" when there are)
    double seconds = 0;
    uint64_t requests_total = 0;
    Rates total{};
    std::map<uint16_t, Rates> by_type{};  // types with requests in the interval
    std::map<uint16_t, uint64_t> type_totals{};  // requests by type since the server started
    pfs_transport_stats transport{};      // RDMA totals at the end of the interval
    double rdma_bytes = 0;                // per second: RDMA READ and WRITE it issued
};

Result<double> parse_interval(const Context& ctx) {
    if (!ctx.options.has("interval")) return 1.0;
    const std::string text = ctx.options.get<std::string>("interval");
    char* end = nullptr;
    const double s = std::strtod(text.c_str(), &end);
    if (text.empty() || *end != '\0' || !std::isfinite(s) || s < 0.1 || s > 3600)
        return usage_error("invalid --interval '" + text + "': expected seconds, 0.1 to 3600");
    return s;
}

// The differences of the counters over the difference of the servers' own
// clocks, so that network delays do not skew the rates.
void fill_rates(ServerRates& out, const StatsSample& a, const StatsSample& b) {
    if (b.head.uptime_ms <= a.head.uptime_ms) {
        out.error = "restarted during the interval";
        return;
    }
    out.seconds = static_cast<double>(b.head.uptime_ms - a.head.uptime_ms) / 1000.0;
    out.transport = b.transport;
    const uint64_t rdma_before = a.transport.read_bytes + a.transport.write_bytes;
    const uint64_t rdma_after = b.transport.read_bytes + b.transport.write_bytes;
    if (rdma_after >= rdma_before) out.rdma_bytes = static_cast<double>(rdma_after - rdma_before) / out.seconds;
    std::map<uint16_t, const pfs_msg_stats*> before;
    for (const auto& t : a.types) before[t.type] = &t;
    for (const auto& t : b.types) {
        out.requests_total += t.requests;
        out.type_totals[t.type] = t.requests;
        pfs_msg_stats zero{};
        const pfs_msg_stats& old = before.count(t.type) ? *before[t.type] : zero;
        if (t.requests < old.requests || t.bytes_in < old.bytes_in || t.bytes_out < old.bytes_out ||
            t.errors < old.errors) {
            out.error = "restarted during the interval";
            return;
        }
        if (t.requests == old.requests) continue;
        Rates r{static_cast<double>(t.requests - old.requests) / out.seconds,
                static_cast<double>(t.errors - old.errors) / out.seconds,
                static_cast<double>(t.bytes_in - old.bytes_in) / out.seconds,
                static_cast<double>(t.bytes_out - old.bytes_out) / out.seconds};
        out.by_type[t.type] = r;
        out.total.ops += r.ops;
        out.total.errors += r.errors;
        out.total.bytes_in += r.bytes_in;
        out.total.bytes_out += r.bytes_out;
    }
}

std::string fixed(double v, int decimals) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    return buf;
}

json rates_json(const Rates& r) {
    return {{"ops_per_s", r.ops},
            {"errors_per_s", r.errors},
            {"bytes_in_per_s", r.bytes_in},
            {"bytes_out_per_s", r.bytes_out}};
}

std::string message_name(uint16_t type) { return type == 0 ? "(not served)" : pfs_msg_name(type); }

std::string render(const std::vector<ServerRates>& servers, double interval, bool by_type, bool as_json) {
    if (as_json) {
        json list = json::array();
        for (const auto& s : servers) {
            json n = {{"node_id", s.node_id}, {"type", node_type_name(s.node_type)}, {"alias", s.alias}};
            n["reachable"] = s.error.empty();
            if (!s.error.empty()) {
                n["error"] = s.error;
            } else {
                n["seconds"] = s.seconds;
                n["requests_total"] = s.requests_total;
                n.update(rates_json(s.total));
                const pfs_transport_stats& t = s.transport;
                n["rdma_bytes_per_s"] = s.rdma_bytes;
                n["rdma"] = {{"connections", t.rdma_connections}, {"sends", t.sends},
                             {"send_bytes", t.send_bytes},       {"recvs", t.recvs},
                             {"recv_bytes", t.recv_bytes},       {"reads", t.reads},
                             {"read_bytes", t.read_bytes},       {"writes", t.writes},
                             {"write_bytes", t.write_bytes},     {"bounce_bytes", t.bounce_bytes}};
                if (by_type) {
                    json types = json::array();
                    for (const auto& [type, r] : s.by_type) {
                        json t = {{"message", message_name(type)}, {"type", type}};
                        t.update(rates_json(r));
                        types.push_back(std::move(t));
                    }
                    n["by_type"] = std::move(types);
                    json totals = json::object();
                    for (const auto& [type, count] : s.type_totals) totals[message_name(type)] = count;
                    n["requests_by_type"] = std::move(totals);
                }
            }
            list.push_back(std::move(n));
        }
        return render_json({{"interval_s", interval}, {"nodes", std::move(list)}});
    }
    std::vector<Column> columns{{"ID", Align::right}, {"TYPE"}, {"ALIAS"}};
    if (by_type) columns.push_back({"MESSAGE"});
    append(columns, {{"OPS/S", Align::right}, {"READ-MB/S", Align::right}, {"WRITE-MB/S", Align::right},
                     {"RDMA-MB/S", Align::right}});
    Table table(std::move(columns));
    std::string notes;
    auto add = [&](const ServerRates& s, const std::string& message, const Rates& r) {
        std::vector<std::string> row{std::to_string(s.node_id), node_type_name(s.node_type), s.alias};
        if (by_type) row.push_back(message);
        // Read: what the server sent (chunk data read), write: what it received.
        for (auto v : {fixed(r.ops, 1), fixed(r.bytes_out / 1e6, 2), fixed(r.bytes_in / 1e6, 2)}) row.push_back(v);
        // Per server only: RDMA moves bytes for the connection, not per message type.
        row.push_back(message == "all" ? fixed(s.rdma_bytes / 1e6, 2) : "");
        table.add_row(std::move(row));
    };
    for (const auto& s : servers) {
        if (!s.error.empty()) {
            std::vector<std::string> row{std::to_string(s.node_id), node_type_name(s.node_type), s.alias};
            if (by_type) row.push_back("-");
            for (int i = 0; i < 4; ++i) row.push_back("-");
            table.add_row(std::move(row));
            notes += labelled(s.node_id, s.alias) + ": " + s.error + "\n";
            continue;
        }
        add(s, "all", s.total);
        if (by_type)
            for (const auto& [type, r] : s.by_type) add(s, message_name(type), r);
    }
    return table.render() + notes;
}

}  // namespace

Result<std::string> stats_server(Context& ctx) {
    auto interval = parse_interval(ctx);
    if (!interval) return interval.error();
    auto nodes = ctx.mgmt.nodes(0);
    if (!nodes) return nodes.error();

    // pfs-mgmtd first (it is not in its own map), then every serving node.
    std::vector<ServerRates> servers;
    std::vector<ServerAddress> addresses;
    auto mgmtd = StatsProbe::mgmtd_address(ctx.options);
    if (!mgmtd) return mgmtd.error();
    servers.push_back(ServerRates{0, PFS_NODE_MGMT, "mgmtd"});
    addresses.push_back(*mgmtd);
    for (const auto& n : *nodes) {
        if (n.node_type == PFS_NODE_CLIENT || n.port == 0) continue;
        servers.push_back(ServerRates{n.node_id, n.node_type, text(n.alias)});
        addresses.push_back(ServerAddress{text(n.host), n.port});
    }

    auto probe = StatsProbe::open(ctx.options, std::move(addresses));
    if (!probe) return probe.error();
    auto first = (*probe)->sample();
    // The measuring interval itself, not a wait for some condition.
    std::this_thread::sleep_for(std::chrono::duration<double>(*interval));
    auto second = (*probe)->sample();
    for (size_t i = 0; i < servers.size(); ++i) {
        if (!first[i]) servers[i].error = "unreachable: " + first[i].error().message;
        else if (!second[i]) servers[i].error = "unreachable: " + second[i].error().message;
        else fill_rates(servers[i], *first[i], *second[i]);
    }
    return render(servers, *interval, ctx.options.get<bool>("by-type"), ctx.json);
}

}  // namespace pfs::ctl
