#include "rpc_client.hpp"

#include <algorithm>
#include <charconv>
#include <optional>

#include "handshake.hpp"
#include "rdma/rdma_transport.hpp"
#include "tcp_channel.hpp"
#include "log.hpp"

namespace pfs {

using namespace std::chrono_literals;

Result<Endpoint> parse_endpoint(std::string_view text, uint16_t default_port) {
    Endpoint ep;
    ep.port = default_port;
    std::string_view host = text, port;
    if (!text.empty() && text.front() == '[') {
        auto close = text.find(']');
        if (close == std::string_view::npos) return Error{-EINVAL, "bad address '" + std::string(text) + "'"};
        host = text.substr(1, close - 1);
        if (close + 1 < text.size()) {
            if (text[close + 1] != ':') return Error{-EINVAL, "bad address '" + std::string(text) + "'"};
            port = text.substr(close + 2);
        }
    } else if (auto colon = text.rfind(':'); colon != std::string_view::npos && text.find(':') == colon) {
        host = text.substr(0, colon);
        port = text.substr(colon + 1);
    }
    if (host.empty()) return Error{-EINVAL, "missing host in '" + std::string(text) + "'"};
    if (!port.empty()) {
        unsigned value = 0;
        auto [p, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
        if (ec != std::errc() || p != port.data() + port.size() || value == 0 || value > 65535)
            return Error{-EINVAL, "bad port in '" + std::string(text) + "'"};
        ep.port = static_cast<uint16_t>(value);
    }
    ep.host = host;
    return ep;
}

struct RpcClient::Pending {
    explicit Pending(asio::any_io_executor ex) : done(ex) {}
    asio::steady_timer done;  // cancelled when the result is in
    std::optional<Result<Frame>> result;
    BulkTicket bulk;  // the caller's bulk memory, lent to the channel until the call ends
};

std::shared_ptr<RpcClient> RpcClient::create(asio::any_io_executor ex, Endpoint peer, auth::Secret secret,
                                             ClientConfig config) {
    return std::make_shared<RpcClient>(ex, std::move(peer), std::move(secret), config);
}

RpcClient::RpcClient(asio::any_io_executor ex, Endpoint peer, auth::Secret secret, ClientConfig config)
    : ex_(ex),
      peer_(std::move(peer)),
      secret_(std::move(secret)),
      config_(config),
      connect_done_(ex),
      backoff_(config.backoff_min) {}

RpcClient::~RpcClient() { close(); }

void RpcClient::close() {
    if (conn_) conn_->close();
    conn_.reset();
    fail_all(Error{-ECONNABORTED, "client closed"});
}

void RpcClient::fail_all(const Error& e) {
    auto pending = std::move(pending_);
    pending_.clear();
    for (auto& [id, p] : pending) {
        p->result = e;
        p->done.cancel();
    }
}

awaitable<Result<std::shared_ptr<Channel>>> RpcClient::connect_once() {
    // (No co_await inside ?: or in an assignment under an if: GCC 12
    // miscompiles both.)
    Result<std::shared_ptr<Channel>> conn = Error{-EINVAL, ""};
    if (peer_.rdma) {
        auto opened = co_await rdma::connect(ex_, peer_.host, peer_.port, config_.connect_timeout, peer_.source);
        conn = std::move(opened);
    } else {
        auto tcp = co_await connect_tcp(peer_);
        conn = std::move(tcp);
    }
    if (!conn) co_return conn.error();
    auto auth = co_await client_handshake(*conn, secret_, config_.role, config_.macs, config_.connect_timeout);
    if (!auth) {
        (*conn)->close();
        co_return Error{auth.error().code, peer_.str() + ": " + auth.error().message};
    }
    co_return conn;
}

awaitable<Result<std::shared_ptr<Channel>>> RpcClient::connect_tcp(const Endpoint& peer) {
    boost::system::error_code ec;
    tcp::resolver resolver(ex_);
    auto results = co_await resolver.async_resolve(peer.host, std::to_string(peer.port),
                                                   asio::redirect_error(asio::use_awaitable, ec));
    if (ec) co_return Error{-EHOSTUNREACH, "cannot resolve " + peer.host + ": " + ec.message()};

    tcp::socket socket(ex_);
    asio::steady_timer deadline(ex_, config_.connect_timeout);
    bool expired = false;
    deadline.async_wait([&](boost::system::error_code e) {
        if (e) return;
        expired = true;
        boost::system::error_code ignored;
        socket.close(ignored);
    });
    co_await asio::async_connect(socket, results, asio::redirect_error(asio::use_awaitable, ec));
    deadline.cancel();
    if (expired) co_return Error{-ETIMEDOUT, "cannot connect to " + peer.str() + ": timed out"};
    if (ec) co_return Error{-ec.value(), "cannot connect to " + peer.str() + ": " + ec.message()};

    co_return std::shared_ptr<Channel>(std::make_shared<TcpChannel>(std::move(socket)));
}

awaitable<Status> RpcClient::ensure_connected() {
    if (connected()) co_return ok_status();
    if (connecting_) {
        // Another call is connecting: share its outcome.
        boost::system::error_code ec;
        co_await connect_done_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        if (connected()) co_return ok_status();
        co_return last_error_;
    }
    if (std::chrono::steady_clock::now() < next_attempt_) co_return last_error_;

    connecting_ = true;
    connect_done_.expires_at(std::chrono::steady_clock::time_point::max());
    auto conn = co_await connect_once();
    connecting_ = false;
    if (!conn) {
        last_error_ = conn.error();
        // Failing fast spares callers a connect timeout each while a peer
        // is unreachable; a refusal costs no wait, and the next attempt may
        // find a server that restarted a moment ago.
        if (last_error_.code != -ECONNREFUSED) {
            next_attempt_ = std::chrono::steady_clock::now() + backoff_;
            backoff_ = std::min(backoff_ * 2, config_.backoff_max);
        }
        connect_done_.cancel();
        co_return last_error_;
    }
    backoff_ = config_.backoff_min;
    conn_ = *conn;
    ++connects_;
    bound_.clear();
    asio::co_spawn(ex_, read_loop(conn_), asio::detached);
    if (on_connected_) on_connected_();
    connect_done_.cancel();
    co_return ok_status();
}

awaitable<void> RpcClient::read_loop(std::shared_ptr<Channel> conn) {
    auto self = shared_from_this();
    Error lost{-ECONNRESET, "connection to " + peer_.str() + " lost"};
    while (conn->is_open()) {
        auto frame = co_await conn->read_frame();
        if (!frame) {
            lost.message += ": " + frame.error().message;
            break;
        }
        if (frame->header.flags & PFS_FLAG_NOTIFY) {
            if (on_notify_) on_notify_(*frame);
            continue;
        }
        if (!(frame->header.flags & PFS_FLAG_REPLY)) {
            log::warn("dropping connection: request from a server", {{"peer", peer_.str()}});
            break;
        }
        auto it = pending_.find(frame->header.request_id);
        if (it == pending_.end()) continue;  // its caller timed out already
        it->second->result = std::move(*frame);
        it->second->done.cancel();
        pending_.erase(it);
    }
    conn->close();
    if (conn_ == conn) {
        conn_.reset();
        fail_all(lost);
        if (on_disconnected_) on_disconnected_();
    }
}

awaitable<Result<Reply>> RpcClient::call(uint16_t type, Bytes payload, std::chrono::milliseconds timeout,
                                         uint64_t client_id, const Credentials* as, Bulk bulk) {
    auto self = shared_from_this();
    ++active_calls_;
    struct Done {
        size_t& n;
        ~Done() { --n; }
    } done{active_calls_};
    auto st = co_await ensure_connected();
    if (!st) co_return st.error();
    // A reconnect while binding leaves the new connection unbound: bind again.
    for (int tries = 0; client_id && config_.identities && !bound_.count(client_id) && tries < 2; ++tries) {
        st = co_await bind(client_id);
        if (!st) co_return st.error();
        st = co_await ensure_connected();
        if (!st) co_return st.error();
    }
    if (timeout == 0ms) timeout = config_.request_timeout;

    uint64_t id = next_request_id_++;
    auto pending = std::make_shared<Pending>(ex_);
    pending->done.expires_after(timeout);
    pending_[id] = pending;
    {
        pfs_header header = make_header(type, 0, id);
        header.client_id = client_id;
        if (config_.inline_layouts) header.flags |= PFS_FLAG_INLINE_LAYOUTS | PFS_FLAG_INLINE_CONTENT;
        if (config_.inline_layouts && bulk.untracked) header.flags |= PFS_FLAG_UNTRACKED;
        Bytes groups;
        if (as) {
            header.uid = as->uid;
            header.gid = as->gid;
            groups = encode_groups(as->groups);
            if (!groups.empty()) header.flags |= PFS_FLAG_GROUPS;
        }
        if (bulk.empty()) {
            conn_->send(header, std::move(groups), std::move(payload));
        } else {
            auto ticket = conn_->send_request(header, std::move(groups), std::move(payload), bulk);
            if (!ticket) {
                pending_.erase(id);
                co_return ticket.error();
            }
            pending->bulk = std::move(*ticket);
        }
    }

    boost::system::error_code ec;
    co_await pending->done.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    if (!pending->result) {
        pending_.erase(id);
        co_return Error{-ETIMEDOUT, std::string(pfs_msg_name(type)) + " to " + peer_.str() + " timed out after " +
                                        std::to_string(timeout.count()) + " ms"};
    }
    if (!*pending->result) co_return pending->result->error();
    const Frame& frame = pending->result->value();
    if (frame.header.type != type) co_return Error{PFS_E_PROTO, "reply of the wrong type from " + peer_.str()};
    if (!bulk.empty() != !!(frame.header.flags & PFS_FLAG_BULK))
        co_return Error{PFS_E_PROTO, "reply with or without bulk data against its request from " + peer_.str()};
    auto reply = decode_reply(frame.payload);
    if (!reply) co_return reply;
    reply->session_epoch = frame.header.client_seq;
    reply->data_len = frame.data_len;
    if (reply->status == PFS_OK) reply->flags = frame.header.flags & PFS_FLAG_UNTRACKED;
    if (reply->data_len && reply->status != PFS_OK)
        co_return Error{PFS_E_PROTO, "failed reply with bulk data from " + peer_.str()};
    co_return reply;
}

awaitable<Status> RpcClient::bind(uint64_t client_id) {
    auto token = config_.identities->token(client_id);
    if (!token) co_return ok_status();  // not ours: the server will say so
    pfs_client_token m{};
    std::copy(token->begin(), token->end(), m.token);
    const uint64_t connection = connects_;
    auto body = co_await call_ok(*this, PFS_MSG_BIND_CLIENT, encode(pfs_x_client_token, m));
    if (!body) co_return body.error();
    auto bound = decode(*body, pfs_x_client_bound);
    if (!bound || bound->client_id != client_id)
        co_return Error{PFS_E_PROTO, "BIND_CLIENT answered for another client id by " + peer_.str()};
    if (connection == connects_) bound_.insert(client_id);
    co_return ok_status();
}

uint64_t ClientIdentities::create() {
    for (;;) {
        auth::Token token = auth::random_token();
        uint64_t id = auth::client_id_of(token);
        if (tokens_.emplace(id, token).second) return id;
    }
}

std::optional<auth::Token> ClientIdentities::token(uint64_t id) const {
    auto it = tokens_.find(id);
    if (it == tokens_.end()) return std::nullopt;
    return it->second;
}

awaitable<Result<Bytes>> call_ok(RpcClient& client, uint16_t type, Result<Bytes> payload,
                                 std::chrono::milliseconds timeout) {
    if (!payload) co_return payload.error();
    auto reply = co_await client.call(type, std::move(*payload), timeout);
    if (!reply) co_return reply.error();
    if (reply->status != PFS_OK) co_return reply_error(*reply);
    co_return std::move(reply->body);
}

Result<TransportChoice> parse_transport(std::string_view text) {
    if (text == "auto") return TransportChoice::automatic;
    if (text == "tcp") return TransportChoice::tcp;
    if (text == "rdma") return TransportChoice::rdma;
    return Error{-EINVAL, "'" + std::string(text) + "' is not auto, tcp or rdma"};
}

ClientPool::ClientPool(asio::any_io_executor ex, Endpoint peer, const auth::Secret& secret, size_t connections,
                       ClientConfig config) {
    for (size_t i = 0; i < std::max<size_t>(connections, 1); ++i)
        clients_->push_back(RpcClient::create(ex, peer, secret, config));
    // One connection that got through proves the peer is back: the others
    // stop failing fast with the error of an attempt made while it was down.
    // (Weakly: a caller may hold a client after the pool is gone.)
    std::weak_ptr<Clients> all = clients_;
    for (auto& c : *clients_) {
        c->on_connected([all, connected = c.get()] {
            if (auto clients = all.lock())
                for (auto& other : *clients)
                    if (other.get() != connected) other->retry_now();
        });
    }
}

// The connection with the least in flight (a live one on a tie), leaving
// out those whose last attempt failed a moment ago: they would fail at once
// with that attempt's error while another can serve. Only when all of them
// back off does a call get such an answer.
std::shared_ptr<RpcClient> ClientPool::pick() {
    auto better = [](const std::shared_ptr<RpcClient>& a, const std::shared_ptr<RpcClient>& b) {
        if (a->in_flight() != b->in_flight()) return a->in_flight() < b->in_flight();
        return a->connected() && !b->connected();
    };
    std::shared_ptr<RpcClient> best, least;
    for (auto& c : *clients_) {
        if (!least || c->in_flight() < least->in_flight()) least = c;
        if (!c->backing_off() && (!best || better(c, best))) best = c;
    }
    return best ? best : least;
}

awaitable<Result<Reply>> ClientPool::call(uint16_t type, Bytes payload, std::chrono::milliseconds timeout) {
    auto client = pick();
    co_return co_await client->call(type, std::move(payload), timeout);
}

void ClientPool::on_notify(const std::function<void(const Frame&)>& fn) {
    for (auto& c : *clients_) c->on_notify(fn);
}

void ClientPool::on_disconnected(const std::function<void()>& fn) {
    for (auto& c : *clients_) c->on_disconnected(fn);
}

bool ClientPool::connected() const {
    return std::any_of(clients_->begin(), clients_->end(), [](const auto& c) { return c->connected(); });
}

void ClientPool::retry_now() {
    for (auto& c : *clients_) c->retry_now();
}

void ClientPool::close() {
    for (auto& c : *clients_) c->close();
}

}  // namespace pfs
