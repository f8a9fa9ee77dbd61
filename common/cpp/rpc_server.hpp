// Serves PFS requests on a TCP port: authenticates each connection, then
// reads frames and runs the handler registered for each message type as its
// own coroutine, so requests on one connection complete out of order.
// Bad input (garbage, wrong secret, oversized frames) is logged and the
// connection dropped; it never reaches a handler.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "auth_crypto.hpp"
#include "connection.hpp"

namespace pfs {

struct Request {
    const Frame& frame;
    std::shared_ptr<Connection> conn;
};

using Handler = std::function<awaitable<Reply>(Request&)>;

struct ServerConfig {
    std::string host = "0.0.0.0";
    uint16_t port = 0;  // 0: any free port
    std::chrono::milliseconds handshake_timeout{5000};
    uint32_t max_payload = PFS_MAX_PAYLOAD;
    size_t max_in_flight = 64;  // per connection
    size_t max_connections = 4096;
};

// What one message type cost a server since it started (GET_STATS).
struct MsgStats {
    uint16_t type = 0;  // 0: types not served here
    uint64_t requests = 0;
    uint64_t errors = 0;     // replies other than PFS_OK
    uint64_t bytes_in = 0;   // request frames, headers included
    uint64_t bytes_out = 0;  // reply frames, headers included
};

class RpcServer {
public:
    RpcServer(asio::io_context& io, ServerConfig config, auth::Secret secret);
    ~RpcServer();

    void handle(uint16_t type, Handler handler);
    // What PING and GET_STATS answer.
    void set_identity(uint32_t node_id, uint16_t node_type);
    // Every type that saw a request, ascending (GET_STATS is not counted).
    std::vector<MsgStats> stats() const;
    std::chrono::milliseconds uptime() const;

    // Binds and starts accepting; returns the bound port.
    Result<uint16_t> start();
    void stop();

private:
    struct ConnState;
    // Relaxed atomics: cheap, and right should handlers ever run on several threads.
    struct Counters {
        std::atomic<uint64_t> requests{0}, errors{0}, bytes_in{0}, bytes_out{0};
        void count(size_t in, size_t out, bool failed);
    };
    struct Route {
        Handler handler;
        Counters counters;
    };

    awaitable<void> accept_loop();
    awaitable<void> serve(std::shared_ptr<Connection> conn);
    awaitable<void> dispatch(std::shared_ptr<Connection> conn, Frame frame, std::shared_ptr<ConnState> state);

    asio::io_context& io_;
    ServerConfig config_;
    auth::Secret secret_;
    tcp::acceptor acceptor_;
    std::map<uint16_t, Route> handlers_;
    Counters unknown_;  // requests of types without a handler
    std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
    std::shared_ptr<size_t> connections_ = std::make_shared<size_t>(0);
    uint32_t node_id_ = 0;
    uint16_t node_type_ = PFS_NODE_MGMT;
};

}  // namespace pfs
