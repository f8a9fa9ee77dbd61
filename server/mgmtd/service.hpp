// pfs-mgmtd's request handlers and the push of map changes to subscribers.
#pragma once

#include <memory>
#include <vector>

#include "registry.hpp"
#include "rpc_server.hpp"

namespace pfs::mgmtd {

class Service {
public:
    Service(asio::io_context& io, RpcServer& server, Registry& registry, milliseconds evaluate_every);

    // Registers the handlers and starts evaluating states.
    void start();

private:
    void publish(uint32_t changes);
    awaitable<void> evaluate_loop();

    Reply on_register_node(Request& req);
    Reply on_register_target(Request& req);
    Reply on_heartbeat(Request& req);
    Reply on_get_nodes(Request& req);
    Reply on_get_targets(Request& req);
    Reply on_get_pools(Request& req);
    Reply on_create_pool(Request& req);
    Reply on_assign_pool(Request& req);
    Reply on_set_target_state(Request& req);
    Reply on_subscribe(Request& req);

    asio::io_context& io_;
    RpcServer& server_;
    Registry& registry_;
    milliseconds evaluate_every_;
    std::vector<std::weak_ptr<Channel>> subscribers_;
};

}  // namespace pfs::mgmtd
