// The workloads through plain POSIX calls on a directory with real threads:
// the local file system beside PFS (`make bench`), or any mounted file
// system (pfs.ko, NFS, ...) with `pfs-bench --posix NAME=DIR`.
#pragma once

#include <cstdint>
#include <string>

#include "result.hpp"

namespace pfs::bench {

struct Figures {
    double seq_write_mbs = 0, seq_read_mbs = 0;
    // O_DIRECT: POSIX systems only (libpfs has no client cache to bypass).
    double direct_write_mbs = 0, direct_read_mbs = 0;
    double dl_write_files_s = 0, dl_read_files_s = 0;
    double create_shared_s = 0, stat_shared_s = 0, unlink_shared_s = 0;
    // One worker lists the shared directory and stats every entry (ls -l).
    double list_stat_shared_s = 0;
    double create_private_s = 0;
};

// Which workloads a run does.
enum class Only { all, sequential, small_files, metadata };

struct Workload {
    int meta_workers() const { return meta_threads > 0 ? meta_threads : threads; }
    // Whether this part of the workloads runs (--seq-only and the like).
    bool runs(Only part) const { return only == Only::all || only == part; }

    int threads = 4;
    uint64_t seq_mib_per_thread = 64;
    int dl_files = 2000;            // 100 KiB each, two-level tree
    int meta_files_per_thread = 2000;
    // Workers of the metadata workload (c), 0: as many as `threads`. A
    // metadata server's throughput shows under many concurrent clients
    // (as mdtest runs it), streams saturate with a few.
    int meta_threads = 0;
    // Before each read or stat phase: sync and drop the kernel's page,
    // dentry and inode caches, so that phase reaches the file system (and,
    // for a network file system, its server) instead of the client's cache.
    bool drop_caches = false;
    // Only the sequential streams (a) (`--seq-only`) or only the metadata
    // workload (c) (`--meta-only`): servers compared with themselves, e.g.
    // by thread count.
    Only only = Only::all;
    // The PFS directory (and so its subdirectories) striped over this many
    // metadata servers (`--dir-stripes`; 0: as its parent's pattern says).
    uint32_t dir_stripes = 0;
};

// sync, then `echo 3 > /proc/sys/vm/drop_caches` (root only).
Status drop_caches();

// Runs every workload under dir, which it creates and removes again: give it
// a directory of its own, never a mount point.
Figures run_local(const std::string& dir, const Workload& w);

}  // namespace pfs::bench
