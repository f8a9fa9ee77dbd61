// Waiting in system tests that drive libpfs: timers and polls on the test's
// io_context, each bounded (tests must not hang on a broken server).
#pragma once

#include <fcntl.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "filesystem.hpp"

namespace pfs::test {

inline awaitable<void> pause(asio::io_context& io, std::chrono::milliseconds d) {
    asio::steady_timer t(io, d);
    co_await t.async_wait(asio::use_awaitable);
}

// Bytes the file's chunks take on its storage targets, asked through
// cluster (0 once deleted, UINT64_MAX when a target cannot tell).
inline awaitable<uint64_t> chunk_bytes(client::Cluster& cluster, const client::OpenFile& file) {
    uint64_t total = 0;
    for (uint32_t target : file.layout.targets) {
        auto body = co_await cluster.call_target_ok(target, PFS_MSG_CHUNK_STAT,
                                                    encode(pfs_x_chunk_ref, pfs_chunk_ref{file.attr.id, target}));
        if (!body) co_return UINT64_MAX;
        auto st = decode(*body, pfs_x_chunk_stat);
        if (!st) co_return UINT64_MAX;
        total += st->allocated;
    }
    co_return total;
}

// Until the metadata server answers and the map shows `targets` targets
// (pfs-meta needs the storage map first); false after 15 s.
inline awaitable<bool> wait_ready(asio::io_context& io, client::Cluster& cluster, client::FileSystem& fs,
                                  size_t targets) {
    for (int i = 0; i < 300; ++i) {
        (void)co_await cluster.start();
        auto st = co_await fs.statfs();
        if (st && cluster.targets().size() == targets) co_return true;
        co_await pause(io, std::chrono::milliseconds(50));
    }
    co_return false;
}

// mkdir of `path` once the metadata server serves the namespace (it needs
// the storage map first): its last answer, after at most 15 s.
inline awaitable<Result<pfs_attr>> mkdir_when_served(asio::io_context& io, client::Cluster& cluster,
                                                     client::FileSystem& fs, const std::string& path) {
    Result<pfs_attr> made = Error{-ETIMEDOUT, "mkdir " + path + " was never tried"};
    for (int i = 0; i < 300; ++i) {
        (void)co_await cluster.start();
        made = co_await fs.mkdir(path);
        if (made) break;
        co_await pause(io, std::chrono::milliseconds(50));
    }
    co_return made;
}

// Until the map routes every target in `targets` to its storage server;
// false after 10 s.
inline awaitable<bool> wait_routes(asio::io_context& io, client::Cluster& cluster, std::vector<uint32_t> targets) {
    auto routed = [&] {
        return std::all_of(targets.begin(), targets.end(), [&](uint32_t t) { return bool(cluster.route(t)); });
    };
    for (int i = 0; i < 200 && !routed(); ++i) {
        (void)co_await cluster.start();
        co_await pause(io, std::chrono::milliseconds(50));
    }
    co_return routed();
}

// Until a file can be created at `path`: a storage target is registered and
// online (pfs-meta asks pfs-mgmtd again before it answers ENOSPC). The file
// is left in place, empty. False after 15 s.
inline awaitable<bool> wait_creatable(asio::io_context& io, client::FileSystem& fs, const std::string& path) {
    for (int i = 0; i < 300; ++i) {
        auto f = co_await fs.open(path, O_CREAT | O_WRONLY);
        if (f) {
            auto closed = co_await fs.close(*f);
            co_return bool(closed);
        }
        co_await pause(io, std::chrono::milliseconds(50));
    }
    co_return false;
}

// Polls an awaitable condition every 20 ms until true or the deadline.
template <class F>
awaitable<bool> eventually(asio::io_context& io, std::chrono::milliseconds timeout, F&& pred) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        bool done = co_await pred();
        if (done) co_return true;
        if (std::chrono::steady_clock::now() > deadline) co_return false;
        co_await pause(io, std::chrono::milliseconds(20));
    }
}

}  // namespace pfs::test
