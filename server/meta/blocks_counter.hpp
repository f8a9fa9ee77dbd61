// Counts the st_blocks of regular files on their storage targets (one
// CHUNK_STAT to each), in the background, so that a stat(2) costs one
// request to the metadata server instead of one per target: after the last
// close that follows a change, and when a lookup finds a file's count
// unknown (how a restarted server learns them again). Like BeeGFS's
// dynamic attributes, the value is the one after the last writer's report:
// data another client still holds unreported is not in it.
//
// At most kWorkers counts run at once and kQueueMax wait; a file left out
// is counted at its next lookup.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>

#include "asio.hpp"
#include "namespace.hpp"
#include "striped_io.hpp"

namespace pfs::meta {

class BlocksCounter {
public:
    static constexpr size_t kWorkers = 8;
    static constexpr size_t kQueueMax = 4096;

    BlocksCounter(asio::any_io_executor ex, client::StripedIo& files) : ex_(std::move(ex)), files_(files) {}

    void attach(Namespace& ns) { ns_ = &ns; }
    // Counts id's st_blocks if the namespace does not know it and no count
    // runs; a file open now only if even_if_open (a writer's later report
    // would make the count stale at once).
    void count(const pfs_entry_id& id, bool even_if_open);
    // Counts finished, failed ones included.
    uint64_t counted() const { return counted_; }

private:
    struct Job {
        pfs_entry_id id{};
        BlocksCount count;
    };

    awaitable<void> work();

    asio::any_io_executor ex_;
    client::StripedIo& files_;
    Namespace* ns_ = nullptr;
    std::deque<Job> queue_;
    size_t workers_ = 0;
    uint64_t counted_ = 0;
};

}  // namespace pfs::meta
