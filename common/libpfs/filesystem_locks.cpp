// FileSystem's advisory locks and the end of its sessions. The metadata
// server never makes a lock request wait: a blocking lock is a retry loop
// here, with exponential backoff, so a waiter takes at most lock_retry_max
// to notice a release (and may lose the race to another client: no FIFO).
#include <unistd.h>

#include <algorithm>

#include "filesystem.hpp"

namespace pfs::client {

using namespace std::chrono_literals;

Result<Bytes> FileSystem::lock_req(const OpenFile& file, uint8_t kind, uint8_t type, uint64_t start,
                                   uint64_t len) const {
    if (file.owner == 0) return Error{-EBADF, "file is not open"};
    pfs_lock_req m{file.attr.id, kind, type, start, PFS_LOCK_EOF, file.owner, static_cast<uint32_t>(getpid())};
    if (kind == PFS_LOCK_FLOCK) {
        m.start = 0;
    } else if (len != 0) {
        if (len - 1 > PFS_LOCK_EOF - start) return Error{-EINVAL, "lock range beyond the largest offset"};
        m.end = start + len - 1;
    }
    if ((kind != PFS_LOCK_FLOCK && kind != PFS_LOCK_POSIX) || type < PFS_LOCK_READ || type > PFS_LOCK_UNLOCK)
        return Error{-EINVAL, "bad lock kind or type"};
    return encode(pfs_x_lock_req, m);
}

bool FileSystem::locks_lost(const OpenFile& file) const {
    return file.locked && keeper_.lost(file.attr.id.owner_node, file.lock_epoch);
}

namespace {

// Said once; from then on the file holds no lock.
Error locks_gone(OpenFile& file) {
    file.locked = false;
    file.lock_epoch = 0;
    return Error{-ENOLCK, "the locks of inode " + std::to_string(file.attr.id.ino) +
                              " were lost with our session on metadata server " +
                              std::to_string(file.attr.id.owner_node)};
}

}  // namespace

awaitable<Status> FileSystem::lock(OpenFile& file, uint8_t kind, uint8_t type, uint64_t start, uint64_t len,
                                   bool wait) {
    auto req = lock_req(file, kind, type, start, len);
    if (!req) co_return req.error();
    co_await keeper_.verify(file.attr.id.owner_node);
    if (locks_lost(file)) {
        // An unlock still goes out: harmless, and what the caller asked for.
        if (type == PFS_LOCK_UNLOCK) (void)co_await meta(file.attr.id, PFS_MSG_LOCK, *req);
        co_return locks_gone(file);
    }
    const uint64_t held = file.locked ? file.lock_epoch : 0;
    if (type != PFS_LOCK_UNLOCK) file.locked = true;  // set before asking: a lost reply may have granted it
    asio::steady_timer backoff(cluster_.executor());
    auto delay = 5ms;
    for (;;) {
        uint64_t epoch = 0;
        auto r = co_await meta(file.attr.id, PFS_MSG_LOCK, *req, &epoch);
        if (r) {
            if (held != 0 && epoch != 0 && epoch != held) {
                // Served by a session that is not the one our locks were
                // taken in (it expired while we could not tell): those are
                // gone. That is said first; a new lock is given back.
                if (type != PFS_LOCK_UNLOCK)
                    (void)co_await meta(file.attr.id, PFS_MSG_LOCK, lock_req(file, kind, PFS_LOCK_UNLOCK, start, len));
                co_return locks_gone(file);
            }
            if (type != PFS_LOCK_UNLOCK && epoch) file.lock_epoch = epoch;
            co_return ok_status();
        }
        if (!wait || r.error().code != -EAGAIN) co_return r.error();
        backoff.expires_after(delay);
        co_await backoff.async_wait(asio::use_awaitable);
        delay = std::min<std::chrono::milliseconds>(delay * 2, options_.lock_retry_max);
    }
}

awaitable<Status> FileSystem::unlock(OpenFile& file, uint8_t kind, uint64_t start, uint64_t len) {
    co_return co_await lock(file, kind, PFS_LOCK_UNLOCK, start, len, false);
}

awaitable<Result<pfs_lock_conflict>> FileSystem::getlk(OpenFile& file, uint8_t kind, uint8_t type, uint64_t start,
                                                       uint64_t len) {
    auto req = lock_req(file, kind, type, start, len);
    if (!req) co_return req.error();
    auto body = co_await meta(file.attr.id, PFS_MSG_GETLK, std::move(*req));
    if (!body) co_return body.error();
    co_return decode(*body, pfs_x_lock_conflict);
}

awaitable<Status> FileSystem::shutdown() { co_return co_await keeper_.end(); }

}  // namespace pfs::client
