// The start-up shared by pfs-meta and pfs-storage: options, secret, the
// request server on its port, and the agent that keeps the node registered
// with pfs-mgmtd.
#pragma once

#include <functional>
#include <memory>

#include "config.hpp"
#include "node_agent.hpp"
#include "rpc_server.hpp"
#include "worker_loops.hpp"

namespace pfs {

struct ServerDaemon {
    const char* program;
    const char* summary;
    uint16_t node_type;
    uint16_t default_port;
    const char* default_state_dir;
    bool has_storage_targets;
    // Whether frames carry MACs unless configured otherwise: metadata
    // traffic yes; bulk data only where the client asks (it costs a hash
    // of every byte).
    bool frame_macs;
    // How it uses the cores (--threads unless `one`).
    enum class Loops {
        one,           // everything on the main loop
        every_core,    // connections and their handlers on every loop: the handlers are safe on several at once
        handlers_on_main,  // connections (handshake, framing, MACs, replies) on every loop, handlers on the
                           // main one: the daemon's state belongs to that loop
    } loops;
    // The daemon's own options, besides the common ones (optional).
    std::function<void(Options&)> add_options = {};
};

// What a daemon's own parts may need besides the server and the agent.
struct DaemonContext {
    asio::io_context& io;
    Endpoint mgmtd;
    const auth::Secret& secret;
    std::filesystem::path state_dir;
    const Options& options;  // parsed: the daemon's own options among them
    WorkerLoops& loops;      // besides the main loop (none unless spec.loops says)
    // Work to finish on SIGINT/SIGTERM before the loop stops (at most a
    // few seconds); install may set it.
    std::function<awaitable<void>()> before_stop = {};
    // Once every loop stopped, before what they had pending is destroyed:
    // joins helper threads that hand work back to the loops (install may
    // set it).
    std::function<void()> after_stop = {};
};

// What a daemon builds at install (its service, stores, clients), kept until
// the loop has stopped and destroyed before the loop is: these parts hold
// the loop's sockets and timers.
using DaemonParts = std::shared_ptr<void>;
using InstallFn = std::function<Result<DaemonParts>(RpcServer&, NodeAgent&, DaemonContext&)>;

// Runs the daemon until SIGINT/SIGTERM; `install` adds its request handlers
// and hands over the parts they use.
int run_server_daemon(const ServerDaemon& spec, int argc, char** argv, const InstallFn& install);

}  // namespace pfs
