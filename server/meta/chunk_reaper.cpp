#include "chunk_reaper.hpp"

#include <algorithm>
#include <memory>

#include "log.hpp"
#include "wire.hpp"

namespace pfs::meta {

void ChunkReaper::remove(const StripeLayout& layout, const pfs_entry_id& file) {
    for (uint32_t target : layout.targets) {
        Queue& q = queues_[target];
        q.files.push_back(file);
        if (!q.draining) {
            q.draining = true;
            asio::co_spawn(ex_, drain(target), asio::detached);
        }
    }
}

size_t ChunkReaper::pending() const {
    size_t n = 0;
    for (const auto& [target, q] : queues_) n += q.files.size() + q.sending;
    return n;
}

awaitable<void> ChunkReaper::flush() {
    flushing_ = true;
    for (auto& [target, q] : queues_)
        if (q.linger) q.linger->cancel();
    asio::steady_timer poll(ex_);
    while (pending() > 0) {
        poll.expires_after(std::chrono::milliseconds(10));
        co_await poll.async_wait(asio::use_awaitable);
    }
}

awaitable<void> ChunkReaper::drain(uint32_t target) {
    Queue& q = queues_[target];
    if (linger_.count() > 0 && !flushing_) {
        // Cut short (cancelled) by flush().
        q.linger = std::make_unique<asio::steady_timer>(ex_, linger_);
        boost::system::error_code ec;
        co_await q.linger->async_wait(asio::redirect_error(asio::use_awaitable, ec));
        q.linger.reset();
    }
    while (!q.files.empty()) {
        auto m = std::make_unique<pfs_chunk_unlink_many>();
        m->target_id = target;
        m->count = static_cast<uint32_t>(std::min<size_t>(q.files.size(), PFS_CHUNK_UNLINK_MAX));
        std::copy_n(q.files.begin(), m->count, m->files);
        q.files.erase(q.files.begin(), q.files.begin() + m->count);
        q.sending = m->count;
        ++requests_;
        auto reply = co_await cluster_.call_target_ok(target, PFS_MSG_CHUNK_UNLINK_MANY,
                                                      encode(pfs_x_chunk_unlink_many, *m));
        if (!reply)
            log::warn("cannot delete removed files' chunks; fsck will find them",
                      {{"target", target}, {"files", m->count}, {"error", reply.error().message}});
        q.sending = 0;
    }
    q.draining = false;
}

}  // namespace pfs::meta
