// pfs-mgmtd: the management daemon. Keeps the map of nodes, targets and
// pools, derives their states from heartbeats and pushes changes.
#include <cstdio>

#include "daemon.hpp"
#include "log.hpp"
#include "rpc_server.hpp"
#include "service.hpp"

using namespace pfs;

int main(int argc, char** argv) {
    log::set_component("pfs-mgmtd");
    Options options("pfs-mgmtd", "PFS management daemon: registry of nodes, targets and pools; health states.");
    daemon::add_auth_option(options);
    options.add()
        ("listen", po::value<std::string>()->default_value("0.0.0.0"), "address to listen on")
        ("port", po::value<uint16_t>()->default_value(PFS_DEFAULT_MGMTD_PORT), "TCP port to listen on")
        ("data-dir", po::value<std::string>()->default_value("/var/lib/pfs/mgmtd"), "where the map is kept")
        ("probably-offline-ms", po::value<unsigned>()->default_value(8000),
         "heartbeat age after which a node's targets are PROBABLY-OFFLINE")
        ("offline-ms", po::value<unsigned>()->default_value(30000),
         "heartbeat age after which a node's targets are OFFLINE")
        ("space-low-pct", po::value<double>()->default_value(10.0), "free space below which a target is 'low'")
        ("space-emergency-pct", po::value<double>()->default_value(3.0),
         "free space below which a target is 'emergency'")
        ("inodes-low-pct", po::value<double>()->default_value(10.0), "free inodes below which a target is 'low'")
        ("inodes-emergency-pct", po::value<double>()->default_value(3.0),
         "free inodes below which a target is 'emergency'");
    daemon::add_server_options(options, true);
    if (int rc = daemon::parse_or_exit(options, argc, argv); rc >= 0) return rc;

    mgmtd::Settings settings;
    settings.probably_offline_after = std::chrono::milliseconds(options.get<unsigned>("probably-offline-ms"));
    settings.offline_after = std::chrono::milliseconds(options.get<unsigned>("offline-ms"));
    settings.space_low_pct = options.get<double>("space-low-pct");
    settings.space_emergency_pct = options.get<double>("space-emergency-pct");
    settings.inodes_low_pct = options.get<double>("inodes-low-pct");
    settings.inodes_emergency_pct = options.get<double>("inodes-emergency-pct");
    if (settings.offline_after <= settings.probably_offline_after) {
        log::error("--offline-ms must be larger than --probably-offline-ms");
        return 2;
    }

    auto secret = daemon::load_secret(options);
    if (!secret) {
        log::error(secret.error().message);
        return 1;
    }
    std::string data_dir = options.get<std::string>("data-dir");
    if (auto st = daemon::ensure_directory(data_dir); !st) {
        log::error(st.error().message);
        return 1;
    }
    auto registry = mgmtd::Registry::open(data_dir + "/mgmtd.json", settings, mgmtd::Clock::now());
    if (!registry) {
        log::error(registry.error().message);
        return 1;
    }

    auto config = daemon::server_config(options, ServerConfig{});
    if (!config) {
        log::error(config.error().message);
        return 2;
    }
    config->max_payload = 1u << 20;  // management messages are small
    EventLoop io;
    RpcServer server(io, *config, std::move(*secret));
    server.set_identity(0, PFS_NODE_MGMT);
    auto evaluate_every = std::clamp(settings.probably_offline_after / 8, std::chrono::milliseconds(50),
                                     std::chrono::milliseconds(1000));
    mgmtd::Service service(io, server, *registry, evaluate_every);
    service.start();
    auto port = server.start();
    if (!port) {
        log::error(port.error().message);
        return 1;
    }
    log::info("listening", {{"port", *port}, {"data_dir", data_dir}, {"map_version", registry->version()}});
    asio::signal_set signals(io);
    daemon::stop_on_signals(io, signals);
    io.run();
    io.shutdown();  // pending handlers go while the service they use lives
    return 0;
}
