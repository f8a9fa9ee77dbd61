// Helpers for the journal and metadata store tests: a ring, an event loop
// that runs one coroutine to its end, and whole-file byte access.
#pragma once

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "asio.hpp"
#include "fd.hpp"
#include "uring.hpp"

namespace pfs::test {

using Bytes = std::vector<uint8_t>;

inline std::unique_ptr<Uring> make_ring() {
    auto ring = Uring::create();
    if (!ring) FAIL(ring.error().message);
    return std::move(*ring);
}

// Runs body() as a coroutine on io until it finishes (60 s at most). The
// ring's reaper always waits for work, so io would not stop by itself.
template <class F>
void run_coro(asio::io_context& io, F&& body) {
    bool done = false;
    asio::co_spawn(
        io,
        [&]() -> awaitable<void> {
            co_await body();
            done = true;
            io.stop();
        },
        [](std::exception_ptr e) {
            if (e) std::rethrow_exception(e);
        });
    io.restart();
    io.run_for(std::chrono::seconds(60));
    REQUIRE(done);
}

inline Bytes read_bytes(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    REQUIRE(in);
    return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Where a journal file's records end: the zeros written ahead of appends
// (journal.hpp) follow them.
inline size_t records_end(const Bytes& file) {
    size_t at = 0;
    while (file.size() - at >= 8 && file[at + 7] == 0xC5) {
        const size_t len = file[at + 4] | file[at + 5] << 8 | file[at + 6] << 16;
        if (file.size() - at < 16 + len) break;
        at += 16 + len;
    }
    return at;
}

inline void write_bytes(const std::filesystem::path& path, std::span<const uint8_t> bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    REQUIRE(out);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    REQUIRE(out);
}

// Swaps the file under this process's fd on path for /dev/full, so that
// writes through that fd fail with ENOSPC, until restore() or the end.
class DiskFull {
public:
    explicit DiskFull(const std::filesystem::path& path) : fd_(fd_open_on(std::filesystem::canonical(path))) {
        saved_ = UniqueFd(::dup(fd_));
        UniqueFd full(::open("/dev/full", O_WRONLY | O_CLOEXEC));
        REQUIRE((saved_.valid() && full.valid()));
        REQUIRE(::dup2(full.get(), fd_) == fd_);
    }
    ~DiskFull() { restore(); }
    DiskFull(const DiskFull&) = delete;
    DiskFull& operator=(const DiskFull&) = delete;

    void restore() {
        if (saved_.valid()) ::dup2(saved_.get(), fd_);
        saved_ = UniqueFd();
    }

private:
    static int fd_open_on(const std::filesystem::path& path) {
        for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) {
            std::error_code ec;
            if (std::filesystem::read_symlink(e.path(), ec) == path)
                return std::stoi(e.path().filename().string());
        }
        FAIL("no fd open on " << path);
        return -1;
    }

    int fd_;
    UniqueFd saved_;
};

}  // namespace pfs::test
