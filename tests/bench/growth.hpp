// One directory grown to a million entries and more (`pfs-bench --growth`):
// creates/s over each stretch and the metadata server's memory per entry at
// each checkpoint, to see that neither degrades as the directory grows.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "filesystem.hpp"

namespace pfs::bench {

struct GrowthStep {
    uint64_t entries = 0;           // in the directory at this checkpoint
    double creates_s = 0;           // since the previous checkpoint
    uint64_t server_rss_bytes = 0;  // 0: no --server-pid
    double bytes_per_entry = 0;     // RSS grown since the start, per entry
};

// Creates (and closes) files in dir, with `workers` concurrent workers,
// until it holds each of `checkpoints` (increasing) entries in turn.
// server_pid: the metadata server's, whose resident memory is read at the
// start and at each checkpoint (this machine's /proc); 0 for none.
awaitable<Result<std::vector<GrowthStep>>> grow_directory(client::FileSystem& fs, const std::string& dir,
                                                         std::vector<uint64_t> checkpoints, int workers,
                                                         pid_t server_pid);

// Parses "10000,100000,1000000" (also 10k, 1M): increasing and positive.
Result<std::vector<uint64_t>> parse_checkpoints(const std::string& text);

}  // namespace pfs::bench
