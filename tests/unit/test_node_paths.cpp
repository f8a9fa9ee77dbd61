#include <catch2/catch.hpp>

#include <cstring>

#include "node_paths.hpp"
#include "asio.hpp"
#include "rdma/rails.hpp"

using namespace pfs;
using namespace pfs::client;
using namespace std::chrono_literals;

namespace {

PathView rdma_path(uint64_t bulk, uint32_t requests = 0, bool usable = true, bool near = true) {
    return PathView{true, usable, near, bulk, requests};
}

PathView tcp_path() { return PathView{false, true, true, 0, 0}; }

pfs_node_info node_with(std::initializer_list<const char*> rdma_addrs) {
    pfs_node_info n{};
    n.node_id = 7;
    n.node_type = PFS_NODE_STORAGE;
    std::strcpy(n.host, "192.0.2.10");
    n.port = 8010;
    for (const char* a : rdma_addrs) {
        auto& slot = n.addrs[n.naddrs++];
        slot.transport = PFS_TRANSPORT_RDMA;
        std::strcpy(slot.addr, a);
        slot.port = 8011;
    }
    return n;
}

}  // namespace

TEST_CASE("a request takes the RDMA path with the least bulk bytes, then requests, in flight", "[rails]") {
    std::vector<PathView> paths{rdma_path(4 << 20), rdma_path(1 << 20), rdma_path(1 << 20, 3), tcp_path()};
    CHECK(choose_path(paths) == 1u);
    paths[1].requests_in_flight = 5;  // same bytes: the fewer requests wins
    CHECK(choose_path(paths) == 2u);
    paths[0].bulk_in_flight = 0;
    CHECK(choose_path(paths) == 0u);
}

TEST_CASE("a rail near the asking CPU wins over a less loaded far one", "[rails]") {
    std::vector<PathView> paths{rdma_path(8 << 20, 4, true, true), rdma_path(0, 0, true, false)};
    CHECK(choose_path(paths) == 0u);
    paths[0].usable = false;  // ... unless it is down
    CHECK(choose_path(paths) == 1u);
}

TEST_CASE("with every RDMA path down a request goes by TCP, or nowhere when TCP is not allowed", "[rails]") {
    std::vector<PathView> paths{rdma_path(0, 0, false), tcp_path(), rdma_path(0, 0, false)};
    CHECK(choose_path(paths) == 1u);
    paths.erase(paths.begin() + 1);
    CHECK_FALSE(choose_path(paths).has_value());
    CHECK_FALSE(choose_path(std::vector<PathView>{}).has_value());
    // One RDMA path back: it wins over TCP whatever its load.
    std::vector<PathView> back{tcp_path(), rdma_path(64 << 20, 30)};
    CHECK(choose_path(back) == 1u);
}

TEST_CASE("a failed rail backs off 1 s doubling to 30 s", "[rails]") {
    std::chrono::milliseconds b{0};
    std::vector<long> seen;
    for (int i = 0; i < 8; ++i) {
        b = next_backoff(b);
        seen.push_back(static_cast<long>(b.count()));
    }
    CHECK(seen == std::vector<long>{1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000});
}

TEST_CASE("rails: an interface that does not exist or is named twice is refused with its name", "[rails]") {
    auto missing = rdma::Rails::parse("lo,pfs-no-such0");
    REQUIRE_FALSE(missing);
    CHECK(missing.error().code == -ENODEV);
    CHECK(missing.error().message.find("'pfs-no-such0' does not exist") != std::string::npos);
    auto twice = rdma::Rails::parse("lo:lo");
    REQUIRE_FALSE(twice);
    CHECK(twice.error().message.find("named twice") != std::string::npos);
    auto none = rdma::Rails::parse(" ");
    REQUIRE(none);
    CHECK((*none)->empty());
}

TEST_CASE("a path per rail to the server's address on the rail's subnet, TCP when allowed", "[rails]") {
    auto rails = rdma::Rails::parse("lo");  // 127.0.0.1/8 on every Linux
    REQUIRE(rails);
    REQUIRE((*rails)->size() == 1);
    CHECK((*rails)->rail_to("127.0.0.9") == 0u);
    CHECK_FALSE((*rails)->rail_to("10.1.2.3").has_value());
    CHECK((*rails)->usable(0));

    ClientConfig config;
    config.rails = *rails;
    auto eps = NodePaths::endpoints_of(node_with({"10.9.9.9", "127.0.0.2"}), config);
    REQUIRE(eps.size() == 2);
    CHECK(eps[0] == Endpoint{"127.0.0.2", 8011, true, "127.0.0.1"});
    CHECK(eps[1] == Endpoint{"192.0.2.10", 8010});

    // No rail reaches the server: one RDMA path where routing says.
    eps = NodePaths::endpoints_of(node_with({"10.9.9.9"}), config);
    REQUIRE(eps.size() == 2);
    CHECK(eps[0] == Endpoint{"10.9.9.9", 8011, true});

    config.transport = TransportChoice::rdma;
    eps = NodePaths::endpoints_of(node_with({"127.0.0.2"}), config);
    REQUIRE(eps.size() == 1);
    CHECK(eps[0].rdma);
    // RDMA alone, and the server offers none: no path at all.
    CHECK(NodePaths::endpoints_of(node_with({}), config).empty());

    config.transport = TransportChoice::tcp;
    eps = NodePaths::endpoints_of(node_with({"127.0.0.2"}), config);
    REQUIRE(eps.size() == 1);
    CHECK_FALSE(eps[0].rdma);
}

namespace {

struct PathsFixture {
    asio::io_context io;
    auth::Secret secret = auth::Secret::from_bytes(std::vector<uint8_t>(32, 7));

    std::unique_ptr<NodePaths> make(std::initializer_list<const char*> rdma_addrs, TransportChoice transport) {
        ClientConfig config;
        config.transport = transport;
        return std::make_unique<NodePaths>(io.get_executor(), node_with(rdma_addrs), secret, config, 1);
    }
};

}  // namespace

TEST_CASE("without rails: a path per RDMA address, each request on the least loaded", "[rails]") {
    PathsFixture f;
    auto paths = f.make({"192.0.2.1", "192.0.2.2"}, TransportChoice::rdma);
    REQUIRE(paths->size() == 2);
    NodePaths::Path* a = paths->choose();
    REQUIRE(a);
    {
        NodePaths::Use big(*paths, *a, 1 << 20);
        NodePaths::Path* b = paths->choose();
        REQUIRE(b);
        CHECK(b != a);
        NodePaths::Use small(*paths, *b, 4096);
        CHECK(paths->choose() == b);  // fewer bytes in flight
    }
    CHECK(paths->choose() == a);  // both idle again: the load went with the requests
}

TEST_CASE("a failed path backs off once per failure event and is probed by one request after", "[rails]") {
    PathsFixture f;
    auto paths = f.make({"192.0.2.1", "192.0.2.2"}, TransportChoice::rdma);
    NodePaths::Path* a = paths->choose();
    REQUIRE(a);
    // Three requests in flight on it fail together: one doubling.
    for (int i = 0; i < 3; ++i) paths->failed(*a, Error{-ECONNRESET, "lost"});
    CHECK(a->backoff == 1000ms);
    NodePaths::Path* b = paths->choose();
    REQUIRE(b);
    CHECK(b != a);
    CHECK(paths->other_way(*b) == false);  // a sits out its back-off

    // Its back-off over: one request probes it, the others keep away.
    a->retry_at = std::chrono::steady_clock::now() - 1ms;
    CHECK(paths->choose() == a);
    CHECK(a->probing);
    CHECK(paths->choose() == b);
    paths->failed(*a, Error{-ETIMEDOUT, "connect timed out"});  // the probe failed: an event of its own
    CHECK(a->backoff == 2000ms);
    CHECK_FALSE(a->probing);

    a->retry_at = std::chrono::steady_clock::now() - 1ms;
    CHECK(paths->choose() == a);
    paths->connected(*a, true);  // the probe made a connection
    CHECK(a->backoff == 0ms);
    CHECK_FALSE(a->probing);
    NodePaths::Use load(*paths, *b, 1 << 20);
    CHECK(paths->choose() == a);
}

TEST_CASE("the only way to a server is never left alone: its connections back off themselves", "[rails]") {
    PathsFixture f;
    auto paths = f.make({"192.0.2.1"}, TransportChoice::rdma);
    REQUIRE(paths->size() == 1);
    NodePaths::Path* only = paths->choose();
    REQUIRE(only);
    paths->failed(*only, Error{-ECONNRESET, "lost"});
    CHECK(only->backoff == 0ms);
    CHECK(paths->choose() == only);

    // With TCP allowed, TCP is another way: RDMA backs off and TCP carries on.
    auto with_tcp = f.make({"192.0.2.1"}, TransportChoice::automatic);
    REQUIRE(with_tcp->size() == 2);
    NodePaths::Path* rdma = with_tcp->choose();
    REQUIRE(rdma);
    REQUIRE(rdma->rdma());
    with_tcp->failed(*rdma, Error{-ECONNRESET, "lost"});
    NodePaths::Path* tcp = with_tcp->choose();
    REQUIRE(tcp);
    CHECK_FALSE(tcp->rdma());
}
