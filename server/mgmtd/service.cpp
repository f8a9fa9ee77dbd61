#include "service.hpp"

#include "log.hpp"

namespace pfs::mgmtd {
namespace {

Reply malformed(const char* what) { return Reply::fail(PFS_E_PROTO, std::string("malformed ") + what); }

template <class M>
Reply reply_with(int (*xfer)(pfs_xdr*, M*), M msg) {
    auto body = encode(xfer, msg);
    return body ? Reply::ok(std::move(*body)) : Reply::from(body.error());
}

template <class M>
Reply reply_list(std::vector<M> items, int (*xfer)(pfs_xdr*, M*), uint32_t min_size) {
    auto body = encode_payload([&](pfs_xdr* x) { xfer_list(x, items, xfer, min_size); });
    return body ? Reply::ok(std::move(*body)) : Reply::from(body.error());
}

Reply status_reply(const Status& st) { return st ? Reply::ok() : Reply::from(st.error()); }

}  // namespace

Service::Service(asio::io_context& io, RpcServer& server, Registry& registry, milliseconds evaluate_every)
    : io_(io), server_(server), registry_(registry), evaluate_every_(evaluate_every) {}

void Service::start() {
    using Method = Reply (Service::*)(Request&);
    auto bind = [this](uint16_t type, Method method) {
        server_.handle(type, [this, method](Request& req) -> awaitable<Reply> {
            Reply reply = (this->*method)(req);
            publish(registry_.take_changes());
            co_return reply;
        });
    };
    bind(PFS_MSG_REGISTER_NODE, &Service::on_register_node);
    bind(PFS_MSG_REGISTER_TARGET, &Service::on_register_target);
    bind(PFS_MSG_HEARTBEAT, &Service::on_heartbeat);
    bind(PFS_MSG_GET_NODES, &Service::on_get_nodes);
    bind(PFS_MSG_GET_TARGETS, &Service::on_get_targets);
    bind(PFS_MSG_GET_POOLS, &Service::on_get_pools);
    bind(PFS_MSG_CREATE_POOL, &Service::on_create_pool);
    bind(PFS_MSG_ASSIGN_POOL, &Service::on_assign_pool);
    bind(PFS_MSG_SET_TARGET_STATE, &Service::on_set_target_state);
    bind(PFS_MSG_SUBSCRIBE, &Service::on_subscribe);
    asio::co_spawn(io_, evaluate_loop(), asio::detached);
}

void Service::publish(uint32_t changes) {
    if (!changes) return;
    pfs_map_changed note{registry_.version(), changes};
    Frame frame{make_header(PFS_MSG_MAP_CHANGED, PFS_FLAG_NOTIFY), *encode(pfs_x_map_changed, note)};
    std::erase_if(subscribers_, [&](const std::weak_ptr<Channel>& weak) {
        auto conn = weak.lock();
        if (!conn || !conn->is_open()) return true;
        conn->send(frame);
        return false;
    });
}

awaitable<void> Service::evaluate_loop() {
    asio::steady_timer timer(io_);
    for (;;) {
        timer.expires_after(evaluate_every_);
        co_await timer.async_wait(asio::use_awaitable);
        publish(registry_.evaluate(Clock::now()));
    }
}

Reply Service::on_register_node(Request& req) {
    auto msg = decode(req.frame.payload, pfs_x_register_node);
    if (!msg) return malformed("REGISTER_NODE");
    // Only servers may announce servers: a client that registered as a
    // storage node would draw other clients' data to itself.
    if (msg->node_type != PFS_NODE_CLIENT && req.role != auth::Role::server)
        return Reply::fail(EPERM, std::string("a ") + auth::role_name(req.role) +
                                      " connection may register client nodes only");
    // A node that does not name its address is reached where it came from.
    if (msg->host[0] == '\0') set_field(msg->host, req.conn->peer_address());
    auto r = registry_.register_node(*msg, Clock::now());
    return r ? reply_with(pfs_x_register_node_reply, *r) : Reply::from(r.error());
}

Reply Service::on_register_target(Request& req) {
    auto msg = decode(req.frame.payload, pfs_x_register_target);
    if (!msg) return malformed("REGISTER_TARGET");
    auto r = registry_.register_target(*msg);
    return r ? reply_with(pfs_x_register_target_reply, *r) : Reply::from(r.error());
}

Reply Service::on_heartbeat(Request& req) {
    pfs_heartbeat hb{};
    std::vector<pfs_target_capacity> caps;
    auto st = decode_payload(req.frame.payload, [&](pfs_xdr* x) {
        if (pfs_x_heartbeat(x, &hb)) return;
        caps.resize(hb.count);
        for (auto& c : caps)
            if (pfs_x_target_capacity(x, &c)) return;
    });
    if (!st) return malformed("HEARTBEAT");
    auto r = registry_.heartbeat(hb.node_id, caps, Clock::now());
    if (!r) return Reply::from(r.error());
    return reply_with(pfs_x_map_version, pfs_map_version{registry_.version()});
}

Reply Service::on_get_nodes(Request& req) {
    auto msg = decode(req.frame.payload, pfs_x_get_nodes);
    if (!msg) return malformed("GET_NODES");
    return reply_list(registry_.node_infos(msg->node_type, Clock::now()), pfs_x_node_info, PFS_NODE_INFO_MIN_SIZE);
}

Reply Service::on_get_targets(Request& req) {
    if (!req.frame.payload.empty()) return malformed("GET_TARGETS");
    return reply_list(registry_.target_infos(Clock::now()), pfs_x_target_info, PFS_TARGET_INFO_MIN_SIZE);
}

Reply Service::on_get_pools(Request& req) {
    if (!req.frame.payload.empty()) return malformed("GET_POOLS");
    return reply_list(registry_.pool_infos(), pfs_x_pool_info, PFS_POOL_INFO_MIN_SIZE);
}

Reply Service::on_create_pool(Request& req) {
    auto msg = decode(req.frame.payload, pfs_x_create_pool);
    if (!msg) return malformed("CREATE_POOL");
    auto r = registry_.create_pool(msg->pool_id, msg->name);
    if (!r) return Reply::from(r.error());
    pfs_create_pool created{*r, {}};
    set_field(created.name, msg->name);
    return reply_with(pfs_x_create_pool, created);
}

Reply Service::on_assign_pool(Request& req) {
    auto msg = decode(req.frame.payload, pfs_x_assign_pool);
    if (!msg) return malformed("ASSIGN_POOL");
    return status_reply(registry_.assign_pool(msg->target_id, msg->pool_id));
}

Reply Service::on_set_target_state(Request& req) {
    auto msg = decode(req.frame.payload, pfs_x_set_target_state);
    if (!msg) return malformed("SET_TARGET_STATE");
    return status_reply(registry_.set_consistency(msg->target_id, msg->consistency));
}

Reply Service::on_subscribe(Request& req) {
    if (!req.frame.payload.empty()) return malformed("SUBSCRIBE");
    subscribers_.push_back(req.conn);
    log::debug("subscriber added", {{"peer", req.conn->peer()}});
    return reply_with(pfs_x_map_version, pfs_map_version{registry_.version()});
}

}  // namespace pfs::mgmtd
