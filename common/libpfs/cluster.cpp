#include "cluster.hpp"

#include <algorithm>

#include "log.hpp"

namespace pfs::client {
namespace {

ClientConfig with_identities(ClientConfig config, std::shared_ptr<const ClientIdentities> identities) {
    config.identities = std::move(identities);
    return config;
}

}  // namespace

Cluster::Cluster(asio::any_io_executor ex, Endpoint mgmtd, auth::Secret secret, ClientConfig config,
                 size_t connections_per_server)
    : ex_(ex),
      secret_(secret),
      config_(with_identities(config, identities_)),
      connections_per_server_(connections_per_server),
      mgmtd_(RpcClient::create(ex, std::move(mgmtd), std::move(secret), config_)),
      refresh_ended_(ex, asio::steady_timer::time_point::max()) {
    mgmtd_->on_notify([this](const Frame& frame) {
        if (frame.header.type == PFS_MSG_MAP_CHANGED) schedule_refresh();
    });
    // A new connection to mgmtd carries no subscription yet, and the map
    // may have changed while we were away.
    mgmtd_->on_connected([this] {
        if (refreshes_ == 0) return;  // start() subscribes the first time
        asio::co_spawn(ex_, [this]() -> awaitable<void> {
            (void)co_await subscribe();
            schedule_refresh();
        }, asio::detached);
    });
}

Cluster::~Cluster() { close(); }

void Cluster::close() {
    *alive_ = false;
    auto hooks = std::move(on_close_);
    on_close_.clear();
    for (auto& fn : hooks) fn();
    mgmtd_->close();
    for (auto& [id, paths] : paths_) paths->close();
}

awaitable<Status> Cluster::start() {
    auto st = co_await subscribe();
    if (!st) co_return st;
    co_return co_await refresh();
}

awaitable<Status> Cluster::subscribe() {
    auto body = co_await call_ok(*mgmtd_, PFS_MSG_SUBSCRIBE, Bytes{});
    if (!body) co_return body.error();
    co_return ok_status();
}

void Cluster::schedule_refresh() {
    stale_ = true;
    if (refreshing_) return;
    asio::co_spawn(ex_, [this]() -> awaitable<void> {
        while (stale_) {
            auto st = co_await refresh();
            if (!st) log::warn("cannot refresh the cluster map", {{"error", st.error().message}});
            if (!st) break;
        }
    }, asio::detached);
}

awaitable<Status> Cluster::refresh_now() {
    const uint64_t after = refreshes_begun_;
    schedule_refresh();
    for (;;) {
        boost::system::error_code ec;
        co_await refresh_ended_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        // One that began before the call may have fetched the old map; a
        // failed one stopped the refreshing (schedule_refresh).
        if (last_ended_ > after || !last_status_) co_return last_status_;
    }
}

awaitable<Status> Cluster::refresh() {
    refreshing_ = true;
    stale_ = false;
    // However it ends, refresh_now's callers hear of it.
    struct Done {
        Cluster& c;
        uint64_t begun;
        ~Done() {
            c.refreshing_ = false;
            c.last_ended_ = std::max(c.last_ended_, begun);
            c.refresh_ended_.cancel();
        }
    } done{*this, ++refreshes_begun_};
    last_status_ = Error{-EIO, "the map refresh did not finish"};
    last_status_ = co_await fetch_map();
    co_return last_status_;
}

awaitable<Result<std::vector<pfs_target_info>>> Cluster::fetch_targets() {
    auto body = co_await call_ok(*mgmtd_, PFS_MSG_GET_TARGETS, Bytes{});
    if (!body) co_return body.error();
    std::vector<pfs_target_info> targets;
    auto st = decode_payload(*body, [&](pfs_xdr* x) {
        xfer_list(x, targets, pfs_x_target_info, PFS_TARGET_INFO_MIN_SIZE);
    });
    if (!st) co_return st.error();
    co_return targets;
}

awaitable<Status> Cluster::fetch_map() {
    auto nodes_body = co_await call_ok(*mgmtd_, PFS_MSG_GET_NODES, encode(pfs_x_get_nodes, pfs_get_nodes{0}));
    if (!nodes_body) co_return nodes_body.error();
    std::vector<pfs_node_info> nodes;
    auto st = decode_payload(*nodes_body, [&](pfs_xdr* x) {
        xfer_list(x, nodes, pfs_x_node_info, PFS_NODE_INFO_MIN_SIZE);
    });
    if (!st) co_return st;
    auto fetched = co_await fetch_targets();
    if (!fetched) co_return fetched.error();
    std::vector<pfs_target_info> targets = std::move(*fetched);

    std::map<uint32_t, pfs_node_info> by_id;
    std::vector<pfs_node_info> meta_info;
    for (const auto& n : nodes) {
        by_id[n.node_id] = n;
        if (n.node_type == PFS_NODE_META) meta_info.push_back(n);
    }
    std::sort(meta_info.begin(), meta_info.end(),
              [](const pfs_node_info& a, const pfs_node_info& b) { return a.node_id < b.node_id; });
    std::map<uint32_t, TargetRoute> routes;
    for (const auto& t : targets) {
        if (!by_id.count(t.node_id)) continue;
        routes[t.target_id] = TargetRoute{t.target_id, t.node_id, t.reachability};
    }
    // A server that moved gets fresh connections (calls under way keep
    // the old ones until they end).
    for (auto it = paths_.begin(); it != paths_.end();) {
        auto now = by_id.find(it->first);
        if (now == by_id.end() || NodePaths::endpoints_of(now->second, config_) != it->second->endpoints()) {
            it->second->close();
            it = paths_.erase(it);
        } else {
            ++it;
        }
    }
    nodes_ = std::move(by_id);
    routes_ = std::move(routes);
    meta_info_ = std::move(meta_info);
    targets_ = std::move(targets);
    ++refreshes_;
    if (on_refresh_) on_refresh_();
    co_return ok_status();
}

Result<TargetRoute> Cluster::route(uint32_t target_id) const {
    auto it = routes_.find(target_id);
    if (it == routes_.end())
        return Error{PFS_E_UNKNOWN_TARGET, "storage target " + std::to_string(target_id) + " is not in the map"};
    return it->second;
}

awaitable<Result<Reply>> Cluster::call_target(uint32_t target_id, uint16_t type, Bytes payload, Bulk bulk) {
    auto r = route(target_id);
    if (!r) co_return r.error();
    co_return co_await call_node(r->node_id, type, std::move(payload), 0, nullptr, bulk);
}

awaitable<Result<Reply>> Cluster::call_chunk(const pfs_entry_id& file, uint32_t target_id, uint16_t type,
                                             Bytes payload, Bulk bulk) {
    if (target_id != PFS_INLINE_TARGET) co_return co_await call_target(target_id, type, std::move(payload), bulk);
    co_return co_await call_node(file.owner_node, type, std::move(payload), 0, nullptr, bulk);
}

Result<std::shared_ptr<NodePaths>> Cluster::paths_to(uint32_t node_id) {
    if (auto it = paths_.find(node_id); it != paths_.end()) return it->second;
    auto node = nodes_.find(node_id);
    if (node == nodes_.end()) return Error{PFS_E_UNKNOWN_NODE, "node " + std::to_string(node_id) + " is not in the map"};
    auto paths = std::make_shared<NodePaths>(ex_, node->second, secret_, config_, connections_per_server_);
    if (paths->size() == 0)
        return Error{-EHOSTUNREACH, "server " + paths->name() + " offers no RDMA, and RDMA alone was asked for"};
    paths->on_notify([this](const Frame& f) { deliver(f); });
    paths->on_disconnected([this, node_id] {
        for (auto& fn : on_disconnect_) fn(node_id);
    });
    paths_[node_id] = paths;
    return paths;
}

namespace {

// Requests that may run twice without harm (the kernel client resends the same).
bool resendable(uint16_t type) { return type == PFS_MSG_CHUNK_READ || type == PFS_MSG_CHUNK_WRITE; }

bool connection_lost(const Error& e) { return e.code == -ECONNRESET || e.code == -ECONNABORTED; }

}  // namespace

awaitable<Result<Reply>> Cluster::call_node(uint32_t node_id, uint16_t type, Bytes payload, uint64_t client_id,
                                            const Credentials* as, Bulk bulk) {
    constexpr int kMaxResends = 2;
    // Touched after each co_await before anything of this cluster's.
    const std::shared_ptr<bool> alive = alive_;
    const uint64_t bulk_bytes = bulk.data.size() + bulk.into.size();
    Error last{-EHOSTUNREACH, "no way to the server"};
    int resends = 0;
    // Bounded: each pass either fails a path (which then sits out its
    // back-off) or resends, at most kMaxResends times.
    for (int pass = 0; pass < 8; ++pass) {
        auto paths = paths_to(node_id);
        if (!paths) co_return paths.error();
        NodePaths::Path* path = (*paths)->choose();
        if (!path)
            co_return Error{-EHOSTUNREACH, "every RDMA path to " + (*paths)->name() + " is down: " + last.message};
        // Counted from the choice on: calls choosing while this one
        // connects see its load.
        std::optional<NodePaths::Use> use(std::in_place, **paths, *path, bulk_bytes);
        auto client = path->pool->pick();
        if (path->rdma()) {
            const uint64_t connects = client->connects();
            auto st = co_await client->connect();
            if (!*alive) co_return Error{-ECONNABORTED, "client closed"};
            if (!st) {
                // Nothing was sent: any request may go another way; on
                // the only one, the error is the answer.
                if (!(*paths)->other_way(*path)) co_return st.error();
                (*paths)->failed(*path, st.error());
                last = st.error();
                continue;
            }
            (*paths)->connected(*path, client->connects() != connects);
        }
        use->sent();
        // The payload stays for a resend.
        Bytes body = resendable(type) ? payload : std::move(payload);
        auto reply = co_await client->call(type, std::move(body), {}, client_id, as, bulk);
        use.reset();
        if (!*alive) co_return reply;  // the cluster is closed: nothing to resend through
        if (reply && path->rdma()) (*paths)->answered(*path);
        if (reply || !path->rdma()) co_return reply;
        const Error& e = reply.error();
        const bool lost = connection_lost(e);
        if (!lost && e.code != -ETIMEDOUT) co_return reply;
        // A timeout on the only way is the server's, not the rail's.
        if (!lost && !(*paths)->other_way(*path)) co_return reply;
        (*paths)->failed(*path, e);
        if (!resendable(type) || resends == kMaxResends) co_return reply;
        ++resends;
        last = e;
        log::debug("sending a chunk request again by another way",
                  {{"server", (*paths)->name()}, {"type", pfs_msg_name(type)}, {"reason", e.message}});
    }
    co_return last;
}

void Cluster::deliver(const Frame& frame) {
    auto it = notices_.find(frame.header.client_id);
    if (it == notices_.end()) return;
    if (frame.header.type == PFS_MSG_INVALIDATE_ALL) {
        it->second(pfs_invalidate{});  // count 0: everything
    } else if (frame.header.type == PFS_MSG_INVALIDATE) {
        if (auto notice = decode(frame.payload, pfs_x_invalidate)) it->second(*notice);
    }
}

Result<uint32_t> Cluster::root_meta() const {
    if (meta_info_.empty()) return Error{-EHOSTUNREACH, "no metadata server is registered"};
    return meta_info_.front().node_id;  // sorted by id
}

awaitable<Result<Bytes>> Cluster::call_meta_ok(uint32_t meta_node, uint16_t type, Result<Bytes> payload,
                                               uint64_t client_id, const Credentials* as, uint64_t* session_epoch) {
    auto reply = co_await call_meta(meta_node, type, std::move(payload), client_id, as, session_epoch, {});
    if (!reply) co_return reply.error();
    co_return std::move(reply->body);
}

awaitable<Result<Reply>> Cluster::call_meta(uint32_t meta_node, uint16_t type, Result<Bytes> payload,
                                            uint64_t client_id, const Credentials* as, uint64_t* session_epoch,
                                            Bulk bulk) {
    if (!payload) co_return payload.error();
    auto it = std::find_if(meta_info_.begin(), meta_info_.end(),
                           [meta_node](const pfs_node_info& n) { return n.node_id == meta_node; });
    if (it == meta_info_.end())
        co_return Error{PFS_E_UNKNOWN_NODE, "metadata server " + std::to_string(meta_node) + " is not in the map"};
    auto reply = co_await call_node(meta_node, type, std::move(*payload), client_id, as, bulk);
    if (!reply) co_return reply.error();
    if (session_epoch) *session_epoch = reply->session_epoch;
    if (reply->status != PFS_OK) co_return reply_error(*reply);
    co_return reply;
}

awaitable<Result<Bytes>> Cluster::call_target_ok(uint32_t target_id, uint16_t type, Result<Bytes> payload) {
    co_return co_await call_chunk_ok(pfs_entry_id{}, target_id, type, std::move(payload));
}

awaitable<Result<Bytes>> Cluster::call_chunk_ok(const pfs_entry_id& file, uint32_t target_id, uint16_t type,
                                                Result<Bytes> payload) {
    if (!payload) co_return payload.error();
    auto reply = co_await call_chunk(file, target_id, type, std::move(*payload));
    if (!reply) co_return reply.error();
    if (reply->status != PFS_OK) co_return reply_error(*reply);
    co_return std::move(reply->body);
}

}  // namespace pfs::client
