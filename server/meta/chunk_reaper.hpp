// Deletes the chunk files of removed files, in the background and batched
// per storage target: while one CHUNK_UNLINK_MANY to a target is on its
// way, the files removed meanwhile queue for the next, so a burst of
// unlinks costs a few requests per target rather than one per file and
// target. A target that cannot be reached leaves orphan chunks, which
// `pfs-ctl fsck` reports; nothing is retried.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "asio.hpp"
#include "cluster.hpp"
#include "stripe_layout.hpp"

namespace pfs::meta {

class ChunkReaper {
public:
    ChunkReaper(asio::any_io_executor ex, client::Cluster& cluster) : ex_(std::move(ex)), cluster_(cluster) {}

    // Queues the chunks of file on every target of its layout.
    void remove(const StripeLayout& layout, const pfs_entry_id& file);

    // Files queued or on their way, over all targets.
    size_t pending() const;
    // CHUNK_UNLINK_MANY requests sent so far.
    uint64_t requests() const { return requests_; }

private:
    struct Queue {
        std::vector<pfs_entry_id> files;
        size_t sending = 0;  // files in the request on its way; 0: none
    };

    // Sends the target's queue in batches until it is empty.
    awaitable<void> drain(uint32_t target);

    asio::any_io_executor ex_;
    client::Cluster& cluster_;
    std::unordered_map<uint32_t, Queue> queues_;  // by target id; node-based: references stay valid
    uint64_t requests_ = 0;
};

}  // namespace pfs::meta
