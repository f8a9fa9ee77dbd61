#include "node_paths.hpp"

#include <algorithm>

#include "log.hpp"

namespace pfs::client {

using Clock = std::chrono::steady_clock;

std::optional<size_t> choose_path(std::span<const PathView> paths) {
    std::optional<size_t> best, tcp;
    for (size_t i = 0; i < paths.size(); ++i) {
        const PathView& p = paths[i];
        if (!p.rdma) {
            tcp = i;
            continue;
        }
        if (!p.usable) continue;
        if (!best) {
            best = i;
            continue;
        }
        const PathView& b = paths[*best];
        if (p.near != b.near) {
            if (p.near) best = i;
        } else if (p.bulk_in_flight != b.bulk_in_flight) {
            if (p.bulk_in_flight < b.bulk_in_flight) best = i;
        } else if (p.requests_in_flight < b.requests_in_flight) {
            best = i;
        }
    }
    return best ? best : tcp;
}

std::chrono::milliseconds next_backoff(std::chrono::milliseconds now) {
    return std::clamp(now * 2, kRailBackoffMin, kRailBackoffMax);
}

std::vector<Endpoint> NodePaths::endpoints_of(const pfs_node_info& node, const ClientConfig& config) {
    std::vector<Endpoint> out;
    if (config.transport != TransportChoice::tcp) {
        std::vector<std::pair<std::string, uint16_t>> rdma;
        for (uint8_t i = 0; i < node.naddrs && i < PFS_NODE_ADDRS_MAX; ++i)
            if (node.addrs[i].transport == PFS_TRANSPORT_RDMA) rdma.emplace_back(node.addrs[i].addr, node.addrs[i].port);
        const rdma::Rails* rails = config.rails.get();
        if (rails && !rails->empty()) {
            // A path per rail, to the node's first address on its subnet.
            for (size_t r = 0; r < rails->size(); ++r) {
                auto on = std::find_if(rdma.begin(), rdma.end(), [&](const auto& a) { return rails->reaches(r, a.first); });
                if (on != rdma.end()) out.push_back(Endpoint{on->first, on->second, true, (*rails)[r].address});
            }
        }
        // No rails, or none reaches it: a path per address, where routing says.
        if (out.empty())
            for (const auto& [addr, port] : rdma) out.push_back(Endpoint{addr, port, true});
    }
    if (config.transport != TransportChoice::rdma) out.push_back(Endpoint{node.host, node.port});
    return out;
}

NodePaths::NodePaths(asio::any_io_executor ex, const pfs_node_info& node, const auth::Secret& secret,
                     const ClientConfig& config, size_t connections)
    : name_(std::string(node.alias) + " (node " + std::to_string(node.node_id) + ")"),
      rails_(config.rails),
      probe_time_(config.connect_timeout + std::chrono::milliseconds(500)),
      endpoints_(endpoints_of(node, config)) {
    for (const auto& ep : endpoints_) {
        Path p;
        p.endpoint = ep;
        if (ep.rdma && rails_ && !ep.source.empty())
            for (size_t r = 0; r < rails_->size(); ++r)
                if ((*rails_)[r].address == ep.source) p.rail = static_cast<int>(r);
        p.pool = std::make_unique<ClientPool>(ex, ep, secret, connections, config);
        paths_.push_back(std::move(p));
    }
}

NodePaths::~NodePaths() { close(); }

PathView NodePaths::view(const Path& p, Clock::time_point now) const {
    PathView v;
    v.rdma = p.rdma();
    v.usable = !p.rdma() || now >= p.retry_at;
    if (p.rail >= 0) {
        const auto r = static_cast<size_t>(p.rail);
        const rdma::RailCounters& c = *(*rails_)[r].counters;
        v.usable = v.usable && rails_->usable(r);
        v.near = rails_->near(r);
        v.bulk_in_flight = c.bulk_in_flight.load();
        v.requests_in_flight = c.requests_in_flight.load();
    } else {
        v.bulk_in_flight = p.bulk_in_flight;
        v.requests_in_flight = p.requests_in_flight;
    }
    return v;
}

void NodePaths::drop_dead_rails() {
    for (auto& p : paths_) {
        if (p.rail < 0 || rails_->usable(static_cast<size_t>(p.rail)) || !p.pool->connected()) continue;
        // Its interface went down: what is in flight there fails now and is
        // sent again by another way, instead of waiting for its timeout
        // (and the queue pairs do not outlive the link: soft-RoCE trips
        // over old ones when it comes back).
        failed(p, Error{-ENETDOWN, "interface " + (*rails_)[static_cast<size_t>(p.rail)].name + " is down"});
        p.pool->close();
    }
}

NodePaths::Path* NodePaths::choose() {
    if (rails_ && !rails_->empty()) drop_dead_rails();
    const auto now = Clock::now();
    std::vector<PathView> views;
    views.reserve(paths_.size());
    bool any_rdma = false;
    for (const auto& p : paths_) {
        views.push_back(view(p, now));
        any_rdma = any_rdma || p.rdma();
    }
    auto chosen = choose_path(views);
    Path* p = chosen ? &paths_[*chosen] : nullptr;
    // Said once each way, not per request (nor per probe of a rail).
    if (any_rdma && p && !p->rdma() && !over_tcp_) {
        over_tcp_ = true;
        log::warn("every RDMA rail is down: over TCP meanwhile", {{"server", name_}});
    }
    // Its back-off is over: this request probes it (the connections try at
    // once, not after their own back-off) while the others keep away
    // until the probe connects or fails.
    if (p && p->rdma() && p->backoff.count() > 0 && !p->probing && p->retry_at != Clock::time_point{}) {
        p->probing = true;
        p->retry_at = now + probe_time_;
        p->pool->retry_now();
    }
    return p;
}

bool NodePaths::other_way(const Path& p) {
    const auto now = Clock::now();
    for (const auto& q : paths_) {
        if (&q == &p) continue;
        if (!q.rdma() || view(q, now).usable) return true;
    }
    return false;
}

void NodePaths::connected(Path& p, bool new_connection) {
    p.probing = false;
    p.retry_at = {};
    if (!new_connection) return;
    if (over_tcp_) {
        over_tcp_ = false;
        log::info("back on RDMA", {{"server", name_}, {"path", p.endpoint.str()}});
    }
    answered(p);
}

void NodePaths::answered(Path& p) {
    p.backoff = std::chrono::milliseconds(0);
    if (p.rail >= 0) (*rails_)[static_cast<size_t>(p.rail)].counters->down = false;
}

void NodePaths::failed(Path& p, const Error& why) {
    if (!p.rdma()) return;  // TCP connections back off by themselves
    const auto now = Clock::now();
    // The requests in flight when a path fails all fail together: one
    // failure event doubles the back-off once; a failed probe is an event
    // of its own.
    if (now < p.retry_at && !p.probing) return;
    p.probing = false;
    if (p.rail >= 0) {
        rdma::RailCounters& c = *(*rails_)[static_cast<size_t>(p.rail)].counters;
        ++c.errors;
        c.down = true;
    }
    // The only way to the server: its connections' own back-off (and the
    // reconnect of the next call) serve better than leaving it alone.
    if (!other_way(p)) return;
    p.backoff = next_backoff(p.backoff);
    p.retry_at = now + p.backoff;
    log::info("RDMA path backs off",
              {{"server", name_}, {"path", p.endpoint.str()}, {"ms", std::to_string(p.backoff.count())},
               {"reason", why.message}});
}

NodePaths::Use::Use(NodePaths& paths, Path& p, uint64_t bulk_bytes)
    : path_(p),
      rail_(p.rail >= 0 ? (*paths.rails_)[static_cast<size_t>(p.rail)].counters : nullptr),
      bytes_(bulk_bytes) {
    if (rail_) {
        rail_->bulk_in_flight += bulk_bytes;
        ++rail_->requests_in_flight;
    } else {
        path_.bulk_in_flight += bulk_bytes;
        ++path_.requests_in_flight;
    }
}

void NodePaths::Use::sent() {
    if (!rail_) return;
    ++rail_->requests;
    rail_->bytes += bytes_;
}

NodePaths::Use::~Use() {
    if (rail_) {
        rail_->bulk_in_flight -= bytes_;
        --rail_->requests_in_flight;
    } else {
        path_.bulk_in_flight -= bytes_;
        --path_.requests_in_flight;
    }
}

void NodePaths::on_notify(const std::function<void(const Frame&)>& fn) {
    for (auto& p : paths_) p.pool->on_notify(fn);
}

void NodePaths::on_disconnected(const std::function<void()>& fn) {
    for (auto& p : paths_) p.pool->on_disconnected(fn);
}

void NodePaths::close() {
    for (auto& p : paths_) p.pool->close();
}

}  // namespace pfs::client
