// The peer every PFS figure is printed next to: the same workload on the
// local file system that backs the storage targets, with real threads.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pfs::bench {

struct Figures {
    double seq_write_mbs = 0, seq_read_mbs = 0;
    double dl_read_files_s = 0;
    double create_shared_s = 0, stat_shared_s = 0, unlink_shared_s = 0;
    double create_private_s = 0;
};

struct Workload {
    int threads = 4;
    uint64_t seq_mib_per_thread = 64;
    int dl_files = 2000;            // 100 KiB each, two-level tree
    int meta_files_per_thread = 2000;
};

// Runs every workload under dir (created, then removed).
Figures run_local(const std::string& dir, const Workload& w);

}  // namespace pfs::bench
