// The io_uring bridge on real files: positioned reads and writes (beyond
// 4 GiB too), end of file, errors as negative errnos, many operations at
// once through a small ring, registered buffers, and a ring destroyed while
// the kernel still works for it.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include <cstddef>
#include <random>
#include <thread>

#include "coro_test.hpp"
#include "temp_dir.hpp"
#include "uring.hpp"

using namespace pfs;
using namespace std::chrono_literals;

namespace {

using Bytes = std::vector<uint8_t>;

Bytes random_bytes(size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    Bytes out(n);
    for (auto& b : out) b = static_cast<uint8_t>(rng());
    return out;
}

std::unique_ptr<Uring> make_ring(unsigned entries = 256) {
    auto ring = Uring::create(UringConfig{entries});
    if (!ring) FAIL(ring.error().message);
    return std::move(*ring);
}

UniqueFd open_file(const std::filesystem::path& path, int flags = O_RDWR | O_CREAT) {
    UniqueFd fd(::open(path.c_str(), flags | O_CLOEXEC, 0600));
    REQUIRE(fd.valid());
    return fd;
}

constexpr uint64_t kBeyond4G = (5ull << 30) + 123;

#if defined(__x86_64__)
constexpr uint32_t kAuditArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
constexpr uint32_t kAuditArch = AUDIT_ARCH_AARCH64;
#else
constexpr uint32_t kAuditArch = 0;
#endif

// Makes io_uring_setup fail with EPERM in the calling thread only (a seccomp
// filter without TSYNC), as a container runtime's profile or sysctl
// kernel.io_uring_disabled=2 would. Returns false where that is impossible.
bool forbid_io_uring_in_this_thread() {
    if (kAuditArch == 0) return false;
    sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kAuditArch, 0, 3),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    sock_fprog prog{static_cast<unsigned short>(std::size(filter)), filter};
    return ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
           ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) == 0;
}

}  // namespace

TEST_CASE("uring: write and read back at offsets, beyond 4 GiB sparse", "[uring]") {
    test::TempDir dir;
    asio::io_context io;
    auto ring = make_ring();
    UniqueFd fd = open_file(dir.path() / "f");
    const Bytes a = random_bytes(100000, 1);
    const Bytes b = random_bytes(4097, 2);
    test::run_coro(io, [&]() -> awaitable<void> {
        auto w = co_await ring->write(fd.get(), a, 0);
        REQUIRE(w);
        CHECK(*w == a.size());
        w = co_await ring->write(fd.get(), b, kBeyond4G);
        REQUIRE(w);
        CHECK(*w == b.size());

        Bytes got(a.size());
        auto r = co_await ring->read(fd.get(), got, 0);
        REQUIRE(r);
        CHECK(*r == a.size());
        CHECK(got == a);
        got.assign(b.size(), 0);
        r = co_await ring->read(fd.get(), got, kBeyond4G);
        REQUIRE(r);
        CHECK(*r == b.size());
        CHECK(got == b);
        // The hole in between reads as zeros.
        got.assign(8192, 0xff);
        r = co_await ring->read(fd.get(), got, 3ull << 30);
        REQUIRE(r);
        CHECK(*r == got.size());
        CHECK(std::all_of(got.begin(), got.end(), [](uint8_t c) { return c == 0; }));
    });
    struct stat st {};
    REQUIRE(::fstat(fd.get(), &st) == 0);
    CHECK(static_cast<uint64_t>(st.st_size) == kBeyond4G + b.size());
    CHECK(static_cast<uint64_t>(st.st_blocks) * 512 < (64u << 20));  // sparse
    CHECK(ring->outstanding() == 0);
}

TEST_CASE("uring: a read at the end of a file is short", "[uring]") {
    test::TempDir dir;
    asio::io_context io;
    auto ring = make_ring();
    UniqueFd fd = open_file(dir.path() / "f");
    const Bytes ten = random_bytes(10, 3);
    test::run_coro(io, [&]() -> awaitable<void> {
        CO_REQUIRE_OK(co_await ring->write(fd.get(), ten, 0));
        Bytes got(100);
        auto r = co_await ring->read(fd.get(), got, 5);
        REQUIRE(r);
        CHECK(*r == 5);
        CHECK(std::equal(got.begin(), got.begin() + 5, ten.begin() + 5));
        r = co_await ring->read(fd.get(), got, 10);
        REQUIRE(r);
        CHECK(*r == 0);
        r = co_await ring->read(fd.get(), got, kBeyond4G);
        REQUIRE(r);
        CHECK(*r == 0);
        // An empty write and read are no-ops.
        auto w = co_await ring->write(fd.get(), std::span<const uint8_t>(), 3);
        REQUIRE(w);
        CHECK(*w == 0);
    });
}

TEST_CASE("uring: errors are negative errnos", "[uring]") {
    test::TempDir dir;
    asio::io_context io;
    auto ring = make_ring();
    UniqueFd dirfd = open_file(dir.path(), O_RDONLY | O_DIRECTORY);
    UniqueFd readonly = open_file(dir.path() / "ro", O_RDONLY | O_CREAT);
    test::run_coro(io, [&]() -> awaitable<void> {
        Bytes buf(16);
        auto r = co_await ring->read(-1, buf, 0);
        REQUIRE_FALSE(r);
        CHECK(r.error().code == -EBADF);
        auto w = co_await ring->write(readonly.get(), buf, 0);
        REQUIRE_FALSE(w);
        CHECK(w.error().code == -EBADF);
        auto f = co_await ring->fsync(12345, true);
        REQUIRE_FALSE(f);
        CHECK(f.error().code == -EBADF);

        auto opened = co_await ring->openat(dirfd.get(), "missing/file", O_RDWR, 0);
        REQUIRE_FALSE(opened);
        CHECK(opened.error().code == -ENOENT);
        CHECK(opened.error().message.find("missing/file") != std::string::npos);
        struct statx stx {};
        auto s = co_await ring->statx(dirfd.get(), "missing", 0, STATX_SIZE, &stx);
        REQUIRE_FALSE(s);
        CHECK(s.error().code == -ENOENT);
        auto u = co_await ring->unlinkat(dirfd.get(), "missing", 0);
        REQUIRE_FALSE(u);
        CHECK(u.error().code == -ENOENT);
        auto m = co_await ring->mkdirat(dirfd.get(), "ro", 0700);
        REQUIRE_FALSE(m);
        CHECK(m.error().code == -EEXIST);
    });
}

TEST_CASE("uring: open, stat, sync, unlink and mkdir", "[uring]") {
    test::TempDir dir;
    asio::io_context io;
    auto ring = make_ring();
    UniqueFd dirfd = open_file(dir.path(), O_RDONLY | O_DIRECTORY);
    const Bytes data = random_bytes(12345, 4);
    test::run_coro(io, [&]() -> awaitable<void> {
        CO_REQUIRE_OK(co_await ring->mkdirat(dirfd.get(), "sub", 0700));
        auto fd = co_await ring->openat(dirfd.get(), "sub/f", O_RDWR | O_CREAT | O_EXCL, 0600);
        REQUIRE(fd);
        CHECK((::fcntl(fd->get(), F_GETFD) & FD_CLOEXEC) != 0);
        CO_REQUIRE_OK(co_await ring->write(fd->get(), data, 0));
        CO_REQUIRE_OK(co_await ring->fsync(fd->get(), true));
        CO_REQUIRE_OK(co_await ring->fsync(fd->get(), false));
        struct statx stx {};
        CO_REQUIRE_OK(co_await ring->statx(dirfd.get(), "sub/f", 0, STATX_SIZE | STATX_MODE, &stx));
        CHECK(stx.stx_size == data.size());
        CHECK((stx.stx_mode & 0777) == 0600);
        CO_REQUIRE_OK(co_await ring->unlinkat(dirfd.get(), "sub/f", 0));
        CO_REQUIRE_OK(co_await ring->unlinkat(dirfd.get(), "sub", AT_REMOVEDIR));
    });
    CHECK_FALSE(std::filesystem::exists(dir.path() / "sub"));
}

TEST_CASE("uring: write_dsync writes what a write would, and fails as one", "[uring]") {
    test::TempDir dir;
    asio::io_context io;
    auto ring = make_ring();
    UniqueFd fd = open_file(dir.path() / "journal");
    UniqueFd readonly = open_file(dir.path() / "ro", O_RDONLY | O_CREAT);
    const Bytes first = random_bytes(5000, 11), second = random_bytes(300, 12);
    test::run_coro(io, [&]() -> awaitable<void> {
        auto a = co_await ring->write_dsync(fd.get(), first, 0);
        REQUIRE(a);
        CHECK(*a == first.size());
        // Over part of the first, as the journal overwrites its zeros.
        auto b = co_await ring->write_dsync(fd.get(), second, 4096);
        REQUIRE(b);
        CHECK(*b == second.size());
        auto bad = co_await ring->write_dsync(readonly.get(), second, 0);
        REQUIRE_FALSE(bad);
        CHECK(bad.error().code == -EBADF);
    });
    Bytes expect = first;
    std::copy(second.begin(), second.end(), expect.begin() + 4096);
    Bytes got(expect.size() + 1);
    CHECK(::pread(fd.get(), got.data(), got.size(), 0) == static_cast<ssize_t>(expect.size()));
    got.resize(expect.size());
    CHECK(got == expect);
}

TEST_CASE("uring: 200 concurrent operations through a small ring", "[uring]") {
    test::TempDir dir;
    asio::io_context io;
    auto ring = make_ring(8);  // far fewer slots than operations: they wait, none fails
    REQUIRE(ring->capacity() == 8);
    UniqueFd fd = open_file(dir.path() / "f");
    constexpr int kOps = 200;
    constexpr size_t kBlock = 4096;
    int finished = 0;
    size_t peak = 0;
    for (int i = 0; i < kOps; ++i) {
        asio::co_spawn(
            io,
            [&, i]() -> awaitable<void> {
                const Bytes mine = random_bytes(kBlock, 100 + i);
                const uint64_t at = static_cast<uint64_t>(i) * kBlock + (i % 2 ? kBeyond4G : 0);
                auto w = co_await ring->write(fd.get(), mine, at);
                peak = std::max(peak, ring->outstanding());
                REQUIRE(w);
                Bytes got(kBlock);
                auto r = co_await ring->read(fd.get(), got, at);
                REQUIRE(r);
                CHECK(*r == kBlock);
                CHECK(got == mine);
                ++finished;
            },
            [](std::exception_ptr e) {
                if (e) std::rethrow_exception(e);
            });
    }
    io.run_for(30s);
    CHECK(finished == kOps);
    CHECK(peak <= ring->capacity());
    CHECK(ring->outstanding() == 0);
}

TEST_CASE("uring: registered buffers round trip", "[uring]") {
    test::TempDir dir;
    asio::io_context io;
    auto ring = make_ring();
    auto made = BufferPool::create(4, 64 << 10);
    REQUIRE(made);
    auto pool = *made;
    auto st = ring->register_buffers(pool);
    if (!st) FAIL("cannot register buffers: " << st.error().message);
    CHECK(ring->buffers() == pool.get());
    CHECK_FALSE(ring->register_buffers(pool));  // once per ring
    UniqueFd fd = open_file(dir.path() / "f");
    const Bytes data = random_bytes(60000, 5);
    test::run_coro(io, [&]() -> awaitable<void> {
        auto out = pool->try_acquire();
        REQUIRE(out);
        CHECK(out->size() == (64u << 10));
        CHECK(reinterpret_cast<uintptr_t>(out->data()) % 4096 == 0);
        std::copy(data.begin(), data.end(), out->data());
        auto w = co_await ring->write_fixed(fd.get(), *out, data.size(), kBeyond4G);
        REQUIRE(w);
        CHECK(*w == data.size());

        auto in = pool->try_acquire();
        REQUIRE(in);
        CHECK(in->index() != out->index());
        auto r = co_await ring->read_fixed(fd.get(), *in, in->size(), kBeyond4G);
        REQUIRE(r);
        CHECK(*r == data.size());  // short: end of file
        CHECK(std::equal(data.begin(), data.end(), in->data()));

        auto too_long = co_await ring->read_fixed(fd.get(), *in, in->size() + 1, 0);
        REQUIRE_FALSE(too_long);
        CHECK(too_long.error().code == -EINVAL);
    });
    CHECK(pool->available() == 4);  // every lease came back
}

TEST_CASE("uring: buffer pool lends each buffer once", "[uring]") {
    auto made = BufferPool::create(2, 1000);
    REQUIRE(made);
    auto pool = *made;
    CHECK(pool->buffer_size() == 4096);  // whole pages
    auto a = pool->try_acquire();
    auto b = pool->try_acquire();
    REQUIRE(a);
    REQUIRE(b);
    CHECK_FALSE(pool->try_acquire());
    {
        auto moved = std::move(*a);
        a.reset();
        CHECK(pool->available() == 0);
    }
    CHECK(pool->available() == 1);
    b.reset();
    CHECK(pool->available() == 2);
    CHECK_FALSE(BufferPool::create(0, 4096));
    CHECK_FALSE(BufferPool::create(4, 0));
}

TEST_CASE("uring: a foreign buffer is refused", "[uring]") {
    asio::io_context io;
    auto ring = make_ring();
    auto other = BufferPool::create(1, 4096);
    REQUIRE(other);
    test::run_coro(io, [&]() -> awaitable<void> {
        auto lease = (*other)->try_acquire();
        REQUIRE(lease);
        auto r = co_await ring->read_fixed(0, *lease, 10, 0);
        REQUIRE_FALSE(r);
        CHECK(r.error().code == -EINVAL);
    });
}

TEST_CASE("uring: bad ring sizes are refused", "[uring]") {
    CHECK(Uring::create(UringConfig{0}).error().code == -EINVAL);
    CHECK(Uring::create(UringConfig{1u << 20}).error().code == -EINVAL);
    auto small = Uring::create(UringConfig{3});
    REQUIRE(small);
    CHECK((*small)->capacity() == 4);  // the kernel rounds up to a power of two
}

TEST_CASE("uring: without io_uring the error says so", "[uring]") {
    bool forbidden = false;
    std::optional<Error> error;
    std::thread([&] {
        forbidden = forbid_io_uring_in_this_thread();
        if (!forbidden) return;
        auto ring = Uring::create();
        if (!ring) error = ring.error();
    }).join();
    if (!forbidden) {
        WARN("skipped: cannot install a seccomp filter here");
        return;
    }
    REQUIRE(error);
    CHECK(error->code == -EPERM);
    CHECK(error->message.starts_with("io_uring is not available: "));
    CHECK(error->message.find("io_uring_disabled") != std::string::npos);
}

TEST_CASE("uring: a ring destroyed with operations in flight", "[uring]") {
    test::TempDir dir;
    asio::io_context io;
    auto ring = make_ring();
    UniqueFd fd = open_file(dir.path() / "f");
    const Bytes data = random_bytes(1 << 20, 6);
    REQUIRE(::pwrite(fd.get(), data.data(), data.size(), 0) == static_cast<ssize_t>(data.size()));
    int started = 0;
    for (int i = 0; i < 16; ++i) {
        asio::co_spawn(
            io,
            [&]() -> awaitable<void> {
                ++started;
                Bytes buf(1 << 20);
                co_await ring->read(fd.get(), buf, 0);
            },
            asio::detached);
    }
    io.poll();  // submitted, perhaps not reaped
    CHECK(started == 16);
    ring.reset();  // waits for the kernel, then drops the waiters
    io.run_for(1s);
    SUCCEED("no crash, no use after free");
}
