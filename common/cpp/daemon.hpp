// What every PFS daemon does the same way at start-up.
#pragma once

#include <chrono>
#include <functional>

#include "asio.hpp"
#include "auth_crypto.hpp"
#include "config.hpp"
#include "rpc_server.hpp"

namespace pfs::daemon {

inline constexpr const char* kDefaultAuthFile = "/etc/pfs/auth.secret";

// --auth-file, for daemons and tools alike.
void add_auth_option(Options& options);
// Loads the secret named by --auth-file.
Result<auth::Secret> load_secret(const Options& options);
// The request server's options (listen address and port aside): frame
// MACs, connection quotas, request memory. frame_macs: the default.
void add_server_options(Options& options, bool frame_macs);
// What the options of add_server_options say, with --listen and --port;
// raises the open-file limit for the connections to come.
Result<ServerConfig> server_config(const Options& options, ServerConfig config);
// Parses options; returns an exit code to leave with, or -1 to go on.
int parse_or_exit(Options& options, int argc, char** argv);
// Stops the loop on SIGINT/SIGTERM, logging the signal; runs before_stop
// (when given) first, for at most `grace`.
void stop_on_signals(asio::io_context& io, asio::signal_set& signals,
                     std::function<awaitable<void>()> before_stop = {},
                     std::chrono::milliseconds grace = std::chrono::seconds(5));
// mkdir -p with a clear error.
Status ensure_directory(const std::string& path);

}  // namespace pfs::daemon
