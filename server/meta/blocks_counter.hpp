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
// An inline file's count is this server's own (a statx of its data here),
// and a stat that finds it unknown waits for it (count_now): cheaper than
// the client's count and the background one, round trips to itself each.
//
// At most kWorkers counts run at once and kQueueMax wait; a file left out
// is counted at its next stat.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>

#include "asio.hpp"
#include "namespace.hpp"
#include "striped_io.hpp"

namespace pfs::meta {

class BlocksCounter {
public:
    static constexpr size_t kWorkers = 8;
    static constexpr size_t kQueueMax = 4096;

    // Bytes an inline file's data takes on this server's disk.
    using InlineBytes = std::function<awaitable<Result<uint64_t>>(const pfs_entry_id&)>;

    BlocksCounter(asio::any_io_executor ex, client::StripedIo& files, InlineBytes inline_bytes)
        : ex_(std::move(ex)), files_(files), inline_bytes_(std::move(inline_bytes)) {}

    void attach(Namespace& ns) { ns_ = &ns; }
    // Counts id's st_blocks if the namespace does not know it and no count
    // runs.
    void count(const pfs_entry_id& id);
    // The same, but an inline file's count is made before it returns, and
    // returned: its st_blocks once known; nothing when a count runs, the
    // file is open, or its count went to the background.
    awaitable<std::optional<uint64_t>> count_now(const pfs_entry_id& id);

private:
    struct Job {
        pfs_entry_id id{};
        BlocksCount count;
    };

    void enqueue(Job job);
    awaitable<void> work();
    // Counts job's file and tells the namespace: its st_blocks, or nothing
    // where a target did not answer.
    awaitable<std::optional<uint64_t>> run(const Job& job);

    asio::any_io_executor ex_;
    client::StripedIo& files_;
    InlineBytes inline_bytes_;
    Namespace* ns_ = nullptr;
    std::deque<Job> queue_;
    size_t workers_ = 0;
};

}  // namespace pfs::meta
