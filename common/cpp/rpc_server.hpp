// Serves PFS requests on a TCP port: authenticates each connection, then
// reads frames and runs the handler registered for each message type as its
// own coroutine, so requests on one connection complete out of order.
// Bad input (garbage, wrong secret, oversized frames) is logged and the
// connection dropped; it never reaches a handler.
//
// What a connection may do follows from the role it proved: a request its
// role may not send (pfs_msg_sent_by) is refused with EPERM, and a client or
// admin connection acts only for the client ids it bound (BIND_CLIENT,
// served here). What peers can make the server hold is bounded:
// unauthenticated connections have their own quota (per address and in
// all: the oldest handshake makes room for a new one, so a flood of idle
// sockets cannot lock other clients out), payloads are charged to a byte
// budget before they are read and must arrive within frame_timeout, each
// connection runs at most max_in_flight requests at once, and holds a read
// buffer only while a frame is under way.
//
// Spread over worker loops (spread_over), each TCP connection is served on
// one of them, its handlers included: they may then run on several threads
// at once, and must be safe to, unless handlers_on names the one loop they
// run on. A handler that sends on its connection (or any other) from a loop
// not the connection's posts the send there (Channel::executor()).
#pragma once

#include <any>
#include <atomic>
#include <chrono>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include "auth_crypto.hpp"
#include "byte_budget.hpp"
#include "channel.hpp"

namespace pfs {

namespace rdma {
class Listener;
}
class WorkerLoops;

struct Request {
    const Frame& frame;
    std::shared_ptr<Channel> conn;
    auth::Role role = auth::Role::client;
    std::vector<uint32_t> groups;  // the caller's supplementary groups
    // What the route's decoder made of the payload on the connection's
    // loop (empty without one): request_body takes it.
    std::any decoded;
};

using Handler = std::function<awaitable<Reply>(Request&)>;
// Turns a payload into what its handler takes. It runs on the connection's
// loop, before the hop to handlers_on's: decoding is spread over the loops
// with the connections, the one loop of the handlers does not pay for it.
using Decoder = std::function<std::any(std::span<const uint8_t> payload)>;

// A body as xfer decoded it, ahead of its handler (decoder_of).
template <class M>
struct DecodedBody {
    int (*xfer)(pfs_xdr*, M*);
    Result<M> body;
};

template <class M>
Decoder decoder_of(int (*xfer)(pfs_xdr*, M*)) {
    return [xfer](std::span<const uint8_t> payload) -> std::any { return DecodedBody<M>{xfer, decode(payload, xfer)}; };
}

// The request's body as xfer decodes it: what the route's decoder made of
// it if that was xfer, else decoded now. Takes it: once per request.
template <class M>
Result<M> request_body(Request& req, int (*xfer)(pfs_xdr*, M*)) {
    if (auto* early = std::any_cast<DecodedBody<M>>(&req.decoded); early && early->xfer == xfer) {
        Result<M> body = std::move(early->body);
        req.decoded.reset();
        return body;
    }
    return decode(req.frame.payload, xfer);
}

struct ServerConfig {
    std::string host = "0.0.0.0";
    uint16_t port = 0;  // 0: any free port
    std::chrono::milliseconds handshake_timeout{5000};
    // Once a frame's header arrived, its payload must within this.
    std::chrono::milliseconds frame_timeout{30000};
    uint32_t max_payload = PFS_MAX_PAYLOAD;
    size_t max_in_flight = 64;  // per connection
    size_t max_connections = 16384;
    size_t max_unauthenticated = 256;         // in all
    size_t max_unauthenticated_per_host = 32;
    size_t max_clients_per_connection = 256;  // client ids bound on one
    size_t request_memory = 1024u << 20;      // payload bytes held at once
    bool require_frame_mac = false;
    // Addresses of RDMA interfaces to serve on too, at the same port
    // number (rdma_cm's port space is its own).
    std::vector<std::string> rdma_addresses;
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

    // sent_by: the roles that may send it (a mask of 1 << enum pfs_role);
    // the message table's (pfs_msg_sent_by) unless given.
    // decoder: run on the connection's loop ahead of the handler, its
    // result in Request::decoded.
    void handle(uint16_t type, Handler handler, std::optional<uint32_t> sent_by = std::nullopt,
                Decoder decoder = {});
    // What PING and GET_STATS answer.
    void set_identity(uint32_t node_id, uint16_t node_type);
    // New TCP connections go to the main loop and each of loops in turn
    // (RDMA ones stay on the main loop); all share one request memory.
    // Before start(); loops must outlive the server.
    void spread_over(WorkerLoops& loops);
    // Every handler runs on ex, whichever loop its connection is on: the
    // connection's loop reads and checks the frame and runs the route's
    // decoder, ex runs the handler, the connection's loop sends the reply.
    // For a service whose state belongs to one loop. Before start().
    void handlers_on(asio::any_io_executor ex) { handler_loop_ = std::move(ex); }
    // Every type that saw a request, ascending (GET_STATS is not counted).
    std::vector<MsgStats> stats() const;
    std::chrono::milliseconds uptime() const;
    size_t connections() const { return *connections_; }
    size_t unauthenticated() const;
    const ByteBudget& request_memory() const { return *budget_; }

    // Binds and starts accepting (TCP, then RDMA on each of its
    // addresses); returns the bound port.
    Result<uint16_t> start();
    void stop();
    // Where it serves over RDMA, once started (address, port).
    std::vector<std::pair<std::string, uint16_t>> rdma_endpoints() const;

private:
    struct ConnState;
    // Relaxed atomics: cheap, and right should handlers ever run on several threads.
    struct Counters {
        std::atomic<uint64_t> requests{0}, errors{0}, bytes_in{0}, bytes_out{0};
        void count(size_t in, size_t out, bool failed);
    };
    struct Route {
        Handler handler;
        Decoder decoder;
        uint32_t sent_by = 0;
        Counters counters;
    };
    // A connection still in its handshake.
    struct Unauthenticated {
        std::weak_ptr<Channel> conn;
        std::string host;
    };
    using UnauthList = std::list<Unauthenticated>;

    awaitable<void> accept_loop();
    // A new connection, whatever its transport: counted, admitted among the
    // unauthenticated, then served.
    void take(std::shared_ptr<Channel> conn);
    // Counts a new connection as unauthenticated, closing the oldest
    // handshake of its address, or of all, to stay within the quotas;
    // returns how many it closed.
    size_t admit_unauthenticated(const std::shared_ptr<Channel>& conn);
    void forget_unauthenticated(const std::shared_ptr<Channel>& conn);
    awaitable<void> serve(std::shared_ptr<Channel> conn);
    // The next request, its payload charged to the budget (lease), its
    // groups block taken off (groups).
    // What a request holds of the byte budget: its payload, and its bulk
    // data when the transport fetches that apart from the frame.
    struct Held {
        ByteBudget::Lease payload;
        ByteBudget::Lease bulk;
    };
    awaitable<Result<Frame>> read_request(Channel& conn, Held& held, std::vector<uint32_t>& groups);
    // Why the connection may not send this request, if it may not.
    std::optional<Reply> refusal(const ConnState& state, const pfs_header& header) const;
    Reply bind_client(ConnState& state, const Frame& frame) const;
    // Runs the request's handler, on handler_loop_ if set.
    awaitable<Reply> run_handler(const Route& route, Request& req);
    awaitable<void> dispatch(std::shared_ptr<Channel> conn, Frame frame, std::vector<uint32_t> groups,
                             std::shared_ptr<ConnState> state, Held held);
    void answer(Channel& conn, const Frame& request, Reply reply, Counters* counters);

    asio::io_context& io_;
    ServerConfig config_;
    auth::Secret secret_;
    tcp::acceptor acceptor_;
    std::vector<std::unique_ptr<rdma::Listener>> rdma_listeners_;
    std::map<uint16_t, Route> handlers_;
    Counters unknown_;  // requests of types without a handler
    std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
    std::shared_ptr<std::atomic<size_t>> connections_ = std::make_shared<std::atomic<size_t>>(0);
    mutable std::mutex unauth_mu_;  // the three below: handshakes end on every loop
    UnauthList unauthenticated_;
    std::unordered_map<std::string, size_t> unauthenticated_per_host_;
    uint64_t evictions_ = 0;
    std::chrono::steady_clock::time_point last_take_warning_{};
    // Where new TCP connections go: the main loop, then the workers'.
    std::vector<asio::any_io_executor> loops_;
    size_t next_loop_ = 0;
    std::optional<asio::any_io_executor> handler_loop_;  // where every handler runs, if set
    std::shared_ptr<ByteBudget> budget_;  // every loop's
    std::atomic<uint32_t> node_id_ = 0;
    std::atomic<uint16_t> node_type_ = PFS_NODE_MGMT;
};

}  // namespace pfs
