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

// Creates (and closes) files in dir (made striped over `stripes` metadata
// servers, 0: as its parent says), with `workers` concurrent workers, until
// it holds each of `checkpoints` (increasing) entries in turn.
// server_pids: the metadata servers', whose resident memory (added up) is
// read at the start and at each checkpoint (this machine's /proc); none:
// not measured.
awaitable<Result<std::vector<GrowthStep>>> grow_directory(client::FileSystem& fs, const std::string& dir,
                                                         std::vector<uint64_t> checkpoints, int workers,
                                                         std::vector<pid_t> server_pids, uint32_t stripes);

// Parses "123" or "123,456": the pids of --server-pid.
Result<std::vector<pid_t>> parse_pids(const std::string& text);

// Parses "10000,100000,1000000" (also 10k, 1M): increasing and positive.
Result<std::vector<uint64_t>> parse_checkpoints(const std::string& text);

}  // namespace pfs::bench
