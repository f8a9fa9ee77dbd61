// libpfs's file system API against real pfs-mgmtd, pfs-meta and pfs-storage
// processes: POSIX namespace semantics, striped contents, xattrs, unlink of
// open files, special files, and a metadata server killed with -9 losing
// nothing it acknowledged; a create as soon as a new storage target is up;
// statfs following the space the targets report.
#include <catch2/catch.hpp>

#include <dirent.h>
#include <sys/stat.h>

#include <random>

#include "filesystem.hpp"
#include "fs_waits.hpp"
#include "gather.hpp"
#include "node_agent.hpp"
#include "test_cluster.hpp"

using namespace pfs;
using namespace pfs::client;
using pfs::test::TestCluster;
using pfs::test::pause;
using pfs::test::wait_ready;
using namespace std::chrono_literals;

namespace {

Bytes random_bytes(size_t n, uint64_t seed) {
    std::mt19937_64 rng(seed);
    Bytes b(n);
    for (auto& x : b) x = static_cast<uint8_t>(rng());
    return b;
}

size_t chunk_files(const std::filesystem::path& dir) {
    size_t n = 0;
    for (auto& e : std::filesystem::recursive_directory_iterator(dir))
        if (e.is_regular_file() && e.path().filename().string().find('-') != std::string::npos &&
            e.path().string().find("/chunks/") != std::string::npos)
            ++n;
    return n;
}

Bytes write_file(size_t size, uint64_t seed) { return random_bytes(size, seed); }

}  // namespace

TEST_CASE("files and directories through libpfs, surviving a metadata server crash", "[system]") {
    TestCluster tc;
    tc.start_mgmtd();
    tc.start_meta("m1");
    tc.start_storage("s1", 2);
    tc.start_storage("s2", 2);
    asio::io_context io;
    ClientConfig cfg;
    cfg.request_timeout = 5s;
    Cluster cluster(io.get_executor(), tc.mgmtd(), tc.secret(), cfg);
    FileSystem fs(cluster);

    bool ok = test::run(io, [&]() -> awaitable<void> {
        bool ready = co_await wait_ready(io, cluster, fs, 4);
        REQUIRE(ready);

        // Directories and files.
        REQUIRE_OK(co_await fs.mkdir("/data"));
        // Files on the storage targets, not inline: striping is under test.
        auto pattern = co_await fs.get_pattern("/data");
        REQUIRE_OK(pattern);
        pattern->inline_max = 0;
        REQUIRE_OK(co_await fs.set_pattern("/data", *pattern));
        REQUIRE_OK(co_await fs.mkdir("/data/train"));
        CHECK_ERRNO(co_await fs.mkdir("/data"), -EEXIST);
        std::vector<Bytes> contents;
        for (int i = 0; i < 5; ++i) {
            auto f = co_await fs.open("/data/train/f" + std::to_string(i), O_CREAT | O_EXCL | O_WRONLY);
            REQUIRE(f);
            CHECK(f->layout.targets.size() == 4);
            contents.push_back(write_file(i * 300000 + 1, i));
            REQUIRE_OK(co_await fs.write(*f, 0, contents.back()));
            REQUIRE_OK(co_await fs.close(*f));
        }
        for (int i = 0; i < 5; ++i) {
            auto path = "/data/train/f" + std::to_string(i);
            auto st = co_await fs.stat(path);
            REQUIRE(st);
            CHECK(st->size == contents[i].size());
            CHECK((st->mode & S_IFMT) == S_IFREG);
            auto f = co_await fs.open(path, O_RDONLY);
            REQUIRE(f);
            Bytes back(contents[i].size() + 100);
            auto n = co_await fs.read(*f, 0, back);
            REQUIRE(n);
            CHECK(*n == contents[i].size());
            back.resize(*n);
            CHECK(back == contents[i]);
            REQUIRE_OK(co_await fs.close(*f));
        }
        auto listing = co_await fs.readdir("/data/train");
        REQUIRE(listing);
        CHECK(listing->size() == 7);  // . .. f0..f4

        // READDIR_PLUS: every name with the attributes stat gives it; a
        // caller who may list but not search the directory gets names only.
        {
            auto plus = co_await fs.readdir_plus("/data/train");
            REQUIRE(plus);
            CHECK(plus->size() == 7);
            for (const auto& e : *plus) {
                INFO(e.name);
                if (e.name == "." || e.name == "..") {
                    CHECK(!e.attr);
                    continue;
                }
                REQUIRE(e.attr);
                auto st = co_await fs.stat("/data/train/" + e.name);
                REQUIRE(st);
                CHECK(e.attr->id.ino == e.id.ino);
                CHECK(e.attr->mode == st->mode);
                CHECK(e.attr->size == st->size);
                CHECK(e.attr->mtime.sec == st->mtime.sec);
                CHECK(e.attr->mtime.nsec == st->mtime.nsec);
            }
            pfs_setattr no_search{};
            no_search.valid = PFS_SET_MODE;
            no_search.mode = 0744;
            REQUIRE_OK(co_await fs.setattr("/data/train", no_search));
            FileSystem stranger(cluster, FileSystemOptions{.as = Credentials{1000, 1000, {}}});
            auto names = co_await stranger.readdir_plus("/data/train");
            REQUIRE(names);
            CHECK(names->size() == 7);
            for (const auto& e : *names) CHECK(!e.attr);
            REQUIRE_OK(co_await stranger.shutdown());
            no_search.mode = 0755;
            REQUIRE_OK(co_await fs.setattr("/data/train", no_search));
        }

        // POSIX edge cases.
        CHECK_ERRNO(co_await fs.rmdir("/data"), -ENOTEMPTY);
        CHECK_ERRNO(co_await fs.rename("/data", "/data/train/inside"), -EINVAL);
        REQUIRE_OK(co_await fs.rename("/data/train/f1", "/data/train/f2"));  // over an existing file
        CHECK_ERRNO(co_await fs.stat("/data/train/f1"), -ENOENT);
        {
            auto r_ = co_await fs.stat("/data/train/f2");
            REQUIRE_OK(r_);
            CHECK(r_->size == contents[1].size());
        }
        REQUIRE_OK(co_await fs.link("/data/train/f3", "/data/f3-link"));
        {
            auto r_ = co_await fs.stat("/data/f3-link");
            REQUIRE_OK(r_);
            CHECK(r_->nlink == 2);
        }
        REQUIRE_OK(co_await fs.symlink("train/f3", "/data/sym"));
        {
            auto r_ = co_await fs.readlink("/data/sym");
            REQUIRE_OK(r_);
            CHECK(*r_ == "train/f3");
        }
        REQUIRE_OK(co_await fs.set_xattr("/data/train/f3", "user.label", "cat"));
        {
            auto r_ = co_await fs.get_xattr("/data/train/f3", "user.label");
            REQUIRE_OK(r_);
            CHECK(*r_ == "cat");
        }
        CHECK_ERRNO(co_await fs.get_xattr("/data/train/f3", "user.none"), -ENODATA);
        REQUIRE_OK(co_await fs.truncate("/data/train/f4", 1000));
        {
            auto r_ = co_await fs.stat("/data/train/f4");
            REQUIRE_OK(r_);
            CHECK(r_->size == 1000);
        }

        // Unlink of an open file: readable until closed, chunks gone after.
        auto open_file = co_await fs.open("/data/train/f0", O_RDONLY);
        REQUIRE(open_file);
        size_t chunks_before = chunk_files(tc.dir());
        REQUIRE_OK(co_await fs.unlink("/data/train/f0"));
        CHECK_ERRNO(co_await fs.stat("/data/train/f0"), -ENOENT);
        Bytes still(1);
        {
            auto r_ = co_await fs.read(*open_file, 0, still);
            REQUIRE_OK(r_);
            CHECK(*r_ == 1);
        }
        CHECK(still[0] == contents[0][0]);
        REQUIRE_OK(co_await fs.close(*open_file));
        for (int i = 0; i < 100 && chunk_files(tc.dir()) >= chunks_before; ++i) co_await pause(io, 50ms);
        CHECK(chunk_files(tc.dir()) < chunks_before);

        // Special files: type, device number and birth time kept by pfs-meta.
        auto fifo = co_await fs.mknod("/data/fifo", S_IFIFO | 0640);
        REQUIRE_OK(fifo);
        CHECK(fifo->mode == (S_IFIFO | 0640));
        CHECK(fifo->btime.sec > 0);
        auto tty = co_await fs.mknod("/data/tty", S_IFCHR | 0620, pfs_encode_dev(4, 1));
        REQUIRE_OK(tty);
        CHECK(tty->rdev == pfs_encode_dev(4, 1));
        CHECK_ERRNO(co_await fs.mknod("/data/file", S_IFREG | 0644), -EINVAL);
        CHECK_ERRNO(co_await fs.mknod("/data/fifo", S_IFIFO | 0644), -EEXIST);

        // kill -9 the metadata server: everything acknowledged is there after restart.
        tc.daemon("m1").kill(SIGKILL);
        tc.daemon("m1").start();
        Result<pfs_attr> back = Error{};
        for (int i = 0; i < 200 && !back; ++i) {
            co_await pause(io, 50ms);
            back = co_await fs.stat("/data/train/f3");
        }
        REQUIRE(back);
        CHECK(back->size == contents[3].size());
        CHECK(back->nlink == 2);
        {
            auto r_ = co_await fs.get_xattr("/data/train/f3", "user.label");
            REQUIRE_OK(r_);
            CHECK(*r_ == "cat");
        }
        {
            auto r_ = co_await fs.stat("/data/train/f4");
            REQUIRE_OK(r_);
            CHECK(r_->size == 1000);
        }
        CHECK_ERRNO(co_await fs.stat("/data/train/f1"), -ENOENT);
        {
            auto r_ = co_await fs.stat("/data/tty");
            REQUIRE_OK(r_);
            CHECK(r_->mode == (S_IFCHR | 0620));
            CHECK(r_->rdev == pfs_encode_dev(4, 1));
            CHECK(r_->btime.sec == tty->btime.sec);
            CHECK(r_->btime.nsec == tty->btime.nsec);
            auto listed = co_await fs.readdir("/data");
            REQUIRE_OK(listed);
            int specials = 0;
            for (const auto& e : *listed) specials += (e.name == "fifo" && e.type == DT_FIFO) +
                                                      (e.name == "tty" && e.type == DT_CHR);
            CHECK(specials == 2);
        }
        auto f3 = co_await fs.open("/data/train/f3", O_RDONLY);
        REQUIRE(f3);
        Bytes data(contents[3].size());
        REQUIRE_OK(co_await fs.read(*f3, 0, data));
        CHECK(data == contents[3]);
        REQUIRE_OK(co_await fs.close(*f3));
        cluster.close();
    });
    INFO(tc.logs());
    REQUIRE(ok);
}

// Each server and client hears of a new storage target on its own. A client
// that already has it in its map may create a file before pfs-meta does: the
// create must not fail with ENOSPC for a target pfs-mgmtd has online.
TEST_CASE("a create right after a storage target comes up succeeds before pfs-meta hears of the target",
          "[system]") {
    TestCluster tc;
    tc.start_mgmtd();
    tc.start_meta("m1");
    asio::io_context io;
    Cluster cluster(io.get_executor(), tc.mgmtd(), tc.secret());
    FileSystem fs(cluster);
    bool ok = test::run(io, [&]() -> awaitable<void> {
        auto dir = co_await test::mkdir_when_served(io, cluster, fs, "/d");
        REQUIRE_OK(dir);
        auto none = co_await fs.open("/d/none", O_CREAT | O_WRONLY);
        CHECK_ERRNO(none, -ENOSPC);

        // Stopped, pfs-meta cannot hear of the target coming up.
        tc.daemon("m1").signal(SIGSTOP);
        tc.start_storage("s1", 1);
        bool online = co_await test::eventually(io, 15s, [&]() -> awaitable<bool> {
            (void)co_await cluster.start();
            for (const auto& t : cluster.targets())
                if (t.reachability == PFS_REACH_ONLINE) co_return true;
            co_return false;
        });
        if (!online) tc.daemon("m1").signal(SIGCONT);
        REQUIRE(online);
        // pfs-meta resumes with the creates and the notice of the new map
        // waiting in its sockets, and cannot fetch that map while pfs-mgmtd
        // is stopped: a create looking at what pfs-meta knows fails.
        tc.daemon("mgmtd").signal(SIGSTOP);
        constexpr int creates = 8;
        std::vector<Task<Unit>> tasks;
        for (int i = 0; i < creates; ++i) {
            tasks.push_back([&, i]() -> awaitable<Result<Unit>> {
                auto f = co_await fs.open("/d/f" + std::to_string(i), O_CREAT | O_WRONLY);
                if (!f) co_return f.error();
                co_return co_await fs.close(*f);
            });
        }
        tasks.push_back([&]() -> awaitable<Result<Unit>> {
            co_await pause(io, 100ms);
            tc.daemon("m1").signal(SIGCONT);
            co_await pause(io, 300ms);
            tc.daemon("mgmtd").signal(SIGCONT);
            co_return Unit{};
        });
        auto results = co_await gather(std::move(tasks));
        for (int i = 0; i < creates; ++i) REQUIRE_OK(results[i]);
        cluster.close();
    });
    INFO(tc.logs().substr(0, 20000));
    REQUIRE(ok);
}

TEST_CASE("statfs shows the targets' space as their servers last reported it", "[system]") {
    TestCluster tc;
    tc.start_mgmtd();
    tc.start_meta("m1");
    tc.start_storage("s1", 1);
    asio::io_context io;
    Cluster cluster(io.get_executor(), tc.mgmtd(), tc.secret());
    FileSystem fs(cluster);
    const auto disk = directory_capacity(tc.dir());
    REQUIRE(disk);
    constexpr uint64_t MiB = 1 << 20;
    bool ok = test::run(io, [&]() -> awaitable<void> {
        bool ready = co_await wait_ready(io, cluster, fs, 1);
        REQUIRE(ready);
        // The target shares the test directory's file system: its size,
        // once its server's first heartbeat is in.
        pfs_statfs before{};
        bool sized = co_await test::eventually(io, 15s, [&]() -> awaitable<bool> {
            auto st = co_await fs.statfs();
            if (st) before = *st;
            co_return st && st->storage.bytes_total == disk->bytes_total;
        });
        INFO("statfs total " << before.storage.bytes_total << ", disk " << disk->bytes_total);
        REQUIRE(sized);

        // 64 MiB written does not change the target's capacity class; df
        // follows all the same.
        auto f = co_await fs.open("/big", O_CREAT | O_EXCL | O_WRONLY);
        REQUIRE(f);
        REQUIRE_OK(co_await fs.write(*f, 0, Bytes(64 * MiB, 0x5a)));
        REQUIRE_OK(co_await fs.fsync(*f));
        REQUIRE_OK(co_await fs.close(*f));
        pfs_statfs after{};
        bool followed = co_await test::eventually(io, 15s, [&]() -> awaitable<bool> {
            auto st = co_await fs.statfs();
            if (st) after = *st;
            co_return st && st->storage.bytes_free + 32 * MiB <= before.storage.bytes_free;
        });
        INFO("free before " << before.storage.bytes_free << ", after " << after.storage.bytes_free);
        CHECK(followed);
        cluster.close();
    });
    INFO(tc.logs().substr(0, 20000));
    REQUIRE(ok);
}
