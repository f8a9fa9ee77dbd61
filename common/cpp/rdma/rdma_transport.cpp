#include "rdma/rdma_transport.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "log.hpp"
#include "rdma/rails.hpp"

namespace pfs::rdma {
namespace {

constexpr int kRetries = 7;       // transport retries before a QP gives up
constexpr int kRnrRetries = 7;    // 7: for ever (never happens: credits)
constexpr uint8_t kReadDepth = 16;  // RDMA READs in flight per connection
constexpr std::chrono::milliseconds kResolveStep{1000};  // one try at resolving an address
constexpr std::chrono::milliseconds kResolveMargin{200};

Status nonblocking(int fd) {
    int flags = ::fcntl(fd, F_GETFL);
    if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) return verbs_error("fcntl(O_NONBLOCK)");
    return ok_status();
}

// The next event of an id that has a channel of its own, within timeout.
awaitable<Result<rdma_cm_event_type>> next_event(asio::posix::stream_descriptor& fd, rdma_event_channel* ch,
                                                  std::chrono::milliseconds timeout, int* status = nullptr,
                                                  std::optional<Params>* hello = nullptr) {
    asio::steady_timer deadline(fd.get_executor(), timeout);
    bool expired = false;
    deadline.async_wait([&](boost::system::error_code ec) {
        if (ec) return;
        expired = true;
        boost::system::error_code ignored;
        fd.cancel(ignored);
    });
    for (;;) {
        rdma_cm_event* ev = nullptr;
        if (rdma_get_cm_event(ch, &ev) == 0) {
            deadline.cancel();
            const rdma_cm_event_type type = ev->event;
            if (status) *status = ev->status;
            if (hello) *hello = decode_hello(ev->param.conn.private_data, ev->param.conn.private_data_len);
            rdma_ack_cm_event(ev);
            co_return type;
        }
        if (errno != EAGAIN) co_return verbs_error("rdma_get_cm_event");
        boost::system::error_code ec;
        co_await fd.async_wait(asio::posix::stream_descriptor::wait_read, asio::redirect_error(asio::use_awaitable, ec));
        if (expired) co_return Error{-ETIMEDOUT, "timed out"};
        if (ec) co_return Error{-ECONNABORTED, ec.message()};
    }
}

Result<sockaddr_storage> resolve(const std::string& host, uint16_t port) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
    if (rc != 0 || !res) return Error{-EHOSTUNREACH, "cannot resolve " + host + ": " + gai_strerror(rc)};
    sockaddr_storage out{};
    std::memcpy(&out, res->ai_addr, res->ai_addrlen);
    ::freeaddrinfo(res);
    return out;
}

rdma_conn_param conn_param(const std::array<uint8_t, kHelloSize>& hello) {
    rdma_conn_param p{};
    p.private_data = hello.data();
    p.private_data_len = static_cast<uint8_t>(hello.size());
    p.responder_resources = kReadDepth;
    p.initiator_depth = kReadDepth;
    p.retry_count = kRetries;
    p.rnr_retry_count = kRnrRetries;
    return p;
}

// An id with its own event channel whose address and route are resolved.
struct ResolvedPath {
    EventChannel events;
    CmId id;
};

// One try at resolving dst (from src) within step.
awaitable<Result<ResolvedPath>> resolve_once(asio::any_io_executor ex, sockaddr_storage* src, sockaddr_storage dst,
                                             std::chrono::milliseconds step) {
    auto events = make_event_channel();
    if (!events) co_return events.error();
    if (auto st = nonblocking((*events)->fd); !st) co_return st.error();
    rdma_cm_id* raw = nullptr;
    if (rdma_create_id(events->get(), &raw, nullptr, RDMA_PS_TCP)) co_return verbs_error("rdma_create_id");
    CmId id(raw);
    asio::posix::stream_descriptor fd(ex, (*events)->fd);
    struct Release {
        asio::posix::stream_descriptor& fd;
        ~Release() {
            if (fd.is_open()) fd.release();  // verbs owns it
        }
    } release{fd};
    const auto ms = static_cast<int>(step.count());
    if (rdma_resolve_addr(id.get(), reinterpret_cast<sockaddr*>(src), reinterpret_cast<sockaddr*>(&dst), ms))
        co_return verbs_error("rdma_resolve_addr");
    int status = 0;
    // A little past the kernel's own limit, so that its ADDR_ERROR comes first.
    auto ev = co_await next_event(fd, events->get(), step + kResolveMargin, &status);
    if (!ev) co_return ev.error();
    if (*ev == RDMA_CM_EVENT_ADDR_ERROR && status == -ETIMEDOUT) co_return Error{-ETIMEDOUT, "timed out"};
    if (*ev != RDMA_CM_EVENT_ADDR_RESOLVED)
        co_return Error{-EHOSTUNREACH, std::string("no RDMA route to the address (") + rdma_event_str(*ev) + ")"};
    if (rdma_resolve_route(id.get(), ms)) co_return verbs_error("rdma_resolve_route");
    ev = co_await next_event(fd, events->get(), step + kResolveMargin);
    if (!ev) co_return ev.error();
    if (*ev != RDMA_CM_EVENT_ROUTE_RESOLVED) co_return Error{-EHOSTUNREACH, rdma_event_str(*ev)};
    co_return ResolvedPath{std::move(*events), std::move(id)};
}

// Address and route of dst within timeout, in tries of kResolveStep: the
// kernel's address resolution can miss the neighbour update it waits for
// (an ARP answer that came back before the request was queued, as on a
// veth pair) and then sits out its whole limit, while a second try finds
// the neighbour known and resolves at once.
awaitable<Result<ResolvedPath>> resolve_path(asio::any_io_executor ex, sockaddr_storage* src, sockaddr_storage dst,
                                             std::chrono::milliseconds timeout) {
    using Clock = std::chrono::steady_clock;
    const auto deadline = Clock::now() + timeout;
    for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
        auto out = co_await resolve_once(ex, src, dst, std::max(std::min(left, kResolveStep), std::chrono::milliseconds(1)));
        if (out || out.error().code != -ETIMEDOUT || Clock::now() + std::chrono::milliseconds(50) >= deadline)
            co_return out;
    }
}

}  // namespace

Params default_params() { return Params{16, 16384}; }

awaitable<Result<std::shared_ptr<Channel>>> connect(asio::any_io_executor ex, const std::string& host, uint16_t port,
                                                    std::chrono::milliseconds timeout, const std::string& source) {
    const std::string where =
        host + ":" + std::to_string(port) + (source.empty() ? " (rdma)" : " (rdma from " + source + ")");
    auto fail = [&where](const Error& e) { return Error{e.code, "cannot connect to " + where + ": " + e.message}; };
    auto addr = resolve(host, port);
    if (!addr) co_return addr.error();
    std::optional<sockaddr_storage> src;
    if (!source.empty()) {
        auto from = resolve(source, 0);
        if (!from) co_return fail(from.error());
        src = *from;
    }
    auto resolved = co_await resolve_path(ex, src ? &*src : nullptr, *addr, timeout);
    if (!resolved) {
        if (resolved.error().code == -EHOSTUNREACH)
            co_return Error{-EHOSTUNREACH, "cannot connect to " + where + ": " + resolved.error().message};
        co_return fail(resolved.error());
    }
    auto& [events, id] = *resolved;

    const Params ours = default_params();
    // The channel owns the id from here; its poller takes the events.
    auto ch = RdmaChannel::create(ex, std::move(id), std::move(events), ours, ours);
    if (!ch) co_return fail(ch.error());
    (*ch)->expect_server_params();
    auto hello = encode_hello(ours);
    auto param = conn_param(hello);
    if (rdma_connect((*ch)->cm_id(), &param)) co_return fail(verbs_error("rdma_connect"));
    (*ch)->start();
    if (auto st = co_await (*ch)->established(timeout); !st) co_return fail(st.error());
    co_return std::shared_ptr<Channel>(*ch);
}

// ---- servers ----

Result<std::unique_ptr<Listener>> Listener::listen(asio::any_io_executor ex, const std::string& host, uint16_t port) {
    std::unique_ptr<Listener> l(new Listener(ex));
    auto where = [&] { return host + ":" + std::to_string(port) + " (rdma)"; };
    auto events = make_event_channel();
    if (!events) return events.error();
    l->events_ = std::move(*events);
    if (auto st = nonblocking(l->events_->fd); !st) return st.error();
    rdma_cm_id* raw = nullptr;
    if (rdma_create_id(l->events_.get(), &raw, nullptr, RDMA_PS_TCP)) return verbs_error("rdma_create_id");
    l->id_.reset(raw);
    auto addr = resolve(host, port);
    if (!addr) return addr.error();
    if (rdma_bind_addr(raw, reinterpret_cast<sockaddr*>(&*addr))) {
        auto e = verbs_error("cannot listen on " + where());
        if (e.code == -ENODEV || e.code == -EADDRNOTAVAIL)
            e.message += " (no RDMA device has that address)";
        return e;
    }
    if (rdma_listen(raw, 128)) return verbs_error("rdma_listen on " + where());
    l->address_ = host;
    l->fd_ = std::make_unique<asio::posix::stream_descriptor>(ex, l->events_->fd);
    return l;
}

Listener::~Listener() {
    stop();
    if (fd_) fd_->release();
}

uint16_t Listener::port() const { return ntohs(rdma_get_src_port(id_.get())); }

void Listener::start(std::function<void(std::shared_ptr<Channel>)> on_channel) {
    on_channel_ = std::move(on_channel);
    asio::co_spawn(ex_, run(), asio::detached);
}

void Listener::stop() {
    if (!*alive_) return;
    *alive_ = false;
    boost::system::error_code ec;
    if (fd_) fd_->cancel(ec);
}

awaitable<void> Listener::run() {
    auto alive = alive_;
    while (*alive) {
        boost::system::error_code ec;
        co_await fd_->async_wait(asio::posix::stream_descriptor::wait_read, asio::redirect_error(asio::use_awaitable, ec));
        if (ec || !*alive) break;
        rdma_cm_event* ev = nullptr;
        while (*alive && rdma_get_cm_event(events_.get(), &ev) == 0) {
            if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
                rdma_ack_cm_event(ev);
                continue;
            }
            rdma_cm_id* id = ev->id;
            Bytes data(static_cast<const uint8_t*>(ev->param.conn.private_data),
                       static_cast<const uint8_t*>(ev->param.conn.private_data) + ev->param.conn.private_data_len);
            rdma_ack_cm_event(ev);
            on_request(id, data.data(), data.size());
        }
    }
}

void Listener::on_request(rdma_cm_id* raw, const void* private_data, size_t len) {
    CmId id(raw);
    auto peers = decode_hello(private_data, len);
    auto refuse = [&](const std::string& why) {
        log::warn("refusing RDMA connection", {{"address", address_}, {"reason", why}});
        rdma_reject(id.get(), nullptr, 0);
    };
    if (!peers) return refuse("no or malformed connection parameters");
    if (*pending_ >= kMaxPending) return refuse("too many connections being established");
    auto events = make_event_channel();
    if (!events) return refuse(events.error().message);
    if (rdma_migrate_id(id.get(), events->get())) return refuse(verbs_error("rdma_migrate_id").message);
    const Params mine = default_params();
    const Params ours{std::min(mine.depth, peers->depth), std::min(mine.msg_size, peers->msg_size)};
    auto ch = RdmaChannel::create(ex_, std::move(id), std::move(*events), ours, *peers);
    if (!ch) {
        log::warn("refusing RDMA connection", {{"address", address_}, {"reason", ch.error().message}});
        return;  // the id went with the channel; its teardown rejects it
    }
    auto hello = encode_hello(ours);
    auto param = conn_param(hello);
    if (rdma_accept((*ch)->cm_id(), &param)) {
        log::warn("refusing RDMA connection", {{"address", address_}, {"reason", verbs_error("rdma_accept").message}});
        return;
    }
    (*ch)->start();
    ++*pending_;
    asio::co_spawn(ex_, [ch = *ch, pending = pending_, alive = alive_, on = on_channel_]() -> awaitable<void> {
        auto st = co_await ch->established(std::chrono::seconds(10));
        --*pending;
        if (!st) {
            log::debug("RDMA connection not established", {{"peer", ch->peer()}, {"reason", st.error().message}});
            co_return;
        }
        if (*alive) on(ch);
        else ch->close();
    }, asio::detached);
}

// ---- interfaces ----

Result<std::vector<std::string>> interface_addresses(const std::vector<std::string>& names) {
    auto interfaces = ipv4_interfaces();
    if (!interfaces) return interfaces.error();
    const auto& ipv4 = *interfaces;

    std::vector<std::string> wanted = names;
    if (names.size() == 1 && names[0] == "auto") {
        // RoCE and soft-RoCE ports name their netdev in each GID's
        // attributes; IPoIB netdevs sit on an InfiniBand device.
        std::set<std::string> backing;
        namespace fs = std::filesystem;
        std::error_code ec;
        for (const auto& dev : fs::directory_iterator("/sys/class/infiniband", ec)) {
            for (const auto& port : fs::directory_iterator(dev.path() / "ports", ec)) {
                for (const auto& ndev : fs::directory_iterator(port.path() / "gid_attrs" / "ndevs", ec)) {
                    std::ifstream in(ndev.path());
                    std::string name;
                    if (in >> name) backing.insert(name);
                }
            }
        }
        for (const auto& [netdev, addr] : ipv4)
            if (fs::exists("/sys/class/net/" + netdev + "/device/infiniband", ec)) backing.insert(netdev);
        wanted.assign(backing.begin(), backing.end());
    }
    std::vector<std::string> out;
    for (const auto& name : wanted) {
        if (::if_nametoindex(name.c_str()) == 0) {
            if (names.size() == 1 && names[0] == "auto") continue;
            return Error{-ENODEV, "RDMA interface '" + name + "' does not exist"};
        }
        auto it = ipv4.find(name);
        if (it == ipv4.end()) {
            if (names.size() == 1 && names[0] == "auto") continue;
            return Error{-EADDRNOTAVAIL, "RDMA interface '" + name + "' has no IPv4 address"};
        }
        out.push_back(it->second.address);
    }
    return out;
}

}  // namespace pfs::rdma
