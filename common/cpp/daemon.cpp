#include "daemon.hpp"

#include <sys/resource.h>

#include <cstdio>
#include <filesystem>

#include <cerrno>
#include <cstring>

#include "log.hpp"

namespace pfs::daemon {

void add_auth_option(Options& options) {
    options.add()("auth-file", po::value<std::string>()->default_value(kDefaultAuthFile),
                  "auth file (mode 0600): the cluster secret on servers and admin nodes; on a client "
                  "node the client key ('pfs-ctl auth key client' writes it)");
}

namespace {

// Raises the soft limit of open files to the hard one: a server holds a
// descriptor per connection, thousands of them.
void raise_file_limit() {
    struct rlimit lim {};
    if (::getrlimit(RLIMIT_NOFILE, &lim) != 0 || lim.rlim_cur >= lim.rlim_max) return;
    lim.rlim_cur = lim.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &lim) != 0)
        log::warn("cannot raise the limit of open files", {{"error", std::strerror(errno)}});
}

}  // namespace

void add_server_options(Options& options, bool frame_macs) {
    ServerConfig d;
    options.add()
        ("frame-macs", po::value<bool>()->default_value(frame_macs),
         "require a MAC (HMAC-SHA256 under the connection's session key) on every frame after the handshake; "
         "false: only on connections that ask for it")
        ("max-connections", po::value<size_t>()->default_value(d.max_connections), "connections at once, in all")
        ("max-unauthenticated", po::value<size_t>()->default_value(d.max_unauthenticated),
         "connections still in their handshake, in all (the oldest makes room for a new one)")
        ("max-unauthenticated-per-host", po::value<size_t>()->default_value(d.max_unauthenticated_per_host),
         "connections still in their handshake from one address")
        ("handshake-timeout-ms", po::value<unsigned>()->default_value(static_cast<unsigned>(d.handshake_timeout.count())),
         "time a new connection has to authenticate")
        ("frame-timeout-ms", po::value<unsigned>()->default_value(static_cast<unsigned>(d.frame_timeout.count())),
         "time a request's payload has to arrive once its header did")
        ("request-memory-mib", po::value<size_t>()->default_value(d.request_memory >> 20),
         "request payloads held at once, all connections together; readers wait beyond it");
}

Result<ServerConfig> server_config(const Options& options, ServerConfig config) {
    config.host = options.get<std::string>("listen");
    config.port = options.get<uint16_t>("port");
    config.require_frame_mac = options.get<bool>("frame-macs");
    config.max_connections = options.get<size_t>("max-connections");
    config.max_unauthenticated = options.get<size_t>("max-unauthenticated");
    config.max_unauthenticated_per_host = options.get<size_t>("max-unauthenticated-per-host");
    config.handshake_timeout = std::chrono::milliseconds(options.get<unsigned>("handshake-timeout-ms"));
    config.frame_timeout = std::chrono::milliseconds(options.get<unsigned>("frame-timeout-ms"));
    const size_t mib = options.get<size_t>("request-memory-mib");
    if (config.max_connections == 0 || config.max_unauthenticated == 0 || config.max_unauthenticated_per_host == 0)
        return Error{-EINVAL, "--max-connections and --max-unauthenticated[-per-host] must be at least 1"};
    if (config.handshake_timeout.count() == 0 || config.frame_timeout.count() == 0)
        return Error{-EINVAL, "--handshake-timeout-ms and --frame-timeout-ms must be at least 1"};
    if (mib < 16 || mib > (1u << 20))
        return Error{-EINVAL, "--request-memory-mib must be between 16 and 1048576"};
    config.request_memory = mib << 20;
    raise_file_limit();
    return config;
}


Result<auth::Secret> load_secret(const Options& options) {
    return auth::Secret::load(options.get<std::string>("auth-file"));
}

int parse_or_exit(Options& options, int argc, char** argv) {
    auto outcome = options.parse(argc, argv);
    switch (outcome.kind) {
        case ParseOutcome::Kind::help:
        case ParseOutcome::Kind::version:
            std::fputs(outcome.message.c_str(), stdout);
            return 0;
        case ParseOutcome::Kind::error:
            std::fprintf(stderr, "%s: %s\n", argv[0], outcome.message.c_str());
            return 2;
        case ParseOutcome::Kind::run:
            break;
    }
    return -1;
}

void stop_on_signals(asio::io_context& io, asio::signal_set& signals, std::function<awaitable<void>()> before_stop,
                     std::chrono::milliseconds grace) {
    signals.add(SIGINT);
    signals.add(SIGTERM);
    signals.async_wait([&io, before_stop = std::move(before_stop), grace](boost::system::error_code ec, int signo) {
        if (ec) return;
        log::info("shutting down", {{"signal", signo}});
        if (!before_stop) {
            io.stop();
            return;
        }
        // Whichever ends first stops the loop: the work, or its grace.
        auto timer = std::make_shared<asio::steady_timer>(io, grace);
        timer->async_wait([&io](boost::system::error_code) { io.stop(); });
        asio::co_spawn(io, before_stop(), [&io, timer](std::exception_ptr) { io.stop(); });
    });
}

Status ensure_directory(const std::string& path) {
    std::error_code ec;
    std::filesystem::create_directories(path, ec);
    if (ec) return Error{-ec.value(), "cannot create directory " + path + ": " + ec.message()};
    return ok_status();
}

}  // namespace pfs::daemon
