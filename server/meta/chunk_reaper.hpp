// Deletes the chunk files of removed files, in the background and batched
// per storage target: the first file queued for an idle target waits
// `linger` for company, and while one CHUNK_UNLINK_MANY to a target is on
// its way the files removed meanwhile queue for the next, so a stream of
// unlinks costs a few requests per target rather than one per file and
// target (4 of them per unlink on a 4-target stripe halved pfs.ko's unlink
// rate). A target that cannot be reached, or a server that stops before
// the queue is sent, leaves orphan chunks, which `pfs-ctl fsck` reports;
// nothing is retried.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "asio.hpp"
#include "cluster.hpp"
#include "stripe_layout.hpp"

namespace pfs::meta {

class ChunkReaper {
public:
    static constexpr std::chrono::milliseconds kDefaultLinger{100};

    ChunkReaper(asio::any_io_executor ex, client::Cluster& cluster,
                std::chrono::milliseconds linger = kDefaultLinger)
        : ex_(std::move(ex)), cluster_(cluster), linger_(linger) {}

    // Queues the chunks of file on every target of its layout.
    void remove(const StripeLayout& layout, const pfs_entry_id& file);
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
        std::unique_ptr<asio::steady_timer> linger;  // while drain() lingers
    };

    // Sends the target's queue in batches until it is empty.
    awaitable<void> drain(uint32_t target);

    asio::any_io_executor ex_;
    client::Cluster& cluster_;
    std::chrono::milliseconds linger_;
    bool flushing_ = false;
    std::unordered_map<uint32_t, Queue> queues_;  // by target id; node-based: references stay valid
    uint64_t requests_ = 0;
};

}  // namespace pfs::meta
