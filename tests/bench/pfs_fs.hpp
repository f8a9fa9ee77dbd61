// The same workloads as local_fs.hpp through libpfs: N concurrent workers
// (coroutines) on one client thread.
#pragma once

#include "filesystem.hpp"
#include "local_fs.hpp"

namespace pfs::bench {

awaitable<Result<Figures>> run_pfs(client::FileSystem& fs, const std::string& dir, const Workload& w);

}  // namespace pfs::bench
