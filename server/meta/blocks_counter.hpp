// Counts the st_blocks of regular files on their storage targets (one
// CHUNK_STAT to each), in the background, when a stat (LOOKUP, GETATTR, an
// entry of READDIR_PLUS) finds the count of a file nobody has open
// unknown: a change made it so (a writer's report, a truncate), or the
// server restarted. Not while it
// is open: a writer's revalidations would start a count after each of its
// reports, each undone by the next. The clients count themselves
// meanwhile, once; later stats of the file, from any client, cost one
// request to the metadata server instead of one per target. Not at the
// close after a write: files written once and never stat'ed (a data set
// being made) would cost the targets a CHUNK_STAT each for nothing, and
// that took 15-20% off writing 100 KiB files in the test guest. Like
// BeeGFS's dynamic attributes, the value is the one after the last
// writer's report: data another client holds unreported is not in it.
//
// At most kWorkers counts run at once and kQueueMax wait; a file left out
// is counted at its next stat.
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
    // runs.
    void count(const pfs_entry_id& id);

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
};

}  // namespace pfs::meta
