// Client side of a PFS connection: many requests in flight at once, each
// matched to its reply by request id, each with its own timeout. The
// connection is (re)established lazily on the next call, with exponential
// backoff after failures so callers fail fast while a peer is down.
// While connected, the client keeps itself alive (its reader holds it);
// close() ends the connection and fails what is in flight.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "auth_crypto.hpp"
#include "channel.hpp"
#include "handshake.hpp"

namespace pfs {

namespace rdma {
class Rails;
}

struct Endpoint {
    std::string host;
    uint16_t port = 0;
    bool rdma = false;  // through rdma_cm to an RDMA interface's address, not TCP
    std::string source{};  // RDMA: the local address (a rail's) to leave from; empty: routing chooses

    std::string str() const {
        return host + ":" + std::to_string(port) + (!rdma ? "" : source.empty() ? " (rdma)" : " (rdma from " + source + ")");
    }
    auto operator<=>(const Endpoint&) const = default;
};

// "host", "host:port" or "[v6]:port".
Result<Endpoint> parse_endpoint(std::string_view text, uint16_t default_port);

// The client identities of one user of connections (a libpfs Cluster):
// the token behind each client id, so that a connection can bind the ids
// its calls carry (BIND_CLIENT) before it acts for them.
class ClientIdentities {
public:
    // A new identity: a random token and the id it hashes to.
    uint64_t create();
    void forget(uint64_t id) { tokens_.erase(id); }
    std::optional<auth::Token> token(uint64_t id) const;

private:
    std::unordered_map<uint64_t, auth::Token> tokens_;
};

// Which transport connections use where a server offers both.
enum class TransportChoice {
    automatic,  // RDMA where offered and reachable, else TCP
    tcp,
    rdma,       // RDMA or nothing
};

// "auto", "tcp" or "rdma".
Result<TransportChoice> parse_transport(std::string_view text);

struct ClientConfig {
    std::chrono::milliseconds connect_timeout{3000};
    std::chrono::milliseconds request_timeout{10000};
    std::chrono::milliseconds backoff_min{100};
    std::chrono::milliseconds backoff_max{5000};
    auth::Role role = auth::Role::client;  // what the connections prove
    MacWish macs = MacWish::if_required;   // frame MACs asked for (servers may require them)
    std::shared_ptr<const ClientIdentities> identities{};  // for calls that carry a client id
    TransportChoice transport = TransportChoice::automatic;
    // The local interfaces RDMA leaves by (libpfs: a path per server and
    // rail); none: a path per RDMA address of the server, wherever routing says.
    std::shared_ptr<const rdma::Rails> rails{};
    // Requests say that their sender follows inline files' layouts and
    // PFS_E_MOVED, and takes their content in open replies
    // (PFS_FLAG_INLINE_LAYOUTS, _CONTENT): libpfs does.
    bool inline_layouts = true;
};

class RpcClient : public std::enable_shared_from_this<RpcClient> {
public:
    static std::shared_ptr<RpcClient> create(asio::any_io_executor ex, Endpoint peer, auth::Secret secret,
                                             ClientConfig config = {});
    ~RpcClient();

    // Connects unless connected (sharing an attempt under way); fails at
    // once while backing off. A call after success sends on that
    // connection unless it was lost meanwhile.
    awaitable<Status> connect() { return ensure_connected(); }
    // Sends a request and waits for its reply (or the timeout: 0 = default).
    // client_id goes into the header: the client session it belongs to;
    // as: whom it acts for (uid, gid and groups; none: 0, 0); bulk: data
    // sent beside the payload, and where the reply's data goes (its length
    // in Reply::data_len).
    awaitable<Result<Reply>> call(uint16_t type, Bytes payload, std::chrono::milliseconds timeout = {},
                                  uint64_t client_id = 0, const Credentials* as = nullptr, Bulk bulk = {});

    // Unsolicited frames (PFS_FLAG_NOTIFY) from the peer.
    void on_notify(std::function<void(const Frame&)> fn) { on_notify_ = std::move(fn); }
    // After each successful connect, before any waiting call proceeds.
    void on_connected(std::function<void()> fn) { on_connected_ = std::move(fn); }
    // When a connection ends other than by close(): the peer hung up, went
    // away or sent garbage (whatever it kept for us per connection may be
    // gone with it).
    void on_disconnected(std::function<void()> fn) { on_disconnected_ = std::move(fn); }

    uint64_t connects() const { return connects_; }
    // Calls under way, including those still waiting for the connection.
    size_t in_flight() const { return active_calls_; }
    bool connected() const { return conn_ && conn_->is_open(); }
    // Not connected, and the last attempt failed less than a back-off ago:
    // calls fail at once with that attempt's error.
    bool backing_off() const { return !connected() && !connecting_ && std::chrono::steady_clock::now() < next_attempt_; }
    // The next call connects at once, whatever the back-off.
    void retry_now() {
        next_attempt_ = {};
        backoff_ = config_.backoff_min;
    }
    const Endpoint& peer() const { return peer_; }
    // The transport of the live connection, if any ("tcp", "rdma").
    const char* transport() const { return conn_ ? conn_->transport() : ""; }
    void close();

    RpcClient(asio::any_io_executor ex, Endpoint peer, auth::Secret secret, ClientConfig config);

private:
    struct Pending;

    awaitable<Status> ensure_connected();
    // The connection acts for client_id from now on (BIND_CLIENT).
    awaitable<Status> bind(uint64_t client_id);
    awaitable<Result<std::shared_ptr<Channel>>> connect_once();
    awaitable<Result<std::shared_ptr<Channel>>> connect_tcp(const Endpoint& peer);
    awaitable<void> read_loop(std::shared_ptr<Channel> conn);
    void fail_all(const Error& e);

    asio::any_io_executor ex_;
    Endpoint peer_;
    auth::Secret secret_;
    ClientConfig config_;
    std::shared_ptr<Channel> conn_;
    std::unordered_map<uint64_t, std::shared_ptr<Pending>> pending_;
    uint64_t next_request_id_ = 1;
    uint64_t connects_ = 0;
    std::unordered_set<uint64_t> bound_;  // client ids the connection acts for
    size_t active_calls_ = 0;
    bool connecting_ = false;
    asio::steady_timer connect_done_;
    std::chrono::steady_clock::time_point next_attempt_{};
    std::chrono::milliseconds backoff_;
    Error last_error_;
    std::function<void(const Frame&)> on_notify_;
    std::function<void()> on_connected_;
    std::function<void()> on_disconnected_;
};

// Calls and turns a failed reply status into an Error, so callers see one
// kind of failure.
awaitable<Result<Bytes>> call_ok(RpcClient& client, uint16_t type, Result<Bytes> payload,
                                 std::chrono::milliseconds timeout = {});

// Several connections to one peer; each call goes to the least busy.
class ClientPool {
public:
    ClientPool(asio::any_io_executor ex, Endpoint peer, const auth::Secret& secret, size_t connections,
               ClientConfig config = {});
    // Held by the caller for the duration of a call: the pool may go away.
    std::shared_ptr<RpcClient> pick();
    awaitable<Result<Reply>> call(uint16_t type, Bytes payload, std::chrono::milliseconds timeout = {});
    // Unsolicited frames from the peer, on any connection of the pool.
    void on_notify(const std::function<void(const Frame&)>& fn);
    // Any connection of the pool lost (RpcClient::on_disconnected).
    void on_disconnected(const std::function<void()>& fn);
    // The next calls connect at once, whatever the back-off.
    void retry_now();
    // Some connection of the pool is up.
    bool connected() const;
    void close();

private:
    using Clients = std::vector<std::shared_ptr<RpcClient>>;
    std::shared_ptr<Clients> clients_ = std::make_shared<Clients>();
};

}  // namespace pfs
