#include "chunk_reaper.hpp"

#include <algorithm>
#include <memory>

#include "log.hpp"
#include "wire.hpp"

namespace pfs::meta {

void ChunkReaper::remove(const StripeLayout& layout, const pfs_entry_id& file) {
    auto [it, fresh] = queued_.try_emplace(EntryKey::of(file));
    if (!fresh) return;
    it->second.insert(layout.targets.begin(), layout.targets.end());
    if (it->second.empty()) {  // no targets, no chunks
        queued_.erase(it);
        if (reaped_) reaped_({file});
        return;
    }
    for (uint32_t target : it->second) {
        Queue& q = queues_[target];
        q.files.push_back(file);
        if (!q.draining) {
            q.draining = true;
            asio::co_spawn(ex_, drain(target), asio::detached);
        }
    }
}

size_t ChunkReaper::sweep(const std::map<EntryKey, StripeLayout>& files, size_t max) {
    size_t added = 0;
    for (auto it = files.begin(); it != files.end() && added < max; ++it) {
        if (queued_.count(it->first)) continue;
        remove(it->second, it->first.id());
        ++added;
    }
    return added;
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

void ChunkReaper::done(uint32_t target, std::span<const pfs_entry_id> files, bool ok) {
    std::vector<pfs_entry_id> reaped;
    for (const auto& f : files) {
        auto it = queued_.find(EntryKey::of(f));
        if (it == queued_.end()) continue;
        if (!ok) {
            // Forgotten here, kept in the durable set: a sweep retries all
            // of its targets (deleting a chunk twice is no harm).
            queued_.erase(it);
            continue;
        }
        it->second.erase(target);
        if (it->second.empty()) {
            reaped.push_back(f);
            queued_.erase(it);
        }
    }
    if (!reaped.empty() && reaped_) reaped_(std::move(reaped));
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
        if (!reply && !q.failing)
            log::warn("cannot delete removed files' chunks; retrying until the target answers",
                      {{"target", target}, {"files", m->count}, {"error", reply.error().message}});
        else if (reply && q.failing)
            log::info("deleting removed files' chunks again", {{"target", target}});
        q.failing = !reply;
        q.sending = 0;
        done(target, std::span<const pfs_entry_id>(m->files, m->count), reply.ok());
    }
    q.draining = false;
}

}  // namespace pfs::meta
