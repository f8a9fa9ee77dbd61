// CREATE with PFS_CREATE_FIND, pfs.ko's O_CREAT without O_EXCL in one round
// trip, against a real pfs-meta: a new name is made and opened, an existing
// regular file opened with the permissions its open asks for, anything else
// only looked up; the reply says which. Without OPEN, a create that says
// whether it made the file.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include "filesystem.hpp"
#include "fs_waits.hpp"
#include "test_cluster.hpp"

using namespace pfs;
using namespace pfs::client;
using pfs::test::TestCluster;
using pfs::test::wait_ready;
using namespace std::chrono_literals;

namespace {

struct Found {
    bool made = false;
    pfs_attr attr{};
    bool has_layout = false;
    pfs_layout layout{};
};

Result<Found> decode_found(const Bytes& body) {
    Found f;
    pfs_create_made made{};
    pfs_xdr x;
    pfs_xdr_init_decode(&x, body.data(), static_cast<uint32_t>(body.size()));
    pfs_x_create_made(&x, &made);
    pfs_x_attr(&x, &f.attr);
    f.has_layout = pfs_xdr_remaining(&x) > 0;
    if (f.has_layout) pfs_x_layout(&x, &f.layout);
    if (pfs_xdr_finish(&x)) return Error{-EBADMSG, "malformed CREATE reply"};
    f.made = made.made != 0;
    return f;
}

}  // namespace

TEST_CASE("CREATE with FIND makes a new file or finds the name, and says which", "[system]") {
    TestCluster tc;
    tc.start_mgmtd();
    tc.start_meta("m1");
    tc.start_storage("s1", 2);
    asio::io_context io;
    ClientConfig cfg;
    cfg.request_timeout = 5s;
    Cluster cluster(io.get_executor(), tc.mgmtd(), tc.secret(), cfg);
    FileSystem fs(cluster);

    bool ok = test::run(io, [&]() -> awaitable<void> {
        bool ready = co_await wait_ready(io, cluster, fs, 2);
        REQUIRE(ready);
        auto root = co_await fs.stat("/");
        REQUIRE_OK(root);
        const uint32_t meta = root->id.owner_node;
        Credentials user{1000, 1000, {}};
        auto find = [&](std::string_view name, uint32_t flags,
                        const Credentials* as = nullptr) -> awaitable<Result<Found>> {
            pfs_create m{root->id, {}, 0644, PFS_CREATE_FIND | PFS_CREATE_OPEN | flags};
            REQUIRE(set_field(m.name, name));
            auto body = co_await cluster.call_meta_ok(meta, PFS_MSG_CREATE, encode(pfs_x_create, m), fs.client_id(), as);
            if (!body) co_return body.error();
            co_return decode_found(*body);
        };
        const uint32_t rw = PFS_CREATE_READ | PFS_CREATE_WRITE;

        // A new name: made, opened, with its layout.
        auto made = co_await find("f", rw);
        REQUIRE_OK(made);
        CHECK(made->made);
        CHECK(S_ISREG(made->attr.mode));
        CHECK((made->attr.mode & 07777) == 0644);
        CHECK(made->has_layout);
        // Inline, as the root's default pattern makes small files.
        CHECK(made->layout.count == 1);
        CHECK(made->layout.targets[0] == PFS_INLINE_TARGET);
        // The same name again: found, the same file, opened.
        auto again = co_await find("f", rw);
        REQUIRE_OK(again);
        CHECK_FALSE(again->made);
        CHECK(again->attr.id.ino == made->attr.id.ino);
        CHECK(again->has_layout);

        // A directory or a symlink is only looked up: no layout, nothing
        // made (the client's VFS refuses the one and follows the other).
        REQUIRE_OK(co_await fs.mkdir("/d"));
        auto dir = co_await find("d", rw);
        REQUIRE_OK(dir);
        CHECK_FALSE(dir->made);
        CHECK(S_ISDIR(dir->attr.mode));
        CHECK_FALSE(dir->has_layout);
        REQUIRE_OK(co_await fs.symlink("target", "/l"));
        auto link = co_await find("l", rw);
        REQUIRE_OK(link);
        CHECK_FALSE(link->made);
        CHECK(S_ISLNK(link->attr.mode));
        CHECK_FALSE(link->has_layout);
        CHECK_ERRNO(co_await fs.stat("/target"), -ENOENT);

        // An existing file is opened with the permissions the open asks
        // for; a new name needs write permission on the directory.
        auto read_only = co_await find("f", PFS_CREATE_READ, &user);
        REQUIRE_OK(read_only);
        CHECK_FALSE(read_only->made);
        CHECK_ERRNO(co_await find("f", PFS_CREATE_WRITE, &user), -EACCES);
        CHECK_ERRNO(co_await find("new", rw, &user), -EACCES);
        CHECK_ERRNO(co_await fs.stat("/new"), -ENOENT);

        // With EXCL it is the plain O_EXCL create.
        CHECK_ERRNO(co_await find("f", rw | PFS_CREATE_EXCL), -EEXIST);

        // Without OPEN (pfs.ko's create of a name it had as negative):
        // the reply says whether the name was new; nothing is opened.
        auto create_only = [&](std::string_view name) -> awaitable<Result<Found>> {
            pfs_create m{root->id, {}, 0600, PFS_CREATE_FIND};
            REQUIRE(set_field(m.name, name));
            auto body = co_await cluster.call_meta_ok(meta, PFS_MSG_CREATE, encode(pfs_x_create, m), fs.client_id());
            if (!body) co_return body.error();
            co_return decode_found(*body);
        };
        auto fresh = co_await create_only("g");
        REQUIRE_OK(fresh);
        CHECK(fresh->made);
        CHECK((fresh->attr.mode & 07777) == 0600);
        auto existing = co_await create_only("f");
        REQUIRE_OK(existing);
        CHECK_FALSE(existing->made);
        CHECK(existing->attr.id.ino == made->attr.id.ino);
        CHECK((existing->attr.mode & 07777) == 0644);

        // libpfs's O_CREAT asks of an existing file what its open asks.
        FileSystemOptions as_user;
        as_user.as = user;
        FileSystem user_fs(cluster, as_user);
        auto reading = co_await user_fs.open("/f", O_CREAT | O_RDONLY);
        REQUIRE_OK(reading);
        REQUIRE_OK(co_await user_fs.close(*reading));
        CHECK_ERRNO(co_await user_fs.open("/f", O_CREAT | O_WRONLY), -EACCES);
        CHECK_ERRNO(co_await user_fs.open("/f", O_CREAT | O_RDWR), -EACCES);
        (void)co_await user_fs.shutdown();
        (void)co_await fs.shutdown();
    });
    REQUIRE(ok);
}
