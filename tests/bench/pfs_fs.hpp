// The same workloads as local_fs.hpp through libpfs: N concurrent workers
// (coroutines) on one client thread.
#pragma once

#include <functional>

#include "filesystem.hpp"
#include "local_fs.hpp"

namespace pfs::bench {

using Worker = std::function<awaitable<Result<Unit>>(int)>;

// Runs n workers (coroutines) concurrently; the wall time, or the first error.
awaitable<Result<double>> parallel(int n, Worker worker);

awaitable<Result<Figures>> run_pfs(client::FileSystem& fs, const std::string& dir, const Workload& w);

}  // namespace pfs::bench
