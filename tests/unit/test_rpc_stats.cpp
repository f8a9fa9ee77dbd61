// Request statistics of RpcServer (GET_STATS) over real loopback sockets,
// and the codecs of the operations messages (GET_STATS, CHUNK_LIST).
#include <catch2/catch.hpp>

#include "rpc_client.hpp"
#include "rpc_server.hpp"
#include "stats_sample.hpp"

using namespace pfs;
using namespace std::chrono_literals;

namespace {

const auth::Secret kSecret = auth::Secret::from_bytes(
    std::span(reinterpret_cast<const uint8_t*>("stats-secret-0123456789abcdef"), 29));

constexpr uint16_t kEcho = 900;
constexpr uint16_t kFail = 901;

// Encodes with the shared codec, decodes again, and refuses every strict prefix.
template <class M>
void round_trip(int (*xfer)(pfs_xdr*, M*), const M& msg) {
    auto bytes = encode(xfer, msg);
    REQUIRE(bytes);
    auto back = decode(*bytes, xfer);
    REQUIRE(back);
    CHECK(*encode(xfer, *back) == *bytes);
    for (size_t n = 0; n < bytes->size(); ++n) CHECK_FALSE(decode(std::span(bytes->data(), n), xfer));
}

}  // namespace

TEST_CASE("stats: every daemon counts requests, errors and bytes per message type", "[rpc][stats]") {
    asio::io_context io;
    ServerConfig config;
    config.host = "127.0.0.1";
    RpcServer server(io, config, kSecret);
    server.set_identity(7, PFS_NODE_STORAGE);
    server.handle(kEcho, [](Request& req) -> awaitable<Reply> { co_return Reply::ok(req.frame.payload); }, PFS_SENT_BY_ANY);
    server.handle(kFail, [](Request&) -> awaitable<Reply> { co_return Reply::fail(-ENOENT, "nope"); }, PFS_SENT_BY_ANY);
    auto port = server.start();
    REQUIRE(port);

    bool done = false;
    asio::co_spawn(io, [&]() -> awaitable<void> {
        auto c = RpcClient::create(io.get_executor(), Endpoint{"127.0.0.1", *port}, kSecret);
        for (int i = 0; i < 5; ++i) {
            auto r = co_await c->call(kEcho, Bytes(1000, 7));
            REQUIRE(r);
        }
        auto failed = co_await c->call(kFail, Bytes(10));
        REQUIRE(failed);
        auto unknown = co_await c->call(4242, Bytes(3));
        REQUIRE(unknown);
        CHECK(unknown->status == PFS_E_UNKNOWN_MSG);

        auto first = co_await call_ok(*c, PFS_MSG_GET_STATS, Bytes{});
        REQUIRE(first);
        auto s = decode_stats(*first);
        REQUIRE(s);
        CHECK(s->head.node_id == 7);
        CHECK(s->head.node_type == PFS_NODE_STORAGE);
        const pfs_msg_stats* echo = s->type(kEcho);
        REQUIRE(echo);
        CHECK(echo->requests == 5);
        CHECK(echo->errors == 0);
        // A frame is the 48-byte header and the payload; a reply's payload is
        // the status (4 bytes) and the body.
        CHECK(echo->bytes_in == 5 * (PFS_HEADER_SIZE + 1000));
        CHECK(echo->bytes_out == 5 * (PFS_HEADER_SIZE + 4 + 1000));
        const pfs_msg_stats* fail = s->type(kFail);
        REQUIRE(fail);
        CHECK(fail->requests == 1);
        CHECK(fail->errors == 1);
        CHECK(fail->bytes_in == PFS_HEADER_SIZE + 10);
        const pfs_msg_stats* other = s->type(0);
        REQUIRE(other);
        CHECK(other->requests == 1);
        CHECK(other->errors == 1);
        // Watching does not count: no GET_STATS row, before or after.
        CHECK(s->type(PFS_MSG_GET_STATS) == nullptr);
        CHECK(s->type(PFS_MSG_PING) == nullptr);  // served, but never asked
        auto second_body = co_await call_ok(*c, PFS_MSG_GET_STATS, Bytes{});
        REQUIRE(second_body);
        auto second = decode_stats(*second_body);
        REQUIRE(second);
        CHECK(second->type(PFS_MSG_GET_STATS) == nullptr);
        CHECK(second->type(kEcho)->requests == 5);
        CHECK(second->head.uptime_ms >= s->head.uptime_ms);
        c->close();
        done = true;
        io.stop();  // the server would accept forever
    }, [](std::exception_ptr e) { if (e) std::rethrow_exception(e); });
    io.run_for(20s);
    REQUIRE(done);
    CHECK(server.stats().size() == 3);
}

TEST_CASE("stats: GET_STATS and CHUNK_LIST codecs", "[proto][stats]") {
    round_trip(pfs_x_msg_stats, pfs_msg_stats{PFS_MSG_CHUNK_WRITE, 10, 2, 1ull << 40, 480});
    round_trip(pfs_x_chunk_list, pfs_chunk_list{101, pfs_chunk_cookie{255, ~0ull}, PFS_CHUNK_LIST_MAX});
    round_trip(pfs_x_chunk_entry, pfs_chunk_entry{pfs_entry_id{1ull << 63, 3, 9}, 12345});
    pfs_chunk_page page{pfs_chunk_cookie{256, 0}, 1, 0};
    round_trip(pfs_x_chunk_page, page);

    // What no server may act on, or no client believe.
    CHECK_FALSE(decode(*encode(pfs_x_msg_stats, pfs_msg_stats{1, 1, 2, 0, 0}), pfs_x_msg_stats));  // errors > requests
    CHECK_FALSE(decode(*encode(pfs_x_chunk_list, pfs_chunk_list{0, {}, 10}), pfs_x_chunk_list));   // no target
    CHECK_FALSE(decode(*encode(pfs_x_chunk_list, pfs_chunk_list{5, {}, 0}), pfs_x_chunk_list));    // no entries
    CHECK_FALSE(decode(*encode(pfs_x_chunk_list, pfs_chunk_list{5, {}, PFS_CHUNK_LIST_MAX + 1}), pfs_x_chunk_list));
    auto eof2 = *encode(pfs_x_chunk_page, page);
    eof2[12] = 2;  // eof is 0 or 1
    CHECK_FALSE(decode(eof2, pfs_x_chunk_page));

    // A count the bytes left cannot hold is refused before anything is allocated.
    pfs_stats head{1, PFS_NODE_META, 5, 3};
    auto list_of = [&](uint32_t claimed) {
        head.count = claimed;
        return encode_payload([&](pfs_xdr* x) {
            pfs_x_stats(x, &head);
            for (uint16_t t = 0; t < 3; ++t) {
                pfs_msg_stats m{t, 1, 0, 2, 3};
                pfs_x_msg_stats(x, &m);
            }
            pfs_transport_stats none{};
            pfs_x_transport_stats(x, &none);
        });
    };
    auto three = list_of(3);
    REQUIRE(three);
    auto decoded = decode_stats(*three);
    REQUIRE(decoded);
    CHECK(decoded->types.size() == 3);
    // Four claimed, three there: the transport block after them cannot
    // pass for the fourth.
    CHECK_FALSE(decode_stats(*list_of(4)));
    pfs_xdr x;
    pfs_stats h{};
    // Ten claimed: more than the bytes left could hold, refused at the count.
    auto ten = list_of(10);
    REQUIRE(ten);
    pfs_xdr_init_decode(&x, ten->data(), static_cast<uint32_t>(ten->size()));
    CHECK(pfs_x_stats(&x, &h) == -EBADMSG);
    // More types than any server has: refused even when the bytes are there.
    head.count = 0;
    auto over = encode(pfs_x_stats, head);
    REQUIRE(over);
    const uint32_t too_many_types = PFS_STATS_TYPES_MAX + 1;
    for (int i = 0; i < 4; ++i) (*over)[14 + i] = static_cast<uint8_t>(too_many_types >> (8 * i));
    over->resize(over->size() + size_t{too_many_types} * PFS_MSG_STATS_MIN_SIZE);
    pfs_xdr_init_decode(&x, over->data(), static_cast<uint32_t>(over->size()));
    CHECK(pfs_x_stats(&x, &h) == -EBADMSG);
}
