#include "server_main.hpp"

#include <sched.h>
#include <unistd.h>

#include <thread>

#include <boost/algorithm/string/split.hpp>

#include "daemon.hpp"
#include "log.hpp"
#include "rdma/rdma_transport.hpp"

namespace pfs {
namespace {

std::string host_name() {
    char buf[256] = {};
    if (gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') return "localhost";
    return buf;
}

// The cores this process may run on (its affinity, as a container's
// cpuset sets it), not every core of the machine.
unsigned usable_cores() {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return static_cast<unsigned>(CPU_COUNT(&set));
    return std::max(1u, std::thread::hardware_concurrency());
}

std::vector<std::filesystem::path> split_targets(const std::vector<std::string>& values) {
    std::vector<std::filesystem::path> out;
    for (const auto& v : values) {
        std::vector<std::string> parts;
        boost::split(parts, v, [](char c) { return c == ','; });
        for (auto& p : parts)
            if (!p.empty()) out.push_back(std::filesystem::absolute(p).lexically_normal());
    }
    return out;
}

// The addresses --rdma-interfaces names ("none": no RDMA).
Result<std::vector<std::string>> rdma_addresses(const std::string& value) {
    if (value == "none" || value.empty()) return std::vector<std::string>{};
    std::vector<std::string> names;
    boost::split(names, value, [](char c) { return c == ','; });
    std::erase(names, std::string());
    auto addrs = rdma::interface_addresses(names);
    if (addrs && addrs->empty() && value == "auto") log::debug("no RDMA interface: serving TCP only");
    return addrs;
}

}  // namespace

int run_server_daemon(const ServerDaemon& spec, int argc, char** argv, const InstallFn& install) {
    log::set_component(spec.program);
    Options options(spec.program, spec.summary);
    daemon::add_auth_option(options);
    options.add()
        ("mgmtd", po::value<std::string>()->default_value("localhost"), "management daemon, HOST[:PORT]")
        ("listen", po::value<std::string>()->default_value("0.0.0.0"), "address to listen on")
        ("port", po::value<uint16_t>()->default_value(spec.default_port), "TCP port to listen on")
        ("alias", po::value<std::string>()->default_value(host_name()),
         "node name shown by pfs-ctl; unique per node type")
        ("advertise-host", po::value<std::string>()->default_value(""),
         "address clients use to reach this node (default: the one mgmtd sees)")
        ("state-dir", po::value<std::string>()->default_value(spec.default_state_dir),
         spec.node_type == PFS_NODE_META ? "metadata directory (node ID, journal, snapshots)"
                                         : "where the node ID is kept")
        ("heartbeat-ms", po::value<unsigned>()->default_value(2000), "heartbeat interval to mgmtd")
        ("rdma-interfaces", po::value<std::string>()->default_value("auto"),
         "network interfaces whose IPv4 addresses serve RDMA too, comma-separated (e.g. ib0,ib1); "
         "auto: every interface that backs an RDMA device; none: TCP only");
    if (spec.loops == ServerDaemon::Loops::every_core)
        options.add()("threads", po::value<unsigned>()->default_value(0),
                      "event loops serving connections, each on a thread of its own (0: one per core); "
                      "a connection stays on one of them");
    if (spec.loops == ServerDaemon::Loops::handlers_on_main)
        options.add()("threads", po::value<unsigned>()->default_value(0),
                      "event loops serving connections (handshake, frames, MACs, replies), each on a thread of "
                      "its own; the requests themselves run on the main loop (0: one per 4 cores, at least 1)");
    if (spec.has_storage_targets)
        options.add()("targets", po::value<std::vector<std::string>>()->composing(),
                      "storage target directories (comma-separated or repeated); each must exist");
    daemon::add_server_options(options, spec.frame_macs);
    if (spec.add_options) spec.add_options(options);
    if (int rc = daemon::parse_or_exit(options, argc, argv); rc >= 0) return rc;

    auto mgmtd = parse_endpoint(options.get<std::string>("mgmtd"), PFS_DEFAULT_MGMTD_PORT);
    if (!mgmtd) {
        log::error("--mgmtd: " + mgmtd.error().message);
        return 2;
    }
    std::vector<std::filesystem::path> targets;
    if (spec.has_storage_targets) {
        if (options.has("targets")) targets = split_targets(options.get<std::vector<std::string>>("targets"));
        if (targets.empty()) {
            log::error("no storage targets configured (--targets DIR[,DIR...])");
            return 2;
        }
    }
    auto secret = daemon::load_secret(options);
    if (!secret) {
        log::error(secret.error().message);
        return 1;
    }
    std::string state_dir = options.get<std::string>("state-dir");
    if (auto st = daemon::ensure_directory(state_dir); !st) {
        log::error(st.error().message);
        return 1;
    }

    auto config = daemon::server_config(options, ServerConfig{});
    if (!config) {
        log::error(config.error().message);
        return 2;
    }
    auto rdma = rdma_addresses(options.get<std::string>("rdma-interfaces"));
    if (!rdma) {
        log::error("--rdma-interfaces: " + rdma.error().message);
        return 2;
    }
    config->rdma_addresses = *rdma;
    unsigned threads = spec.loops != ServerDaemon::Loops::one ? options.get<unsigned>("threads") : 1;
    // Where every handler runs on the main loop, a loop per core would
    // mostly hand requests between threads: on 2 cores a second loop made
    // pfs-meta 0.61-0.81x as fast (make bench, 2026-11-28). One per 4
    // cores leaves the main loop most of a core's worth of framing to shed.
    if (threads == 0)
        threads = spec.loops == ServerDaemon::Loops::handlers_on_main ? std::max(1u, usable_cores() / 4)
                                                                       : usable_cores();
    if (threads > 1024) {
        log::error("--threads: at most 1024");
        return 2;
    }
    EventLoop io;
    // Declared before what runs on them, so they are destroyed after it.
    WorkerLoops loops(threads - 1);
    RpcServer server(io, *config, *secret);
    server.spread_over(loops);
    if (spec.loops == ServerDaemon::Loops::handlers_on_main) server.handlers_on(io.get_executor());
    auto port = server.start();
    if (!port) {
        log::error(port.error().message);
        return 1;
    }
    NodeIdentity identity{spec.node_type, options.get<std::string>("alias"),
                          options.get<std::string>("advertise-host"), *port, server.rdma_endpoints()};
    DaemonContext context{io, *mgmtd, *secret, state_dir, options, loops};
    NodeAgent agent(io, *mgmtd, *secret, identity, state_dir, targets,
                    std::chrono::milliseconds(std::max(50u, options.get<unsigned>("heartbeat-ms"))));
    if (auto st = agent.load_ids(); !st) {
        log::error(st.error().message);
        return 1;
    }
    agent.on_registered([&server, &spec](uint32_t id) { server.set_identity(id, spec.node_type); });
    auto parts = install(server, agent, context);
    if (!parts) {
        log::error(parts.error().message);
        return 1;
    }
    agent.start();
    std::string rdma_on;
    for (const auto& [addr, p] : identity.rdma) rdma_on += (rdma_on.empty() ? "" : ",") + addr;
    log::info("listening", {{"port", *port}, {"rdma", rdma_on.empty() ? "none" : rdma_on}, {"mgmtd", mgmtd->str()},
                            {"state_dir", state_dir}, {"threads", threads}});
    asio::signal_set signals(io);
    daemon::stop_on_signals(io, signals, context.before_stop);
    io.run();
    // Pending handlers go first, while the parts they point into live: the
    // main loop's, then the workers' (a handler that hopped to the main
    // loop hands its caller's frame back to the caller's loop to be
    // destroyed there); the parts, the agent and the server then close
    // their sockets, and the loops go last.
    loops.halt();
    if (context.after_stop) context.after_stop();
    io.shutdown();
    loops.shutdown();
    return 0;
}

}  // namespace pfs
