#include "rpc_server.hpp"

#include <algorithm>

#include "handshake.hpp"
#include "log.hpp"
#include "rdma/rdma_transport.hpp"
#include "tcp_channel.hpp"
#include "worker_loops.hpp"

namespace pfs {

using namespace std::chrono_literals;

// One connection's standing: the role it proved, the client ids it bound,
// and the requests it runs at once (the reader waits on `slot`, a timer
// used as a signal, while the limit is reached).
struct RpcServer::ConnState {
    ConnState(asio::any_io_executor ex, auth::Role r) : slot(ex), role(r) {}
    size_t in_flight = 0;
    asio::steady_timer slot;
    auth::Role role;
    std::vector<uint64_t> clients;
};

RpcServer::RpcServer(asio::io_context& io, ServerConfig config, auth::Secret secret)
    : io_(io),
      config_(std::move(config)),
      secret_(std::move(secret)),
      acceptor_(io),
      loops_{io.get_executor()},
      budget_(std::make_shared<ByteBudget>(config_.request_memory)) {
    handle(PFS_MSG_PING, [this](Request&) -> awaitable<Reply> {
        pfs_ping_reply pong{node_id_, node_type_};
        co_return Reply::ok(*encode(pfs_x_ping_reply, pong));
    });
    handle(PFS_MSG_GET_STATS, [this](Request&) -> awaitable<Reply> {
        std::vector<MsgStats> all = stats();
        pfs_stats head{node_id_, node_type_, static_cast<uint64_t>(uptime().count()),
                       static_cast<uint32_t>(all.size())};
        auto body = encode_payload([&](pfs_xdr* x) {
            if (pfs_x_stats(x, &head)) return;
            for (const auto& m : all) {
                pfs_msg_stats w{m.type, m.requests, m.errors, m.bytes_in, m.bytes_out};
                if (pfs_x_msg_stats(x, &w)) return;
            }
            pfs_transport_stats t = rdma::counters_snapshot();
            pfs_x_transport_stats(x, &t);
        });
        co_return body ? Reply::ok(std::move(*body)) : Reply::from(body.error());
    });
}

void RpcServer::Counters::count(size_t in, size_t out, bool failed) {
    requests.fetch_add(1, std::memory_order_relaxed);
    if (failed) errors.fetch_add(1, std::memory_order_relaxed);
    bytes_in.fetch_add(in, std::memory_order_relaxed);
    bytes_out.fetch_add(out, std::memory_order_relaxed);
}

std::vector<MsgStats> RpcServer::stats() const {
    std::vector<MsgStats> out;
    auto add = [&out](uint16_t type, const Counters& c) {
        // errors is read first and requests after: a request counted in
        // between cannot make errors exceed requests.
        uint64_t errors = c.errors.load(std::memory_order_relaxed);
        uint64_t requests = c.requests.load(std::memory_order_relaxed);
        if (requests == 0) return;
        out.push_back(MsgStats{type, requests, std::min(errors, requests), c.bytes_in.load(std::memory_order_relaxed),
                               c.bytes_out.load(std::memory_order_relaxed)});
    };
    add(0, unknown_);
    for (const auto& [type, route] : handlers_) add(type, route.counters);
    if (out.size() > PFS_STATS_TYPES_MAX) out.resize(PFS_STATS_TYPES_MAX);
    return out;
}

std::chrono::milliseconds RpcServer::uptime() const {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started_);
}

RpcServer::~RpcServer() { stop(); }

void RpcServer::handle(uint16_t type, Handler handler, std::optional<uint32_t> sent_by, Decoder decoder) {
    Route& route = handlers_[type];
    route.handler = std::move(handler);
    route.decoder = std::move(decoder);
    route.sent_by = sent_by ? *sent_by : pfs_msg_sent_by(type);
}

void RpcServer::set_identity(uint32_t node_id, uint16_t node_type) {
    node_id_ = node_id;
    node_type_ = node_type;
}

void RpcServer::spread_over(WorkerLoops& loops) {
    for (unsigned i = 0; i < loops.size(); ++i) loops_.push_back(loops.executor(i));
}

size_t RpcServer::unauthenticated() const {
    std::lock_guard lock(unauth_mu_);
    return unauthenticated_.size();
}

Result<uint16_t> RpcServer::start() {
    boost::system::error_code ec;
    auto addr = asio::ip::make_address(config_.host, ec);
    if (ec) return Error{-EINVAL, "invalid listen address '" + config_.host + "'"};
    tcp::endpoint ep(addr, config_.port);
    acceptor_.open(ep.protocol(), ec);
    if (!ec) acceptor_.set_option(tcp::acceptor::reuse_address(true), ec);
    if (!ec) acceptor_.bind(ep, ec);
    if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) return Error{-ec.value(), "cannot listen on " + describe(ep) + ": " + ec.message()};
    uint16_t port = acceptor_.local_endpoint().port();
    for (const auto& addr : config_.rdma_addresses) {
        auto l = rdma::Listener::listen(io_.get_executor(), addr, port);
        if (!l) {
            acceptor_.close(ec);
            rdma_listeners_.clear();
            return Error{l.error().code, "cannot serve RDMA on " + addr + ":" + std::to_string(port) + ": " +
                                             l.error().message};
        }
        (*l)->start([this](std::shared_ptr<Channel> conn) { take(std::move(conn)); });
        rdma_listeners_.push_back(std::move(*l));
    }
    asio::co_spawn(io_, accept_loop(), asio::detached);
    return port;
}

void RpcServer::stop() {
    boost::system::error_code ec;
    acceptor_.close(ec);
    for (auto& l : rdma_listeners_) l->stop();
}

std::vector<std::pair<std::string, uint16_t>> RpcServer::rdma_endpoints() const {
    std::vector<std::pair<std::string, uint16_t>> out;
    for (const auto& l : rdma_listeners_) out.emplace_back(l->address(), l->port());
    return out;
}

awaitable<void> RpcServer::accept_loop() {
    auto last_warning = std::chrono::steady_clock::time_point{};
    auto warn = [&last_warning](const std::string& what, const std::string& detail) {
        // At most one line a second: a flood must not flood the log too.
        auto now = std::chrono::steady_clock::now();
        if (now - last_warning < 1s) return;
        last_warning = now;
        log::warn(what, {{"detail", detail}});
    };
    asio::steady_timer pause(io_);
    while (acceptor_.is_open()) {
        boost::system::error_code ec;
        const auto& loop = loops_[next_loop_++ % loops_.size()];
        tcp::socket socket = co_await acceptor_.async_accept(loop, asio::redirect_error(asio::use_awaitable, ec));
        if (ec) {
            if (ec == asio::error::operation_aborted) break;
            warn("accept failed", ec.message());
            // Out of descriptors or memory: the pending connection stays
            // queued and accept would fail again at once; wait a little.
            pause.expires_after(100ms);
            co_await pause.async_wait(asio::redirect_error(asio::use_awaitable, ec));
            continue;
        }
        take(std::make_shared<TcpChannel>(std::move(socket)));
    }
}

void RpcServer::take(std::shared_ptr<Channel> conn) {
    // At most one line a second: a flood must not flood the log too.
    auto warn = [this](const std::string& what, const std::string& detail) {
        auto now = std::chrono::steady_clock::now();
        if (now - last_take_warning_ < 1s) return;
        last_take_warning_ = now;
        log::warn(what, {{"detail", detail}});
    };
    if (*connections_ >= config_.max_connections) {
        warn("too many connections, refusing", conn->peer());
        conn->close();
        return;
    }
    if (size_t evicted = admit_unauthenticated(conn))
        warn("too many unauthenticated connections: closed the oldest handshakes",
             std::to_string(evicted) + " closed so far");
    asio::co_spawn(conn->executor(), serve(conn), asio::detached);
}

size_t RpcServer::admit_unauthenticated(const std::shared_ptr<Channel>& conn) {
    const std::string& host = conn->peer_address();
    std::vector<std::shared_ptr<Channel>> to_close;
    std::unique_lock lock(unauth_mu_);
    const uint64_t before = evictions_;
    // The oldest handshake has had the longest to finish: it makes room,
    // among those of the same address first.
    auto evict = [this, &to_close](UnauthList::iterator it) {
        if (auto c = it->conn.lock()) to_close.push_back(std::move(c));
        if (--unauthenticated_per_host_[it->host] == 0) unauthenticated_per_host_.erase(it->host);
        unauthenticated_.erase(it);
    };
    auto per_host = unauthenticated_per_host_.find(host);
    if (per_host != unauthenticated_per_host_.end() && per_host->second >= config_.max_unauthenticated_per_host) {
        evict(std::find_if(unauthenticated_.begin(), unauthenticated_.end(),
                           [&](const Unauthenticated& u) { return u.host == host; }));
        ++evictions_;
    }
    while (unauthenticated_.size() >= config_.max_unauthenticated) {
        evict(unauthenticated_.begin());
        ++evictions_;
    }
    unauthenticated_.push_back(Unauthenticated{conn, host});
    ++unauthenticated_per_host_[host];
    const uint64_t evicted = evictions_ == before ? 0 : evictions_;
    lock.unlock();
    // Each on its own loop, and not under the lock.
    for (auto& c : to_close) asio::dispatch(c->executor(), [c] { c->close(); });
    return evicted;
}

void RpcServer::forget_unauthenticated(const std::shared_ptr<Channel>& conn) {
    std::lock_guard lock(unauth_mu_);
    auto it = std::find_if(unauthenticated_.begin(), unauthenticated_.end(),
                           [&](const Unauthenticated& u) { return u.conn.lock() == conn; });
    if (it == unauthenticated_.end()) return;  // evicted, and gone already
    if (--unauthenticated_per_host_[it->host] == 0) unauthenticated_per_host_.erase(it->host);
    unauthenticated_.erase(it);
}

awaitable<void> RpcServer::serve(std::shared_ptr<Channel> conn) {
    auto counter = connections_;
    ++*counter;
    struct Release {
        std::shared_ptr<std::atomic<size_t>> c;
        ~Release() { --*c; }
    } release{counter};

    auto auth = co_await server_handshake(conn, secret_, config_.handshake_timeout, config_.require_frame_mac);
    // Authenticated or not, it no longer counts as unauthenticated.
    forget_unauthenticated(conn);
    if (!auth) {
        log::warn("refusing connection", {{"peer", conn->peer()}, {"reason", auth.error().message}});
        conn->close_when_sent();
        co_return;
    }
    log::debug("connection authenticated", {{"peer", conn->peer()}, {"role", auth::role_name(auth->role)},
                                            {"frame_mac", auth->frame_mac}, {"data_mac", auth->data_mac}});

    auto state = std::make_shared<ConnState>(conn->executor(), auth->role);
    while (conn->is_open()) {
        while (state->in_flight >= config_.max_in_flight) {
            boost::system::error_code ec;
            state->slot.expires_after(std::chrono::hours(1));
            co_await state->slot.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        }
        Held held;
        std::vector<uint32_t> groups;
        auto frame = co_await read_request(*conn, held, groups);
        if (!frame) {
            if (frame.error().code != -ECONNRESET)
                log::warn("dropping connection", {{"peer", conn->peer()}, {"reason", frame.error().message}});
            break;
        }
        if (frame->header.flags & (PFS_FLAG_REPLY | PFS_FLAG_NOTIFY)) {
            log::warn("dropping connection", {{"peer", conn->peer()}, {"reason", "reply or notification sent to a server"}});
            break;
        }
        if (auto refused = refusal(*state, frame->header)) {
            answer(*conn, *frame, std::move(*refused), &unknown_);
            continue;
        }
        if (frame->header.type == PFS_MSG_BIND_CLIENT) {
            answer(*conn, *frame, bind_client(*state, *frame), nullptr);
            continue;
        }
        ++state->in_flight;
        asio::co_spawn(conn->executor(), dispatch(conn, std::move(*frame), std::move(groups), state, std::move(held)),
                       asio::detached);
    }
    conn->close_when_sent();
}

awaitable<Result<Frame>> RpcServer::read_request(Channel& conn, Held& held, std::vector<uint32_t>& groups) {
    // An idle connection may wait for ever; once a frame has begun, its
    // payload is charged first, then must arrive within frame_timeout.
    auto header = co_await conn.read_header(config_.max_payload);
    if (!header) co_return header.error();
    const auto until = std::chrono::steady_clock::now() + config_.frame_timeout;
    auto timed_out = [this](const char* what) {
        return Error{-ETIMEDOUT, "frame payload not received within " + std::to_string(config_.frame_timeout.count()) +
                                     " ms" + what};
    };
    // The wait for memory counts: a peer that claims a payload and never
    // sends it holds the budget no longer than frame_timeout.
    auto granted = co_await ByteBudget::acquire(budget_, header->payload_len, until);
    if (!granted) co_return timed_out(" (waited for memory)");
    held.payload = std::move(*granted);
    // Armed only for a wait on the peer: most requests arrive whole with
    // their header.
    std::optional<Channel::Deadline> deadline;
    auto arm = [&] {
        if (!deadline)
            deadline.emplace(conn.shared_from_this(), std::chrono::duration_cast<std::chrono::milliseconds>(
                                                          until - std::chrono::steady_clock::now()));
    };
    if (!conn.payload_received(*header)) arm();
    auto frame = co_await conn.read_payload(*header);
    if (!frame && deadline && deadline->expired()) co_return timed_out("");
    if (!frame) co_return frame.error();
    if (frame->bulk.has_value() != !!(frame->header.flags & PFS_FLAG_BULK))
        co_return Error{PFS_E_PROTO, "bulk block and flag disagree"};
    // Bulk data the frame did not bring (RDMA) is charged, then fetched,
    // under the same deadline.
    if (size_t more = conn.bulk_to_fetch(*frame)) {
        auto bulk = co_await ByteBudget::acquire(budget_, more, until);
        if (!bulk) co_return timed_out(" (waited for memory for its bulk data)");
        held.bulk = std::move(*bulk);
        arm();
        auto fetched = co_await conn.fetch_bulk(*frame);
        if (!fetched && deadline->expired()) co_return timed_out(" (its bulk data)");
        if (!fetched) co_return fetched.error();
    }
    auto taken = take_groups(*frame);
    if (!taken) co_return taken.error();
    groups = std::move(*taken);
    co_return frame;
}

std::optional<Reply> RpcServer::refusal(const ConnState& state, const pfs_header& header) const {
    const uint32_t role_bit = 1u << static_cast<unsigned>(state.role);
    auto route = handlers_.find(header.type);
    const uint32_t sent_by = header.type == PFS_MSG_BIND_CLIENT ? pfs_msg_sent_by(header.type)
                           : route != handlers_.end()             ? route->second.sent_by
                                                                  : PFS_SENT_BY_ANY;  // answered UNKNOWN_MSG
    if (!(sent_by & role_bit))
        return Reply::fail(EPERM, std::string(pfs_msg_name(header.type)) + " is not allowed for the " +
                                      auth::role_name(state.role) + " role");
    // BIND_CLIENT's own header may carry the id it is about to bind.
    if (header.client_id && state.role != auth::Role::server && header.type != PFS_MSG_BIND_CLIENT &&
        std::find(state.clients.begin(), state.clients.end(), header.client_id) == state.clients.end())
        return Reply::fail(EPERM, "client id " + std::to_string(header.client_id) +
                                      " is not bound to this connection (BIND_CLIENT)");
    return std::nullopt;
}

Reply RpcServer::bind_client(ConnState& state, const Frame& frame) const {
    auto m = decode(frame.payload, pfs_x_client_token);
    if (!m) return Reply::fail(PFS_E_PROTO, "malformed BIND_CLIENT");
    auth::Token token;
    std::copy(std::begin(m->token), std::end(m->token), token.begin());
    uint64_t id = auth::client_id_of(token);
    if (std::find(state.clients.begin(), state.clients.end(), id) == state.clients.end()) {
        if (state.clients.size() >= config_.max_clients_per_connection)
            return Reply::fail(ENOSPC, "too many client ids bound to one connection");
        state.clients.push_back(id);
    }
    return Reply::ok(*encode(pfs_x_client_bound, pfs_client_bound{id}));
}

void RpcServer::answer(Channel& conn, const Frame& request, Reply reply, Counters* counters) {
    // Bulk data goes only where the request said it may, and no more of it.
    if (reply.status == PFS_OK && !reply.data.empty()) {
        if (!request.bulk)
            reply = Reply::fail(PFS_E_PROTO, std::string(pfs_msg_name(request.header.type)) + " without a bulk block");
        else if (reply.data.size() > request.bulk->out_len)
            reply = Reply::fail(EMSGSIZE, "the reply's data is longer than the request takes");
    }
    // The body goes out as it is: read data is not copied into the frame.
    Bytes status = encode_reply_status(reply);
    Bytes body = reply.status == PFS_OK ? std::move(reply.body) : Bytes{};
    SharedBytes data = reply.status == PFS_OK ? std::move(reply.data) : SharedBytes{};
    if (counters && request.header.type != PFS_MSG_GET_STATS)
        counters->count(PFS_HEADER_SIZE + request.payload.size() + request.data.size(),
                        PFS_HEADER_SIZE + status.size() + body.size() + data.size(), reply.status != PFS_OK);
    const uint16_t flags = reply.status == PFS_OK ? (reply.flags & PFS_FLAG_UNTRACKED) : 0;
    pfs_header header = make_header(request.header.type, PFS_FLAG_REPLY | flags, request.header.request_id);
    header.client_seq = reply.session_epoch;
    if (request.bulk) {
        status.insert(status.end(), body.begin(), body.end());
        conn.send_bulk_reply(request, header, std::move(status), std::move(data));
    } else {
        conn.send(header, std::move(status), std::move(body), std::move(data));
    }
    if (reply.status == PFS_E_PROTO) {
        log::warn("dropping connection", {{"peer", conn.peer()},
                                          {"reason", std::string("malformed ") + pfs_msg_name(request.header.type)}});
        conn.close_when_sent();
    }
}

awaitable<Reply> RpcServer::run_handler(const Route& route, Request& req) {
    if (!handler_loop_ || *handler_loop_ == req.conn->executor()) co_return co_await route.handler(req);
    // Over there and back; the handler is called there too (it may do work
    // before its first suspension), and req and route outlive the hop: this
    // frame waits for it.
    auto call = [](const Handler& handler, Request& r) -> awaitable<Reply> { co_return co_await handler(r); };
    co_return co_await asio::co_spawn(*handler_loop_, call(route.handler, req), asio::use_awaitable);
}

awaitable<void> RpcServer::dispatch(std::shared_ptr<Channel> conn, Frame frame, std::vector<uint32_t> groups,
                                    std::shared_ptr<ConnState> state, Held held) {
    Reply reply;
    auto it = handlers_.find(frame.header.type);
    if (it == handlers_.end()) {
        reply = Reply::fail(PFS_E_UNKNOWN_MSG, "message type " + std::to_string(frame.header.type) + " not served here");
    } else {
        try {
            Request req{frame, conn, state->role, std::move(groups), {}};
            if (it->second.decoder) req.decoded = it->second.decoder(frame.payload);
            reply = co_await run_handler(it->second, req);
        } catch (const std::exception& e) {
            log::error("request handler failed", {{"type", pfs_msg_name(frame.header.type)}, {"error", e.what()}});
            reply = Reply::fail(PFS_E_INTERNAL, "internal server error");
        }
    }
    answer(*conn, frame, std::move(reply), it == handlers_.end() ? &unknown_ : &it->second.counters);
    held.payload.release();
    held.bulk.release();
    if (state->in_flight-- == config_.max_in_flight) state->slot.cancel();
}

}  // namespace pfs
