// pfs-ctl fsck --readonly and --repair against real daemons: a file system with empty,
// small, multi-chunk, sparse, hard-linked and unlinked-but-open files is
// clean; chunk files planted behind the servers' backs are reported, each
// exactly once and nothing else; an unreachable storage server makes the
// check fail rather than pass.
#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "chunk_store.hpp"
#include "ctl_run.hpp"
#include "filesystem.hpp"
#include "fs_waits.hpp"
#include "test_cluster.hpp"

using namespace pfs;
using namespace pfs::client;
using pfs::test::TestCluster;
using pfs::test::pause;
using namespace std::chrono_literals;
using json = nlohmann::json;

namespace {

awaitable<Status> write_file(FileSystem& fs, const std::string& path, uint64_t offset, size_t length) {
    auto f = co_await fs.open(path, O_CREAT | O_WRONLY);
    if (!f) co_return f.error();
    Bytes data(length, 0x5a);
    Status st = ok_status();
    if (length > 0) {
        auto written = co_await fs.write(*f, offset, data);
        st = written;
    }
    auto closed = co_await fs.close(*f);
    co_return st ? closed : st;
}

std::string id_key(const json& id) {
    return std::to_string(id["ino"].get<uint64_t>()) + ":" + std::to_string(id["owner_node"].get<uint32_t>()) + ":" +
           std::to_string(id["generation"].get<uint32_t>());
}

std::string id_key(const pfs_entry_id& id) {
    return std::to_string(id.ino) + ":" + std::to_string(id.owner_node) + ":" + std::to_string(id.generation);
}

// Puts a chunk file where the target's ChunkStore keeps id's chunk.
std::filesystem::path plant(const std::filesystem::path& target_dir, const pfs_entry_id& id, size_t size) {
    const auto path = target_dir / ChunkStore::chunk_path(id);
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << std::string(size, 'x');
    return path;
}

}  // namespace

TEST_CASE("fsck: clean file system, planted orphan chunks, unreachable server", "[system][fsck]") {
    TestCluster tc;
    tc.start_mgmtd();
    tc.start_meta("m1");
    tc.start_storage("s1", 2);
    tc.start_storage("s2", 1);
    asio::io_context io;
    ClientConfig cfg;
    cfg.request_timeout = 3s;
    cfg.connect_timeout = 1s;
    Cluster cluster(io.get_executor(), tc.mgmtd(), tc.secret(), cfg);
    FileSystem fs(cluster, FileSystemOptions{0ms});

    bool ok = test::run(io, [&]() -> awaitable<void> {
        // (No co_await inside an if's expression statement: GCC 12 may
        // destroy that awaitable even when the branch is not taken.)
        const bool ready = co_await test::wait_ready(io, cluster, fs, 3);
        REQUIRE(ready);
        REQUIRE_OK(co_await fs.mkdir("/fsck"));
        std::map<uint32_t, std::filesystem::path> target_dirs;
        for (const auto& t : cluster.targets()) target_dirs[t.target_id] = std::string(t.path);

        // Every kind of file that has fewer chunk files than targets, or none.
        REQUIRE_OK(co_await fs.set_pattern("/fsck", pfs_pattern{64u << 10, 3, PFS_DEFAULT_POOL_ID, 0, 0}));
        REQUIRE_OK(co_await write_file(fs, "/fsck/empty", 0, 0));
        REQUIRE_OK(co_await write_file(fs, "/fsck/small", 0, 100));
        REQUIRE_OK(co_await write_file(fs, "/fsck/big", 0, (1u << 20) + 5));
        REQUIRE_OK(co_await write_file(fs, "/fsck/sparse", (5u << 20) + 3, 1));
        REQUIRE_OK(co_await write_file(fs, "/fsck/hole", 0, 0));
        REQUIRE_OK(co_await fs.truncate("/fsck/hole", 10u << 20));
        REQUIRE_OK(co_await fs.mkdir("/fsck/a"));
        REQUIRE_OK(co_await fs.mkdir("/fsck/a/b"));
        REQUIRE_OK(co_await fs.mkdir("/fsck/a/b/c"));
        REQUIRE_OK(co_await write_file(fs, "/fsck/a/b/c/deep", 70000, 70000));
        REQUIRE_OK(co_await fs.symlink("big", "/fsck/link"));
        REQUIRE_OK(co_await fs.link("/fsck/big", "/fsck/big2"));
        REQUIRE_OK(co_await fs.mkdir("/fsck/single"));
        REQUIRE_OK(co_await fs.set_pattern("/fsck/single", pfs_pattern{64u << 10, 1, PFS_DEFAULT_POOL_ID, 0, 0}));
        REQUIRE_OK(co_await write_file(fs, "/fsck/single/one", 0, 10));
        // Unlinked while open: its chunks stay until the close, and are no orphans.
        auto ghost = co_await fs.open("/fsck/ghost", O_CREAT | O_RDWR);
        REQUIRE_OK(ghost);
        REQUIRE_OK(co_await fs.write(*ghost, 0, Bytes(200000, 7)));
        REQUIRE_OK(co_await fs.unlink("/fsck/ghost"));

        json clean = fsck_json(tc, 0);
        CHECK(clean["clean"] == true);
        CHECK(clean["problems"].empty());
        CHECK(clean["directories"] == 6);  // /, fsck, a, b, c, single
        CHECK(clean["files"] == 8);        // big2 is big once more
        CHECK(clean["other_entries"] == 1);
        CHECK(clean["targets"] == 3);
        CHECK(clean["chunks"].get<int>() >= 8);
        auto text = ctl(tc, "fsck --readonly");
        CHECK(text.status == 0);
        CHECK(text.out.find("no problems found") != std::string::npos);

        // Planted: a chunk of an entry that never was, and a chunk of a
        // one-target file on a target its layout does not name.
        auto root = co_await fs.stat("/");
        REQUIRE_OK(root);
        const pfs_entry_id nobody{0xdead0001, root->id.owner_node, 7};
        const uint32_t first_target = target_dirs.begin()->first;
        auto nobody_chunk = plant(target_dirs[first_target], nobody, 4096);
        auto one = co_await fs.stat("/fsck/single/one");
        REQUIRE_OK(one);
        auto layout = co_await fs.layout("/fsck/single/one");
        REQUIRE_OK(layout);
        REQUIRE(layout->targets.size() == 1);
        uint32_t elsewhere = 0;
        for (const auto& [id, dir] : target_dirs)
            if (id != layout->targets[0]) elsewhere = id;
        auto misplaced_chunk = plant(target_dirs[elsewhere], one->id, 10);

        for (int round = 0; round < 2; ++round) {
            // The second time after the ghost's close removed its chunks.
            json found = fsck_json(tc, 1);
            CHECK(found["clean"] == false);
            std::map<std::string, json> by_entry;
            for (const auto& p : found["problems"]) by_entry[id_key(p["entry_id"])] = p;
            REQUIRE(found["problems"].size() == 2);
            REQUIRE(by_entry.count(id_key(nobody)) == 1);
            REQUIRE(by_entry.count(id_key(one->id)) == 1);
            CHECK(by_entry[id_key(nobody)]["kind"] == "orphan_chunk");
            CHECK(by_entry[id_key(nobody)]["target_id"] == first_target);
            CHECK(by_entry[id_key(nobody)]["size"] == 4096);
            CHECK(by_entry[id_key(one->id)]["kind"] == "orphan_chunk");
            CHECK(by_entry[id_key(one->id)]["target_id"] == elsewhere);
            CHECK(by_entry[id_key(one->id)]["size"] == 10);
            if (round == 0) REQUIRE_OK(co_await fs.close(*ghost));
        }
        auto listed = ctl(tc, "fsck --readonly");
        CHECK(listed.status == 1);
        CHECK(listed.out.find("orphan chunk: " + id_key(nobody)) != std::string::npos);
        CHECK(listed.out.find("2 problems found") != std::string::npos);

        // --repair deletes both, and says so; the file system is clean after.
        auto repaired = ctl(tc, "fsck --repair --json");
        CHECK(repaired.status == 1);
        json mended = json::parse(repaired.out);
        REQUIRE(mended["problems"].size() == 2);
        for (const auto& p : mended["problems"]) CHECK(p["repaired"] == true);
        CHECK_FALSE(std::filesystem::exists(nobody_chunk));
        CHECK_FALSE(std::filesystem::exists(misplaced_chunk));
        CHECK(fsck_json(tc, 0)["clean"] == true);
        auto one_back = co_await fs.stat("/fsck/single/one");
        REQUIRE_OK(one_back);  // the file whose chunk was misplaced is whole

        // One of --readonly and --repair, and no check passes without every target.
        auto neither = ctl(tc, "fsck");
        CHECK(neither.status == 2);
        CHECK(neither.err.find("--readonly (check only) or --repair") != std::string::npos);
        tc.daemon("s2").kill(SIGKILL);
        auto unreachable = ctl(tc, "fsck --readonly");
        CHECK(unreachable.status == 2);
        CHECK(unreachable.err.find("cannot list the chunks of target") != std::string::npos);
        cluster.close();
    });
    INFO(tc.logs().substr(0, 20000));
    REQUIRE(ok);
}
