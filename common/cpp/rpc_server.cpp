#include "rpc_server.hpp"

#include <algorithm>

#include "handshake.hpp"
#include "log.hpp"

namespace pfs {

// Bounds the requests one connection runs at once: the reader waits on
// `slot` (a timer used as a signal) while the limit is reached.
struct RpcServer::ConnState {
    explicit ConnState(asio::any_io_executor ex) : slot(ex) {}
    size_t in_flight = 0;
    asio::steady_timer slot;
};

RpcServer::RpcServer(asio::io_context& io, ServerConfig config, auth::Secret secret)
    : io_(io), config_(std::move(config)), secret_(std::move(secret)), acceptor_(io) {
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

void RpcServer::handle(uint16_t type, Handler handler) { handlers_[type].handler = std::move(handler); }

void RpcServer::set_identity(uint32_t node_id, uint16_t node_type) {
    node_id_ = node_id;
    node_type_ = node_type;
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
    asio::co_spawn(io_, accept_loop(), asio::detached);
    return port;
}

void RpcServer::stop() {
    boost::system::error_code ec;
    acceptor_.close(ec);
}

awaitable<void> RpcServer::accept_loop() {
    while (acceptor_.is_open()) {
        boost::system::error_code ec;
        tcp::socket socket = co_await acceptor_.async_accept(asio::redirect_error(asio::use_awaitable, ec));
        if (ec) {
            if (ec == asio::error::operation_aborted) break;
            log::warn("accept failed", {{"error", ec.message()}});
            continue;
        }
        auto conn = std::make_shared<Connection>(std::move(socket));
        if (*connections_ >= config_.max_connections) {
            log::warn("too many connections, refusing", {{"peer", conn->peer()}});
            conn->close();
            continue;
        }
        asio::co_spawn(io_, serve(conn), asio::detached);
    }
}

awaitable<void> RpcServer::serve(std::shared_ptr<Connection> conn) {
    auto counter = connections_;
    ++*counter;
    struct Release {
        std::shared_ptr<size_t> c;
        ~Release() { --*c; }
    } release{counter};

    auto auth = co_await server_handshake(conn, secret_, config_.handshake_timeout);
    if (!auth) {
        log::warn("refusing connection", {{"peer", conn->peer()}, {"reason", auth.error().message}});
        conn->close_when_sent();
        co_return;
    }
    log::debug("connection authenticated", {{"peer", conn->peer()}});

    auto state = std::make_shared<ConnState>(conn->executor());
    while (conn->is_open()) {
        while (state->in_flight >= config_.max_in_flight) {
            boost::system::error_code ec;
            state->slot.expires_after(std::chrono::hours(1));
            co_await state->slot.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        }
        auto frame = co_await conn->read_frame(config_.max_payload);
        if (!frame) {
            if (frame.error().code != -ECONNRESET)
                log::warn("dropping connection", {{"peer", conn->peer()}, {"reason", frame.error().message}});
            break;
        }
        if (frame->header.flags != 0) {
            log::warn("dropping connection", {{"peer", conn->peer()}, {"reason", "reply or notification sent to a server"}});
            break;
        }
        ++state->in_flight;
        asio::co_spawn(conn->executor(), dispatch(conn, std::move(*frame), state), asio::detached);
    }
    conn->close_when_sent();
}

awaitable<void> RpcServer::dispatch(std::shared_ptr<Connection> conn, Frame frame,
                                    std::shared_ptr<ConnState> state) {
    Reply reply;
    auto it = handlers_.find(frame.header.type);
    if (it == handlers_.end()) {
        reply = Reply::fail(PFS_E_UNKNOWN_MSG, "message type " + std::to_string(frame.header.type) + " not served here");
    } else {
        try {
            Request req{frame, conn};
            reply = co_await it->second.handler(req);
        } catch (const std::exception& e) {
            log::error("request handler failed", {{"type", pfs_msg_name(frame.header.type)}, {"error", e.what()}});
            reply = Reply::fail(PFS_E_INTERNAL, "internal server error");
        }
    }
    // The body goes out as it is: read data is not copied into the frame.
    Bytes status = encode_reply_status(reply);
    Bytes body = reply.status == PFS_OK ? std::move(reply.body) : Bytes{};
    SharedBytes data = reply.status == PFS_OK ? std::move(reply.data) : SharedBytes{};
    if (frame.header.type != PFS_MSG_GET_STATS) {
        Counters& counters = it == handlers_.end() ? unknown_ : it->second.counters;
        counters.count(PFS_HEADER_SIZE + frame.payload.size(),
                       PFS_HEADER_SIZE + status.size() + body.size() + data.size(), reply.status != PFS_OK);
    }
    conn->send(make_header(frame.header.type, PFS_FLAG_REPLY, frame.header.request_id), std::move(status),
               std::move(body), std::move(data));
    if (reply.status == PFS_E_PROTO) {
        log::warn("dropping connection", {{"peer", conn->peer()},
                                          {"reason", std::string("malformed ") + pfs_msg_name(frame.header.type)}});
        conn->close_when_sent();
    }
    if (state->in_flight-- == config_.max_in_flight) state->slot.cancel();
}

}  // namespace pfs
