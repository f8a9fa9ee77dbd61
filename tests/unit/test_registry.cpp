#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "registry.hpp"
#include "temp_dir.hpp"
#include "wire.hpp"

using namespace pfs;
using namespace pfs::mgmtd;
using namespace std::chrono_literals;
using pfs::test::TempDir;

namespace {

pfs_register_node node_req(uint16_t type, const char* alias, uint32_t id = 0) {
    pfs_register_node r{};
    r.node_id = id;
    r.node_type = type;
    r.port = 8003;
    set_field(r.alias, alias);
    set_field(r.host, "10.0.0.1");
    return r;
}

pfs_register_target target_req(uint32_t node, const char* path, uint32_t id = 0) {
    pfs_register_target r{};
    r.node_id = node;
    r.target_id = id;
    set_field(r.path, path);
    return r;
}

Settings settings() {
    Settings s;
    s.probably_offline_after = 1000ms;
    s.offline_after = 3000ms;
    return s;
}

}  // namespace

TEST_CASE("registry assigns stable ids and keeps them across reopen", "[mgmtd]") {
    TempDir dir;
    auto file = dir.path() / "mgmtd.json";
    auto t0 = Clock::now();
    uint32_t storage, meta, target_a, target_b;
    {
        auto reg = Registry::open(file, settings(), t0);
        REQUIRE(reg);
        storage = reg->register_node(node_req(PFS_NODE_STORAGE, "s1"), t0)->node_id;
        meta = reg->register_node(node_req(PFS_NODE_META, "m1"), t0)->node_id;
        CHECK(storage != meta);
        target_a = reg->register_target(target_req(storage, "/data/a"))->target_id;
        target_b = reg->register_target(target_req(storage, "/data/b"))->target_id;
        CHECK(target_a != target_b);
        // Registering again with the known ids changes nothing.
        CHECK(reg->register_node(node_req(PFS_NODE_STORAGE, "s1", storage), t0)->node_id == storage);
        CHECK(reg->register_target(target_req(storage, "/data/a", target_a))->target_id == target_a);
        auto pool = reg->create_pool(0, "fast");
        REQUIRE(pool);
        REQUIRE(reg->assign_pool(target_b, *pool));
        REQUIRE(reg->set_consistency(target_a, PFS_CONS_NEEDS_RESYNC));
    }
    auto reg = Registry::open(file, settings(), t0 + 10s);
    REQUIRE(reg);
    REQUIRE(reg->nodes().size() == 2);
    CHECK(reg->nodes().at(storage).alias == "s1");
    CHECK(reg->targets().at(target_a).consistency == PFS_CONS_NEEDS_RESYNC);
    CHECK(reg->targets().at(target_b).pool_id != PFS_DEFAULT_POOL_ID);
    CHECK(reg->pool_infos().size() == 2);
    // A node that lost its id file gets its old id back by alias.
    CHECK(reg->register_node(node_req(PFS_NODE_STORAGE, "s1"), t0)->node_id == storage);
    // New ids never reuse old ones.
    CHECK(reg->register_node(node_req(PFS_NODE_STORAGE, "s2"), t0)->node_id > meta);
}

TEST_CASE("registry refuses conflicting registrations", "[mgmtd]") {
    TempDir dir;
    auto t0 = Clock::now();
    auto reg = Registry::open(dir.path() / "m.json", settings(), t0);
    REQUIRE(reg);
    auto s1 = reg->register_node(node_req(PFS_NODE_STORAGE, "s1"), t0)->node_id;
    auto m1 = reg->register_node(node_req(PFS_NODE_META, "m1"), t0)->node_id;
    CHECK(reg->register_node(node_req(PFS_NODE_STORAGE, "s1", s1 + 50), t0).error().code == -EEXIST);
    CHECK(reg->register_node(node_req(PFS_NODE_STORAGE, "other", m1), t0).error().code == -EEXIST);
    CHECK(reg->register_node(node_req(PFS_NODE_STORAGE, "bad alias"), t0).error().code == -EINVAL);
    CHECK(reg->register_node(node_req(PFS_NODE_MGMT, "x"), t0).error().code == -EINVAL);
    CHECK(reg->register_target(target_req(999, "/x")).error().code == PFS_E_UNKNOWN_NODE);
    CHECK(reg->register_target(target_req(m1, "/x")).error().code == -EINVAL);
    auto t = reg->register_target(target_req(s1, "/x"))->target_id;
    auto s2 = reg->register_node(node_req(PFS_NODE_STORAGE, "s2"), t0)->node_id;
    CHECK(reg->register_target(target_req(s2, "/y", t)).error().code == -EEXIST);
    CHECK(reg->create_pool(0, "default").error().code == -EEXIST);
    CHECK(reg->assign_pool(t, 77).error().code == PFS_E_UNKNOWN_POOL);
    CHECK(reg->assign_pool(555, PFS_DEFAULT_POOL_ID).error().code == PFS_E_UNKNOWN_TARGET);
    pfs_target_capacity foreign{t, {100, 50, 10, 5}};
    CHECK(reg->heartbeat(s2, std::span(&foreign, 1), t0).error().code == PFS_E_UNKNOWN_TARGET);
    CHECK(reg->heartbeat(4242, {}, t0).error().code == PFS_E_UNKNOWN_NODE);
}

TEST_CASE("reachability follows heartbeat age and changes are reported once", "[mgmtd]") {
    TempDir dir;
    auto t0 = Clock::now();
    auto reg = Registry::open(dir.path() / "m.json", settings(), t0);
    REQUIRE(reg);
    auto s1 = reg->register_node(node_req(PFS_NODE_STORAGE, "s1"), t0)->node_id;
    auto s2 = reg->register_node(node_req(PFS_NODE_STORAGE, "s2"), t0)->node_id;
    reg->take_changes();
    reg->evaluate(t0);
    CHECK(reg->reachability(s1, t0 + 999ms) == PFS_REACH_ONLINE);
    CHECK(reg->reachability(s1, t0 + 1000ms) == PFS_REACH_PROBABLY_OFFLINE);
    CHECK(reg->reachability(s1, t0 + 3000ms) == PFS_REACH_OFFLINE);

    REQUIRE(reg->heartbeat(s2, {}, t0 + 900ms));
    auto v = reg->version();
    CHECK((reg->evaluate(t0 + 1100ms) & PFS_CHANGE_STATES) != 0);  // s1 probably offline
    CHECK(reg->version() > v);
    CHECK(reg->evaluate(t0 + 1200ms) == 0);                            // nothing new
    CHECK(reg->node_infos(0, t0 + 1200ms)[1].reachability == PFS_REACH_ONLINE);
    CHECK((reg->evaluate(t0 + 3100ms) & PFS_CHANGE_STATES) != 0);      // both further down
    REQUIRE(reg->heartbeat(s1, {}, t0 + 3200ms));
    CHECK((reg->evaluate(t0 + 3200ms) & PFS_CHANGE_STATES) != 0);      // s1 back
    CHECK(reg->reachability(s1, t0 + 3200ms) == PFS_REACH_ONLINE);
}

TEST_CASE("capacity classes follow thresholds", "[mgmtd]") {
    CHECK(capacity_class(50, 100, 10, 3) == PFS_CAP_NORMAL);
    CHECK(capacity_class(10, 100, 10, 3) == PFS_CAP_NORMAL);
    CHECK(capacity_class(9, 100, 10, 3) == PFS_CAP_LOW);
    CHECK(capacity_class(2, 100, 10, 3) == PFS_CAP_EMERGENCY);
    CHECK(capacity_class(0, 0, 10, 3) == PFS_CAP_NORMAL);

    TempDir dir;
    auto t0 = Clock::now();
    auto reg = Registry::open(dir.path() / "m.json", settings(), t0);
    auto s1 = reg->register_node(node_req(PFS_NODE_STORAGE, "s1"), t0)->node_id;
    auto t = reg->register_target(target_req(s1, "/a"))->target_id;
    reg->take_changes();
    reg->evaluate(t0);
    pfs_target_capacity cap{t, {1000, 500, 1000, 20}};  // inodes at 2%
    REQUIRE(reg->heartbeat(s1, std::span(&cap, 1), t0));
    CHECK((reg->evaluate(t0) & PFS_CHANGE_CAPACITY) != 0);
    auto info = reg->target_infos(t0).at(0);
    CHECK(info.space_class == PFS_CAP_NORMAL);
    CHECK(info.inode_class == PFS_CAP_EMERGENCY);
    CHECK(info.cap.bytes_free == 500);
}

TEST_CASE("clients are forgotten after a long absence and not persisted", "[mgmtd]") {
    TempDir dir;
    auto t0 = Clock::now();
    auto file = dir.path() / "m.json";
    auto reg = Registry::open(file, settings(), t0);
    auto c = reg->register_node(node_req(PFS_NODE_CLIENT, "c1"), t0)->node_id;
    CHECK(reg->node_infos(PFS_NODE_CLIENT, t0).size() == 1);
    CHECK((reg->evaluate(t0 + 7s) & PFS_CHANGE_NODES) != 0);
    CHECK(reg->nodes().count(c) == 0);
    auto again = reg->register_node(node_req(PFS_NODE_CLIENT, "c2"), t0);
    REQUIRE(again);
    auto reopened = Registry::open(file, settings(), t0);
    CHECK(reopened->node_infos(PFS_NODE_CLIENT, t0).empty());
}

TEST_CASE("a change that cannot be saved is refused and rolled back", "[mgmtd]") {
    TempDir dir;
    auto t0 = Clock::now();
    auto file = dir.path() / "m.json";
    auto reg = Registry::open(file, settings(), t0);
    REQUIRE(reg);
    // A directory where the temporary file must go makes every save fail.
    std::filesystem::create_directory(dir.path() / "m.json.tmp");
    auto r = reg->register_node(node_req(PFS_NODE_STORAGE, "s1"), t0);
    CHECK_FALSE(r);
    CHECK(reg->nodes().empty());
    CHECK_FALSE(reg->create_pool(0, "p"));
    CHECK(reg->pool_infos().size() == 1);
    std::filesystem::remove(dir.path() / "m.json.tmp");
    CHECK(reg->register_node(node_req(PFS_NODE_STORAGE, "s1"), t0));
}

TEST_CASE("a corrupt or inconsistent state file is a startup error", "[mgmtd]") {
    TempDir dir;
    auto file = dir.path() / "m.json";
    {
        std::ofstream f(file);
        f << "{ not json";
    }
    auto reg = Registry::open(file, settings(), Clock::now());
    REQUIRE_FALSE(reg);
    CHECK(reg.error().message.find("corrupt") != std::string::npos);
}
