#include "blocks_counter.hpp"

namespace pfs::meta {

void BlocksCounter::count(const pfs_entry_id& id) {
    if (!ns_ || queue_.size() >= kQueueMax) return;
    auto started = ns_->start_blocks_count(id);
    if (started) enqueue(Job{id, std::move(*started)});
}

void BlocksCounter::enqueue(Job job) {
    queue_.push_back(std::move(job));
    if (workers_ < kWorkers) {
        ++workers_;
        asio::co_spawn(ex_, work(), asio::detached);
    }
}

awaitable<std::optional<uint64_t>> BlocksCounter::count_now(const pfs_entry_id& id) {
    if (!ns_) co_return std::nullopt;
    auto started = ns_->start_blocks_count(id);
    if (!started) co_return std::nullopt;
    Job job{id, std::move(*started)};
    if (is_inline_layout(job.count.layout)) co_return co_await run(job);
    if (queue_.size() < kQueueMax)
        enqueue(std::move(job));
    else
        ns_->end_blocks_count(id, job.count.epoch, std::nullopt);
    co_return std::nullopt;
}

awaitable<std::optional<uint64_t>> BlocksCounter::run(const Job& job) {
    Result<uint64_t> bytes = Error{-EIO, "not counted"};
    if (is_inline_layout(job.count.layout))
        bytes = co_await inline_bytes_(job.id);
    else
        bytes = co_await files_.allocated(job.count.layout, job.id);
    // A failed count (a target down) leaves it unknown: clients count
    // themselves meanwhile, and the next lookup tries again.
    const auto blocks = bytes ? std::optional<uint64_t>(*bytes / 512) : std::nullopt;
    ns_->end_blocks_count(job.id, job.count.epoch, blocks);
    co_return blocks;
}

awaitable<void> BlocksCounter::work() {
    while (!queue_.empty()) {
        Job job = std::move(queue_.front());
        queue_.pop_front();
        co_await run(job);
    }
    --workers_;
}

}  // namespace pfs::meta
