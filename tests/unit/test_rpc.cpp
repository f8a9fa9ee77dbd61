// The transport over real loopback sockets: handshake, multiplexing,
// timeouts, reconnect and notifications.
#include <catch2/catch.hpp>

#include <random>
#include <set>

#include "tcp_channel.hpp"
#include "handshake.hpp"
#include "rpc_client.hpp"
#include "rpc_server.hpp"

using namespace pfs;
using namespace std::chrono_literals;

namespace {

auth::Secret secret_of(std::string_view text) {
    return auth::Secret::from_bytes(std::span(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
}

// Plain function: GCC 12 cannot keep initializer lists in coroutine frames.
template <class... T>
Bytes bytes(T... v) {
    return Bytes{static_cast<uint8_t>(v)...};
}

const auth::Secret kSecret = secret_of("the-cluster-secret-0123456789");

constexpr uint16_t kEcho = 900;     // replies with its payload, after a delay in its first byte (ms)
constexpr uint16_t kNotifyMe = 901;  // pushes a notification, then replies
constexpr uint16_t kEpoch = 902;     // fails (EAGAIN) when its payload is empty; both with a session epoch
constexpr uint16_t kHangUp = 903;    // closes the connection instead of replying
constexpr uint16_t kBulkEcho = 904;  // replies with its payload as the body and its bulk data, plus its first byte more

struct Fixture {
    asio::io_context io;
    std::unique_ptr<RpcServer> server;
    uint16_t port = 0;

    void start_server(uint16_t on_port = 0, bool require_mac = false) {
        ServerConfig config;
        config.host = "127.0.0.1";
        config.port = on_port;
        config.require_frame_mac = require_mac;
        server = std::make_unique<RpcServer>(io, config, kSecret);
        server->handle(kEcho, [this](Request& req) -> awaitable<Reply> {
            Bytes body = req.frame.payload;
            if (!body.empty() && body[0]) {
                asio::steady_timer t(io, std::chrono::milliseconds(body[0]));
                co_await t.async_wait(asio::use_awaitable);
            }
            co_return Reply::ok(body);
        }, PFS_SENT_BY_ANY);
        server->handle(kEpoch, [](Request& req) -> awaitable<Reply> {
            Reply r = req.frame.payload.empty() ? Reply::fail(EAGAIN, "busy") : Reply::ok();
            r.session_epoch = 0x1122334455667788ull;
            co_return r;
        }, PFS_SENT_BY_ANY);
        server->handle(kHangUp, [](Request& req) -> awaitable<Reply> {
            req.conn->close();
            co_return Reply::ok();
        }, PFS_SENT_BY_ANY);
        server->handle(kBulkEcho, [](Request& req) -> awaitable<Reply> {
            Bytes data(req.frame.data.begin(), req.frame.data.end());
            if (!req.frame.payload.empty()) data.resize(data.size() + req.frame.payload[0], 0xee);
            Reply r = Reply::ok(req.frame.payload);
            r.data = SharedBytes(std::move(data));
            co_return r;
        }, PFS_SENT_BY_ANY);
        server->handle(kNotifyMe, [](Request& req) -> awaitable<Reply> {
            req.conn->send(Frame{make_header(PFS_MSG_MAP_CHANGED, PFS_FLAG_NOTIFY), bytes(1, 2, 3)});
            co_return Reply::ok();
        }, PFS_SENT_BY_ANY);
        auto p = server->start();
        REQUIRE(p);
        port = *p;
    }

    template <class F>
    void run(F&& body) {
        bool done = false;
        asio::co_spawn(io, [&]() -> awaitable<void> {
            co_await body();
            done = true;
        }, [](std::exception_ptr e) { if (e) std::rethrow_exception(e); });
        io.run_for(30s);
        REQUIRE(done);
    }

    std::shared_ptr<RpcClient> client(const auth::Secret& secret = kSecret, ClientConfig cfg = {}) {
        return RpcClient::create(io.get_executor(), Endpoint{"127.0.0.1", port}, secret, cfg);
    }
};

}  // namespace

TEST_CASE("a client with the shared secret is served", "[rpc]") {
    Fixture f;
    f.start_server();
    f.run([&]() -> awaitable<void> {
        auto c = f.client();
        auto r = co_await c->call(PFS_MSG_PING, Bytes());
        REQUIRE(r);
        CHECK(r->status == PFS_OK);
        auto echo = co_await c->call(kEcho, bytes(0, 42, 43));
        REQUIRE(echo);
        CHECK(echo->body == bytes(0, 42, 43));
        auto unknown = co_await c->call(4242, Bytes());
        REQUIRE(unknown);
        CHECK(unknown->status == PFS_E_UNKNOWN_MSG);
        CHECK(c->connects() == 1);
        f.server->stop();
        c->close();
    });
}

TEST_CASE("a client with a wrong secret is refused with a clear error", "[rpc]") {
    Fixture f;
    f.start_server();
    f.run([&]() -> awaitable<void> {
        auto c = f.client(secret_of("some-other-secret-9876543210"));
        auto r = co_await c->call(PFS_MSG_PING, Bytes());
        REQUIRE_FALSE(r);
        CHECK(r.error().code == PFS_E_AUTH);
        CHECK(r.error().message.find("wrong client key or cluster secret") != std::string::npos);
        f.server->stop();
        c->close();
    });
}

TEST_CASE("a server that cannot prove the secret is not trusted", "[rpc]") {
    Fixture f;
    // An impostor: accepts anything and answers with a made-up proof.
    tcp::acceptor acceptor(f.io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    f.port = acceptor.local_endpoint().port();
    asio::co_spawn(f.io, [&]() -> awaitable<void> {
        auto conn = std::make_shared<TcpChannel>(co_await acceptor.async_accept(asio::use_awaitable));
        pfs_auth_challenge challenge{};
        conn->send(Frame{make_header(PFS_MSG_AUTH_CHALLENGE), *encode(pfs_x_auth_challenge, challenge)});
        auto response = co_await conn->read_frame(kHandshakeMaxPayload);
        pfs_auth_proof bogus{};
        conn->send(Frame{make_header(PFS_MSG_AUTH_RESPONSE, PFS_FLAG_REPLY, response->header.request_id),
                         encode_reply(Reply::ok(*encode(pfs_x_auth_proof, bogus)))});
        co_await conn->read_frame();  // until the client hangs up
    }, asio::detached);
    f.run([&]() -> awaitable<void> {
        auto c = f.client();
        auto r = co_await c->call(PFS_MSG_PING, Bytes());
        REQUIRE_FALSE(r);
        CHECK(r.error().code == PFS_E_AUTH);
        CHECK(r.error().message.find("could not prove") != std::string::npos);
        acceptor.close();
    });
}

TEST_CASE("many requests in flight complete out of order, each with its own reply", "[rpc]") {
    Fixture f;
    f.start_server();
    f.run([&]() -> awaitable<void> {
        auto c = f.client();
        constexpr int n = 64;
        int completed = 0, max_in_flight = 0;
        std::vector<int> order;
        asio::steady_timer all_done(f.io, std::chrono::steady_clock::time_point::max());
        std::mt19937 rng(7);
        for (int i = 0; i < n; ++i) {
            uint8_t delay = static_cast<uint8_t>(1 + rng() % 60);
            asio::co_spawn(f.io, [&, i, delay]() -> awaitable<void> {
                Bytes payload = bytes(delay, i);
                auto r = co_await c->call(kEcho, payload);
                CHECK(r);
                if (r) CHECK(r->body == payload);
                order.push_back(i);
                if (++completed == n) all_done.cancel();
            }, asio::detached);
            max_in_flight = std::max(max_in_flight, static_cast<int>(c->in_flight()));
        }
        boost::system::error_code ec;
        co_await all_done.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        CHECK(completed == n);
        CHECK_FALSE(std::is_sorted(order.begin(), order.end()));
        CHECK(c->connects() == 1);  // all on one connection
        f.server->stop();
        c->close();
    });
}

// Frames are written at once where the socket takes them (the rest by the
// writer coroutine) and read through a buffer that may hold several frames
// or only part of one: sizes from a few bytes to many times the socket's
// buffer, all in flight together, must each come back whole.
TEST_CASE("frames of any size arrive whole, however the socket splits them", "[rpc]") {
    Fixture f;
    f.start_server();
    f.run([&]() -> awaitable<void> {
        auto c = f.client();
        constexpr int n = 48;
        int completed = 0, intact = 0;
        asio::steady_timer all_done(f.io, std::chrono::steady_clock::time_point::max());
        std::mt19937 rng(11);
        for (int i = 0; i < n; ++i) {
            // Small ones, ones around the 64 KiB read buffer, and up to 3 MiB.
            const size_t sizes[] = {1 + rng() % 40, (64u << 10) - 20 + rng() % 40, 1 + rng() % (3u << 20)};
            Bytes payload(sizes[i % 3]);
            for (size_t k = 0; k < payload.size(); ++k) payload[k] = static_cast<uint8_t>(rng());
            payload[0] = 0;  // no delay: replies stream back while requests still go out
            asio::co_spawn(f.io, [&, payload]() -> awaitable<void> {
                auto r = co_await c->call(kEcho, payload, 20s);
                if (r && r->body == payload) ++intact;
                if (++completed == n) all_done.cancel();
            }, asio::detached);
        }
        boost::system::error_code ec;
        co_await all_done.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        CHECK(completed == n);
        CHECK(intact == n);
        CHECK(c->connects() == 1);
        f.server->stop();
        c->close();
    });
}

TEST_CASE("a request times out without hanging the connection", "[rpc]") {
    Fixture f;
    f.start_server();
    f.run([&]() -> awaitable<void> {
        auto c = f.client();
        auto slow = co_await c->call(kEcho, bytes(200), 50ms);
        REQUIRE_FALSE(slow);
        CHECK(slow.error().code == -ETIMEDOUT);
        auto fast = co_await c->call(kEcho, bytes(0, 1));
        REQUIRE(fast);
        CHECK(fast->body == bytes(0, 1));
        f.server->stop();
        c->close();
    });
}

TEST_CASE("a client reconnects after the server comes back, with backoff while it is down", "[rpc]") {
    Fixture f;
    f.start_server();
    f.run([&]() -> awaitable<void> {
        ClientConfig cfg;
        cfg.backoff_min = 20ms;
        auto c = f.client(kSecret, cfg);
        auto first = co_await c->call(PFS_MSG_PING, Bytes());
        REQUIRE(first);
        uint16_t port = f.port;
        auto old = std::move(f.server);
        old->stop();
        c->close();
        auto down = co_await c->call(PFS_MSG_PING, Bytes());
        REQUIRE_FALSE(down);
        CHECK(down.error().message.find("cannot connect") != std::string::npos);
        // Within the backoff window the last error is returned at once.
        auto again = co_await c->call(PFS_MSG_PING, Bytes());
        REQUIRE_FALSE(again);
        f.start_server(port);
        Result<Reply> up = Error{};
        for (int i = 0; i < 100 && !up; ++i) {
            asio::steady_timer t(f.io, 20ms);
            co_await t.async_wait(asio::use_awaitable);
            up = co_await c->call(PFS_MSG_PING, Bytes());
        }
        REQUIRE(up);
        CHECK(c->connects() == 2);
        f.server->stop();
        c->close();
    });
}

TEST_CASE("notifications are delivered apart from replies", "[rpc]") {
    Fixture f;
    f.start_server();
    f.run([&]() -> awaitable<void> {
        auto c = f.client();
        Bytes seen;
        c->on_notify([&](const Frame& frame) { seen = frame.payload; });
        auto r = co_await c->call(kNotifyMe, Bytes());
        REQUIRE(r);
        CHECK(seen == bytes(1, 2, 3));
        f.server->stop();
        c->close();
    });
}

TEST_CASE("a reply's session epoch reaches the caller, whatever its status", "[rpc]") {
    Fixture f;
    f.start_server();
    f.run([&]() -> awaitable<void> {
        auto c = f.client();
        auto ok = co_await c->call(kEpoch, bytes(1));
        REQUIRE(ok);
        CHECK(ok->status == PFS_OK);
        CHECK(ok->session_epoch == 0x1122334455667788ull);
        auto failed = co_await c->call(kEpoch, Bytes());
        REQUIRE(failed);
        CHECK(failed->status == EAGAIN);
        CHECK(failed->session_epoch == 0x1122334455667788ull);
        auto plain = co_await c->call(kEcho, bytes(0));
        REQUIRE(plain);
        CHECK(plain->session_epoch == 0);
        f.server->stop();
        c->close();
    });
}

TEST_CASE("a lost connection is reported, one closed by its owner is not", "[rpc]") {
    Fixture f;
    f.start_server();
    f.run([&]() -> awaitable<void> {
        auto c = f.client();
        int lost = 0;
        c->on_disconnected([&] { ++lost; });
        // Awaited apart from REQUIRE: GCC 12 would await inside it twice.
        auto first = co_await c->call(kEcho, bytes(0));
        REQUIRE(first);
        auto cut = co_await c->call(kHangUp, Bytes());
        REQUIRE_FALSE(cut);
        CHECK(lost == 1);
        auto again = co_await c->call(kEcho, bytes(0));
        REQUIRE(again);  // reconnected
        c->close();
        asio::steady_timer t(f.io, 100ms);
        co_await t.async_wait(asio::use_awaitable);
        CHECK(lost == 1);
        f.server->stop();
    });
}

TEST_CASE("a client pool spreads concurrent calls over its connections", "[rpc]") {
    Fixture f;
    f.start_server();
    f.run([&]() -> awaitable<void> {
        ClientPool pool(f.io.get_executor(), Endpoint{"127.0.0.1", f.port}, kSecret, 4);
        constexpr int n = 16;
        int completed = 0;
        asio::steady_timer all_done(f.io, std::chrono::steady_clock::time_point::max());
        std::set<std::shared_ptr<RpcClient>> used;
        for (int i = 0; i < n; ++i) {
            asio::co_spawn(f.io, [&, i]() -> awaitable<void> {
                auto client = pool.pick();
                used.insert(client);
                auto r = co_await client->call(kEcho, bytes(20, i));
                CHECK(r);
                if (++completed == n) all_done.cancel();
            }, asio::detached);
        }
        boost::system::error_code ec;
        co_await all_done.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        CHECK(completed == n);
        CHECK(used.size() == 4);
        for (const auto& c : used) CHECK(c->connects() == 1);
        pool.close();
        f.server->stop();
    });
}

TEST_CASE("a refused connect does not make later calls fail fast: a restarted server is used at once", "[rpc]") {
    Fixture f;
    f.start_server();
    f.run([&]() -> awaitable<void> {
        ClientConfig cfg;
        cfg.backoff_min = 5s;  // far longer than the test
        auto c = f.client(kSecret, cfg);
        uint16_t port = f.port;
        auto old = std::move(f.server);
        old->stop();
        auto down = co_await c->call(PFS_MSG_PING, Bytes());
        REQUIRE_FALSE(down);
        CHECK(down.error().code == -ECONNREFUSED);
        CHECK_FALSE(c->backing_off());
        f.start_server(port);
        auto up = co_await c->call(PFS_MSG_PING, Bytes());
        INFO((up ? std::string("ok") : up.error().message));
        CHECK(up);
        c->close();
        f.server->stop();
    });
}

TEST_CASE("a pool whose peer came back serves on a live connection, not with a stale connect error", "[rpc]") {
    Fixture f;
    f.run([&]() -> awaitable<void> {
        // A peer that takes connections but never answers the handshake:
        // connecting times out, which starts a back-off.
        tcp::acceptor silent(f.io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
        uint16_t port = silent.local_endpoint().port();
        ClientConfig cfg;
        cfg.connect_timeout = 100ms;
        cfg.backoff_min = 5s;  // far longer than the test: only a reset lets a connection retry
        cfg.backoff_max = 5s;
        ClientPool pool(f.io.get_executor(), Endpoint{"127.0.0.1", port}, kSecret, 2, cfg);
        auto a = pool.pick();
        auto refused_a = co_await a->call(PFS_MSG_PING, Bytes());
        REQUIRE_FALSE(refused_a);
        auto b = pool.pick();
        CHECK(b != a);  // a fails fast for a while: not picked
        auto refused_b = co_await b->call(PFS_MSG_PING, Bytes());
        REQUIRE_FALSE(refused_b);
        CHECK(a->backing_off());
        CHECK(b->backing_off());
        // The real server takes the port, and one connection gets through.
        silent.close();
        f.start_server(port);
        a->retry_now();
        auto through = co_await a->call(PFS_MSG_PING, Bytes());
        REQUIRE(through);
        CHECK_FALSE(b->backing_off());
        for (int i = 0; i < 4; ++i) {
            auto r = co_await pool.pick()->call(PFS_MSG_PING, Bytes());
            INFO((r ? std::string("ok") : r.error().message));
            CHECK(r);
        }
        pool.close();
        f.server->stop();
    });
}

TEST_CASE("bulk data travels beside the body and lands in the caller's buffer", "[rpc]") {
    Fixture f;
    f.start_server();
    f.run([&]() -> awaitable<void> {
        auto c = f.client();
        Bytes out(300000);
        for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<uint8_t>(i * 7 + 3);
        Bytes into(out.size() + 10, 0);
        auto r = co_await c->call(kBulkEcho, bytes(0, 42), {}, 0, nullptr, Bulk{out, into});
        REQUIRE(r);
        REQUIRE(r->status == PFS_OK);
        CHECK(r->body == bytes(0, 42));
        CHECK(r->data_len == out.size());
        CHECK(std::equal(out.begin(), out.end(), into.begin()));
        CHECK(into[out.size()] == 0);  // nothing past what came
        // A reply may bring less than the caller has room for, not more.
        Bytes small(out.size() - 1);
        auto over = co_await c->call(kBulkEcho, bytes(0), {}, 0, nullptr, Bulk{out, small});
        REQUIRE(over);
        CHECK(over->status == EMSGSIZE);
        CHECK(over->data_len == 0);
        // Data the request did not make room for is refused as malformed.
        auto no_room = co_await c->call(kBulkEcho, bytes(1), {}, 0, nullptr, Bulk{out, {}});
        REQUIRE(no_room);
        CHECK(no_room->status == EMSGSIZE);
        // Reply data only where a request asked for bulk: an old-style
        // request whose handler answers with data is malformed.
        auto plain = co_await c->call(kBulkEcho, bytes(1));
        if (plain) CHECK(plain->status == PFS_E_PROTO);
        // The server drops a connection after a malformed request; the next
        // call reconnects, and bulk data still round-trips.
        auto again = co_await c->call(kBulkEcho, Bytes(), {}, 0, nullptr, Bulk{{}, into});
        REQUIRE(again);
        CHECK(again->status == PFS_OK);
        CHECK(again->data_len == 0);
        c->close();
        f.server->stop();
    });
}

TEST_CASE("bulk data round-trips under frame MACs, over the data or not", "[rpc]") {
    // Both ends must agree on what the MACs cover, or the first frame with
    // data fails to verify and the connection drops.
    const auto wish = GENERATE(MacWish::if_required, MacWish::frames_and_data);
    const bool required = GENERATE(false, true);
    Fixture f;
    f.start_server(0, required);
    f.run([&]() -> awaitable<void> {
        ClientConfig cfg;
        cfg.macs = wish;
        auto c = f.client(kSecret, cfg);
        Bytes out(70000);
        for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<uint8_t>(i * 13 + 1);
        for (int round = 0; round < 3; ++round) {
            Bytes into(out.size() + 2, 0);
            auto r = co_await c->call(kBulkEcho, bytes(2, 9), {}, 0, nullptr, Bulk{out, into});
            REQUIRE(r);
            REQUIRE(r->status == PFS_OK);
            CHECK(r->body == bytes(2, 9));
            CHECK(r->data_len == out.size() + 2);
            CHECK(std::equal(out.begin(), out.end(), into.begin()));
            auto plain = co_await c->call(kEcho, bytes(0, 5));
            REQUIRE(plain);
            CHECK(plain->body == bytes(0, 5));
        }
        c->close();
        f.server->stop();
    });
}

TEST_CASE("endpoints parse with and without ports", "[rpc]") {
    CHECK(parse_endpoint("node1", 8008)->str() == "node1:8008");
    CHECK(parse_endpoint("node1:9000", 8008)->port == 9000);
    CHECK(parse_endpoint("[::1]:7000", 1)->host == "::1");
    CHECK_FALSE(parse_endpoint("node1:0", 1));
    CHECK_FALSE(parse_endpoint("node1:99999", 1));
    CHECK_FALSE(parse_endpoint(":80", 1));
    CHECK_FALSE(parse_endpoint("a:b", 1));
}
