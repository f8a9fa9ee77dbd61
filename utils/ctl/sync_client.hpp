// What pfs-ctl's synchronous clients (mgmt_client.cpp, fs_client.cpp) share:
// the connection settings from the command line, the words for a management
// daemon that does not answer, and (run_sync.hpp) the driving of coroutines
// to completion from plain code on a private io_context. Includes Asio: only
// for those two files.
#pragma once

#include <chrono>
#include <memory>

#include "asio.hpp"
#include "client_settings.hpp"
#include "config.hpp"
#include "rpc_client.hpp"
#include "run_sync.hpp"

namespace pfs::ctl {

using client::ClientSettings;
// --mgmtd, --auth-file and --timeout-ms, checked; errors carry exit statuses.
Result<ClientSettings> load_settings(const Options& options);

// A request to pfs-mgmtd at `address` that got no answer, in the operator's
// terms (exit status 3). `was_connected`: the connection had been made.
Error mgmtd_no_answer(const Error& e, const std::string& address, std::chrono::milliseconds timeout,
                      bool was_connected);

}  // namespace pfs::ctl
