#include <catch2/catch.hpp>

#include <map>

#include "target_chooser.hpp"

using namespace pfs::meta;

namespace {

pfs_target_info target(uint32_t id, uint32_t pool = 1, uint8_t reach = PFS_REACH_ONLINE,
                       uint8_t cons = PFS_CONS_GOOD, uint8_t space = PFS_CAP_NORMAL) {
    pfs_target_info t{};
    t.target_id = id;
    t.pool_id = pool;
    t.reachability = reach;
    t.consistency = cons;
    t.space_class = space;
    return t;
}

StripePattern pattern(uint32_t n, uint32_t pool = 1) {
    StripePattern p;
    p.num_targets = n;
    p.pool_id = pool;
    return p;
}

}  // namespace

TEST_CASE("new files spread over all usable targets of their pool", "[chooser]") {
    TargetChooser chooser;
    std::vector<pfs_target_info> map;
    for (uint32_t id = 1; id <= 4; ++id) map.push_back(target(id));
    map.push_back(target(9, 2));  // another pool
    chooser.update(map);
    std::map<uint32_t, int> first_target_use;
    for (int i = 0; i < 400; ++i) {
        auto chosen = chooser.choose(pattern(2));
        REQUIRE(chosen);
        REQUIRE(chosen->size() == 2);
        CHECK((*chosen)[0] != (*chosen)[1]);
        for (auto id : *chosen) CHECK(id != 9);
        ++first_target_use[(*chosen)[0]];
    }
    REQUIRE(first_target_use.size() == 4);
    for (auto& [id, uses] : first_target_use) CHECK(uses == 100);
}

TEST_CASE("offline, unhealthy and full targets are avoided", "[chooser]") {
    TargetChooser chooser;
    chooser.update({target(1, 1, PFS_REACH_PROBABLY_OFFLINE), target(2, 1, PFS_REACH_ONLINE, PFS_CONS_NEEDS_RESYNC),
                    target(3, 1, PFS_REACH_ONLINE, PFS_CONS_GOOD, PFS_CAP_EMERGENCY),
                    target(4, 1, PFS_REACH_ONLINE, PFS_CONS_GOOD, PFS_CAP_LOW), target(5)});
    for (int i = 0; i < 10; ++i) {
        auto one = chooser.choose(pattern(1));
        REQUIRE(one);
        CHECK(*one == std::vector<uint32_t>{5});  // normal capacity first
    }
    auto three = chooser.choose(pattern(3));
    REQUIRE(three);
    CHECK(*three == std::vector<uint32_t>{5, 4, 3});  // then low, then emergency
    auto many = chooser.choose(pattern(8));
    REQUIRE(many);
    CHECK(many->size() == 3);  // fewer targets than asked for: stripe over what there is
}

TEST_CASE("a pool without usable targets is ENOSPC", "[chooser]") {
    TargetChooser chooser;
    CHECK(chooser.choose(pattern(1)).error().code == -ENOSPC);
    chooser.update({target(1, 1, PFS_REACH_OFFLINE)});
    auto r = chooser.choose(pattern(1));
    REQUIRE_FALSE(r);
    CHECK(r.error().code == -ENOSPC);
    CHECK(chooser.choose(pattern(1, 7)).error().message.find("pool 7") != std::string::npos);
}
