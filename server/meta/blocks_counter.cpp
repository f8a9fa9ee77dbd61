#include "blocks_counter.hpp"

namespace pfs::meta {

void BlocksCounter::count(const pfs_entry_id& id) {
    if (!ns_ || queue_.size() >= kQueueMax) return;
    auto started = ns_->start_blocks_count(id);
    if (!started) return;
    queue_.push_back(Job{id, std::move(*started)});
    if (workers_ < kWorkers) {
        ++workers_;
        asio::co_spawn(ex_, work(), asio::detached);
    }
}

awaitable<void> BlocksCounter::work() {
    while (!queue_.empty()) {
        Job job = std::move(queue_.front());
        queue_.pop_front();
        auto bytes = co_await files_.allocated(job.count.layout, job.id);
        // A failed count (a target down) leaves it unknown: clients count
        // themselves meanwhile, and the next lookup tries again.
        ns_->end_blocks_count(job.id, job.count.epoch, bytes ? std::optional<uint64_t>(*bytes / 512) : std::nullopt);
    }
    --workers_;
}

}  // namespace pfs::meta
