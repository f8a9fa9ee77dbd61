// Every core: worker loops on threads of their own, an RpcServer spreading
// its connections over them, and one chunk store used from all of them at
// once, each loop through its own ring.
#include <catch2/catch.hpp>

#include <functional>
#include <future>
#include <map>
#include <set>

#include "byte_budget.hpp"
#include "chunk_store_fixture.hpp"
#include "rpc_client.hpp"
#include "rpc_server.hpp"
#include "worker_loops.hpp"

using namespace pfs;
using namespace pfs::test;
using namespace std::chrono_literals;

namespace {

constexpr uint16_t kWhere = 910;  // replies with the loop it ran on and the thread's id

const auth::Secret kSecret = auth::Secret::from_bytes(
    std::span(reinterpret_cast<const uint8_t*>("worker-loops-secret-0123456789"), 30));

// Runs body() on executor ex and waits here for it, at most 60 s.
template <class F>
void run_on(asio::any_io_executor ex, F&& body) {
    std::promise<void> done;
    auto finished = done.get_future();
    asio::co_spawn(ex, std::forward<F>(body), [&done](std::exception_ptr e) {
        if (e) done.set_exception(e);
        else done.set_value();
    });
    REQUIRE(finished.wait_for(60s) == std::future_status::ready);
    finished.get();
}

// An RpcServer on loopback spread over the main loop and 2 workers, stopped
// (and its loops halted) at the end of the test.
struct SpreadServer {
    asio::io_context io;
    WorkerLoops loops{2};
    RpcServer server{io, loopback(), kSecret};

    static ServerConfig loopback() {
        ServerConfig config;
        config.host = "127.0.0.1";
        return config;
    }
    SpreadServer() { server.spread_over(loops); }
    ~SpreadServer() {
        server.stop();
        loops.halt();
        loops.shutdown();
    }
};

// Six clients connected one after the other (the order they are accepted
// in), each then asking kWhere 20 times; the reply bodies, by client. Each
// client's kWhere notices are counted in notices; connected() runs before
// they hang up.
std::vector<std::vector<Bytes>> six_clients_ask(asio::io_context& io, uint16_t port, std::vector<int>& notices,
                                                const std::function<void()>& connected = {}) {
    std::vector<std::vector<Bytes>> replies(6);
    notices.assign(6, 0);
    run_coro(io, [&]() -> awaitable<void> {
        std::vector<std::shared_ptr<RpcClient>> clients;
        for (size_t i = 0; i < replies.size(); ++i) {
            clients.push_back(RpcClient::create(io.get_executor(), Endpoint{"127.0.0.1", port}, kSecret));
            clients.back()->on_notify([&notices, i](const Frame& f) {
                if (f.header.type == kWhere) ++notices[i];
            });
            auto pong = co_await clients.back()->call(PFS_MSG_PING, Bytes());
            REQUIRE(pong);
        }
        for (int round = 0; round < 20; ++round)
            for (size_t c = 0; c < clients.size(); ++c) {
                auto r = co_await clients[c]->call(kWhere, Bytes());
                REQUIRE(r);
                REQUIRE(r->status == PFS_OK);
                replies[c].push_back(r->body);
            }
        if (connected) connected();
        for (auto& c : clients) c->close();
        io.stop();  // the server's accept would keep run_coro's loop busy
    });
    return replies;
}

// How many clients each loop served, from byte `at` of every reply (the
// loop that served the connection), which must be the same for all of a
// client's replies.
std::map<uint8_t, int> clients_of_loop(const std::vector<std::vector<Bytes>>& replies, size_t at) {
    std::map<uint8_t, int> out;
    for (const auto& of_client : replies) {
        std::set<uint8_t> seen;
        for (const auto& body : of_client) {
            REQUIRE(body.size() > at);
            seen.insert(body[at]);
        }
        REQUIRE(seen.size() == 1);
        ++out[*seen.begin()];
    }
    return out;
}

}  // namespace

TEST_CASE("worker loops: each runs on its own thread and knows its index", "[loops]") {
    WorkerLoops loops(3);
    REQUIRE(loops.size() == 3);
    CHECK(WorkerLoops::current() == 0);
    std::set<std::thread::id> threads{std::this_thread::get_id()};
    for (unsigned i = 0; i < loops.size(); ++i) {
        unsigned seen = 99;
        std::thread::id thread;
        run_on(loops.executor(i), [&]() -> awaitable<void> {
            seen = WorkerLoops::current();
            thread = std::this_thread::get_id();
            co_return;
        });
        CHECK(seen == i + 1);
        threads.insert(thread);
    }
    CHECK(threads.size() == 4);
    loops.halt();
    loops.shutdown();
}

TEST_CASE("rpc: connections are spread over the loops and each stays on one", "[rpc][loops]") {
    SpreadServer spread;
    asio::io_context& io = spread.io;
    RpcServer& server = spread.server;
    server.handle(kWhere, [](Request&) -> awaitable<Reply> {
        co_return Reply::ok(Bytes{static_cast<uint8_t>(WorkerLoops::current())});
    }, PFS_SENT_BY_ANY);
    auto port = server.start();
    REQUIRE(port);

    // Six connections: two to each loop, the main loop's among them.
    std::vector<int> notices;
    auto replies = six_clients_ask(io, *port, notices, [&] {
        CHECK(server.connections() == 6);
        CHECK(server.unauthenticated() == 0);
    });
    CHECK(clients_of_loop(replies, 0) == std::map<uint8_t, int>{{0, 2}, {1, 2}, {2, 2}});
    // PING and the handlers were counted wherever they ran.
    auto stats = server.stats();
    auto where = std::find_if(stats.begin(), stats.end(), [](const MsgStats& m) { return m.type == kWhere; });
    REQUIRE(where != stats.end());
    CHECK(where->requests == 120);
}

TEST_CASE("rpc: handlers_on runs every handler on one loop, the connections spread", "[rpc][loops]") {
    SpreadServer spread;
    asio::io_context& io = spread.io;
    WorkerLoops& loops = spread.loops;
    RpcServer& server = spread.server;
    server.handlers_on(io.get_executor());
    // Which loop serves the connection (0: main), which one ran the handler;
    // handled one at a time, as pfs-meta's namespace is.
    auto loop_of = [&](const std::shared_ptr<Channel>& conn) -> uint8_t {
        for (unsigned i = 0; i < loops.size(); ++i)
            if (conn->executor() == loops.executor(i)) return static_cast<uint8_t>(i + 1);
        return 0;
    };
    int handled = 0;  // touched by the handlers alone: the main loop's
    server.handle(kWhere, [&](Request& req) -> awaitable<Reply> {
        ++handled;
        // A notice from the handler's loop to the connection's.
        Frame notice{make_header(kWhere, PFS_FLAG_NOTIFY), Bytes{7}};
        asio::dispatch(req.conn->executor(), [conn = req.conn, notice] { conn->send(notice); });
        co_return Reply::ok(Bytes{loop_of(req.conn), static_cast<uint8_t>(WorkerLoops::current())});
    }, PFS_SENT_BY_ANY);
    auto port = server.start();
    REQUIRE(port);

    std::vector<int> notices;
    auto replies = six_clients_ask(io, *port, notices);
    CHECK(handled == 120);
    // Every notice reached its client (sent from the handler's loop on the
    // connection's; that it goes out ahead of the reply follows from both
    // being queued there in turn, which a client cannot observe: RpcClient
    // hands a notice read right after a reply to on_notify before the
    // caller resumes).
    CHECK(notices == std::vector<int>(6, 20));
    CHECK(clients_of_loop(replies, 1) == std::map<uint8_t, int>{{0, 6}});  // where the handlers ran
    CHECK(clients_of_loop(replies, 0) == std::map<uint8_t, int>{{0, 2}, {1, 2}, {2, 2}});
}

TEST_CASE("rpc: a route's decoder runs on the connection's loop, its handler on handlers_on's", "[rpc][loops]") {
    SpreadServer spread;
    RpcServer& server = spread.server;
    server.handlers_on(spread.io.get_executor());
    server.handle(
        kWhere,
        [&](Request& req) -> awaitable<Reply> {
            const auto* decoded_on = std::any_cast<uint8_t>(&req.decoded);
            if (!decoded_on) co_return Reply::fail(EINVAL, "not decoded ahead of the handler");
            uint8_t conn_loop = 0;
            for (unsigned i = 0; i < spread.loops.size(); ++i)
                if (req.conn->executor() == spread.loops.executor(i)) conn_loop = static_cast<uint8_t>(i + 1);
            co_return Reply::ok(Bytes{conn_loop, *decoded_on, static_cast<uint8_t>(WorkerLoops::current())});
        },
        PFS_SENT_BY_ANY,
        [](std::span<const uint8_t>) -> std::any { return static_cast<uint8_t>(WorkerLoops::current()); });
    auto port = server.start();
    REQUIRE(port);

    std::vector<int> notices;
    auto replies = six_clients_ask(spread.io, *port, notices);
    CHECK(clients_of_loop(replies, 0) == std::map<uint8_t, int>{{0, 2}, {1, 2}, {2, 2}});
    // Decoded where the connection is served, handled on the main loop.
    for (const auto& of_client : replies)
        for (const auto& body : of_client) {
            REQUIRE(body.size() == 3);
            CHECK(body[1] == body[0]);
            CHECK(body[2] == 0);
        }
}

TEST_CASE("rpc: request_body takes what the decoder made, once, and decodes the payload otherwise", "[rpc]") {
    const pfs_entry_id sent{7, 1, 1};
    Frame frame{make_header(PFS_MSG_GETATTR, 0), *encode(pfs_x_entry_id, sent)};
    Request req{frame, nullptr, auth::Role::client, {}, {}};
    // Ahead of the handler the decoder made a body unlike the payload's: that one is taken.
    req.decoded = DecodedBody<pfs_entry_id>{pfs_x_entry_id, pfs_entry_id{9, 1, 2}};
    auto early = request_body(req, pfs_x_entry_id);
    REQUIRE(early);
    CHECK(early->ino == 9);
    CHECK_FALSE(req.decoded.has_value());
    auto again = request_body(req, pfs_x_entry_id);
    REQUIRE(again);
    CHECK(again->ino == 7);
    // What the decoder made of a malformed payload is the handler's error.
    Frame bad{make_header(PFS_MSG_GETATTR, 0), Bytes{1, 2, 3}};
    Request bad_req{bad, nullptr, auth::Role::client, {}, {}};
    bad_req.decoded = decoder_of(pfs_x_entry_id)(bad.payload);
    CHECK_FALSE(request_body(bad_req, pfs_x_entry_id));
}

TEST_CASE("chunks: one store used from several loops at once, each through its ring", "[chunks][loops]") {
    // Few descriptors, so the loops evict each other's while they write.
    ChunkStoreOptions options;
    options.max_open_files = 3;
    TempDir dir;
    WorkerLoops loops(3);
    std::vector<std::unique_ptr<Uring>> rings;
    std::vector<Uring*> ring_of_loop;
    for (unsigned i = 0; i <= loops.size(); ++i) {
        rings.push_back(make_ring());
        ring_of_loop.push_back(rings.back().get());
    }
    auto opened = ChunkStore::open(ring_of_loop, dir.path(), options);
    REQUIRE(opened);
    ChunkStore& store = **opened;

    // Each loop writes its own 64 KiB slice of each of 8 chunks, while the
    // last loop also creates and unlinks chunks of its own. (Catch's macros
    // are for the main thread only: the loops report what went wrong.)
    constexpr size_t kSlice = 64u << 10;
    constexpr uint64_t kChunks = 8;
    std::vector<std::promise<std::string>> done(loops.size());
    for (unsigned l = 0; l < loops.size(); ++l) {
        asio::co_spawn(
            loops.executor(l),
            [&, l]() -> awaitable<std::string> {
                for (int pass = 0; pass < 4; ++pass)
                    for (uint64_t c = 0; c < kChunks; ++c) {
                        const Bytes data = random_bytes(kSlice, static_cast<uint32_t>(c * 16 + l));
                        auto written = co_await store.write(entry(c + 1), l * kSlice, data);
                        if (!written) co_return "write: " + written.error().message;
                        if (*written != kSlice) co_return "short write";
                        if (l + 1 == loops.size()) {
                            auto scratch = co_await store.write(entry(1000 + c), 0, data);
                            if (!scratch) co_return "write: " + scratch.error().message;
                            auto gone = co_await store.unlink(entry(1000 + c));
                            if (!gone) co_return "unlink: " + gone.error().message;
                        }
                    }
                co_return "";
            },
            [&done, l](std::exception_ptr e, std::string failure) {
                if (e) done[l].set_exception(e);
                else done[l].set_value(std::move(failure));
            });
    }
    for (unsigned l = 0; l < loops.size(); ++l) {
        auto f = done[l].get_future();
        REQUIRE(f.wait_for(60s) == std::future_status::ready);
        INFO("loop " << l + 1);
        CHECK(f.get() == "");
    }
    CHECK(store.open_files() <= 3);

    // Read back on the main thread (ring 0): every slice as its loop wrote it.
    asio::io_context io;
    run_coro(io, [&]() -> awaitable<void> {
        for (uint64_t c = 0; c < kChunks; ++c) {
            auto got = co_await store.read(entry(c + 1), 0, static_cast<uint32_t>(loops.size() * kSlice));
            REQUIRE(got);
            REQUIRE(got->size() == loops.size() * kSlice);
            for (unsigned l = 0; l < loops.size(); ++l) {
                const Bytes want = random_bytes(kSlice, static_cast<uint32_t>(c * 16 + l));
                INFO("chunk " << c + 1 << ", slice of loop " << l);
                CHECK(std::equal(want.begin(), want.end(), got->begin() + static_cast<long>(l * kSlice)));
            }
            auto scratch = co_await store.stat(entry(1000 + c));
            REQUIRE(scratch);
            CHECK(scratch->size == 0);  // unlinked: as if never written
        }
    });
    CHECK_FALSE(std::filesystem::exists(dir.path() / ChunkStore::chunk_path(entry(1000))));
    loops.halt();
    loops.shutdown();
}

TEST_CASE("byte budget: loops share one budget, never exceed it, and all get their turn", "[loops]") {
    WorkerLoops loops(3);
    auto budget = std::make_shared<ByteBudget>(10);
    std::atomic<bool> exceeded{false};
    std::vector<std::promise<size_t>> done(loops.size());
    for (unsigned l = 0; l < loops.size(); ++l) {
        asio::co_spawn(
            loops.executor(l),
            [&, l]() -> awaitable<size_t> {
                size_t granted = 0;
                std::mt19937 rng(l);
                for (int i = 0; i < 300; ++i) {
                    const size_t n = 1 + rng() % 6;
                    auto lease = co_await ByteBudget::acquire(budget, n);
                    if (!lease || lease->bytes() != n) co_return granted;
                    if (budget->used() > budget->limit()) exceeded = true;
                    ++granted;
                    // Held across a turn of the loop, so the others wait for it.
                    co_await asio::post(co_await asio::this_coro::executor, asio::use_awaitable);
                }
                co_return granted;
            },
            [&done, l](std::exception_ptr e, size_t granted) {
                if (e) done[l].set_exception(e);
                else done[l].set_value(granted);
            });
    }
    for (auto& d : done) {
        auto f = d.get_future();
        REQUIRE(f.wait_for(60s) == std::future_status::ready);
        CHECK(f.get() == 300);
    }
    CHECK_FALSE(exceeded);
    CHECK(budget->used() == 0);
    CHECK(budget->waiting() == 0);
    loops.halt();
    loops.shutdown();
}

TEST_CASE("byte budget: a wait past its deadline gives up and leaves the queue", "[loops]") {
    asio::io_context io;
    auto budget = std::make_shared<ByteBudget>(8);
    run_coro(io, [&]() -> awaitable<void> {
        auto all = co_await ByteBudget::acquire(budget, 8);
        REQUIRE(all);
        auto late = co_await ByteBudget::acquire(budget, 1, std::chrono::steady_clock::now() + 50ms);
        CHECK_FALSE(late);
        CHECK(budget->waiting() == 0);
        all->release();
        CHECK(budget->used() == 0);
        auto now = co_await ByteBudget::acquire(budget, 3);
        REQUIRE(now);
        CHECK(budget->used() == 3);
    });
}
