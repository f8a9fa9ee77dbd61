// pfs-ctl stats client reads pfs.ko's counters from /proc/self/mountstats.
// The unit-test binary does not link pfs-ctl: its (standard-library-only)
// parser is compiled here.
#include "../../utils/ctl/mountstats.cpp"

#include <catch2/catch.hpp>

using namespace pfs::ctl;

TEST_CASE("ctl mountstats: pfs mounts with their rail, transport and GPU counters, others left out", "[ctl]") {
    const char* text =
        "device /dev/vda mounted on / with fstype ext4\n"
        "device pfs mounted on /mnt/my\\040pfs with fstype pfs\n"
        "\trail pfsr0c: state up requests 12 bytes 4096 errors 0\n"
        "\trail pfsr1c: state down requests 3 bytes 100 errors 2\n"
        "\ttransport tcp: conns 2 requests 40 bulk_sent 0 bulk_received 0 registrations 0 registered_now 0\n"
        "\ttransport rdma: conns 4 requests 15 bulk_sent 3000 bulk_received 1196 registrations 9 registered_now -1\n"
        "\tgpu nvfs: state registered requests 8 bytes 8388608 errors 1 copies 0\n"
        "device nfs:/x mounted on /n with fstype nfs4 statvers=1.1\n"
        "\ttransport tcp: conns 9\n"
        "device h:8008 mounted on /p2 with fstype pfs\n"
        "\trail bad: requests twelve\n";
    auto mounts = parse_mountstats(text);
    REQUIRE(mounts.size() == 2);
    CHECK(mounts[0].device == "pfs");
    CHECK(mounts[0].mount_point == "/mnt/my pfs");
    REQUIRE(mounts[0].counters.size() == 5);
    CHECK(mounts[0].counters[1].kind == "rail");
    CHECK(mounts[0].counters[1].name == "pfsr1c");
    CHECK(mounts[0].counters[1].state == "down");
    CHECK(mounts[0].counters[1].values.at("errors") == 2);
    CHECK(mounts[0].counters[3].name == "rdma");
    CHECK(mounts[0].counters[3].values.at("bulk_received") == 1196);
    CHECK(mounts[0].counters[3].values.at("registered_now") == -1);
    CHECK(mounts[0].counters[4].kind == "gpu");
    CHECK(mounts[0].counters[4].state == "registered");
    CHECK(mounts[0].counters[4].values.at("bytes") == 8388608);
    CHECK(mounts[0].counters[4].values.at("copies") == 0);
    CHECK(mounts[1].mount_point == "/p2");
    CHECK(mounts[1].counters.empty());  // the malformed line is skipped
}
