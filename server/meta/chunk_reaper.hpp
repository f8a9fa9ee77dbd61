// Deletes the chunk files of removed files, in the background and batched
// per storage target: the first file queued for an idle target waits
// `linger` for company, and while one CHUNK_UNLINK_MANY to a target is on
// its way the files removed meanwhile queue for the next, so a stream of
// unlinks costs a few requests per target rather than one per file and
// target (4 of them per unlink on a 4-target stripe halved pfs.ko's unlink
// rate).
//
// Nothing is lost: the namespace keeps every freed file in its durable
// set of files to reap (Namespace::reaping) until this reports its chunks
// gone from every target of its layout (on_reaped). A target that cannot
// be reached drops the files of that request from here; sweep() queues the
// set's files that are not queued again, so they are retried until the
// target is back, across restarts too. What is queued at once is bounded
// by what sweep() is allowed to add.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <unordered_map>
#include <vector>

#include "asio.hpp"
#include "cluster.hpp"
#include "entry_key.hpp"
#include "stripe_layout.hpp"

namespace pfs::meta {

class ChunkReaper {
public:
    static constexpr std::chrono::milliseconds kDefaultLinger{100};
    using ReapedFn = std::function<void(std::vector<pfs_entry_id>)>;

    ChunkReaper(asio::any_io_executor ex, client::Cluster& cluster,
                std::chrono::milliseconds linger = kDefaultLinger)
        : ex_(std::move(ex)), cluster_(cluster), linger_(linger) {}

    // Files whose chunks are gone from every target of their layout.
    void on_reaped(ReapedFn fn) { reaped_ = std::move(fn); }
    // Queues the chunks of file on every target of its layout (nothing if
    // it is queued already).
    void remove(const StripeLayout& layout, const pfs_entry_id& file);
    // Queues, of files, at most max that are not queued (the retries of
    // deletions that failed); returns how many.
    size_t sweep(const std::map<EntryKey, StripeLayout>& files, size_t max);
    // Sends everything queued now, lingering no more, and returns once
    // nothing is pending (a server stopping cleanly leaves no orphans).
    awaitable<void> flush();

    // Files queued or on their way, over all targets.
    size_t pending() const;
    // CHUNK_UNLINK_MANY requests sent so far.
    uint64_t requests() const { return requests_; }

private:
    struct Queue {
        std::vector<pfs_entry_id> files;
        size_t sending = 0;  // files in the request on its way; 0: none
        bool draining = false;  // drain() runs for this target
        bool failing = false;   // the last request failed (logged once)
        std::unique_ptr<asio::steady_timer> linger;  // while drain() lingers
    };

    // Sends the target's queue in batches until it is empty.
    awaitable<void> drain(uint32_t target);
    // A request to target for these files ended.
    void done(uint32_t target, std::span<const pfs_entry_id> files, bool ok);

    asio::any_io_executor ex_;
    client::Cluster& cluster_;
    std::chrono::milliseconds linger_;
    ReapedFn reaped_;
    bool flushing_ = false;
    std::unordered_map<uint32_t, Queue> queues_;  // by target id; node-based: references stay valid
    std::map<EntryKey, std::set<uint32_t>> queued_;  // each queued file: the targets still to confirm
    uint64_t requests_ = 0;
};

}  // namespace pfs::meta
