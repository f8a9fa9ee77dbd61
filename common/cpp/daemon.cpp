#include "daemon.hpp"

#include <cstdio>
#include <filesystem>

#include "log.hpp"

namespace pfs::daemon {

void add_auth_option(Options& options) {
    options.add()("auth-file", po::value<std::string>()->default_value(kDefaultAuthFile),
                  "shared secret file (mode 0600, same content on every node)");
}

Result<auth::Secret> load_secret(const Options& options) {
    return auth::Secret::load(options.get<std::string>("auth-file"));
}

int parse_or_exit(Options& options, int argc, char** argv) {
    auto outcome = options.parse(argc, argv);
    switch (outcome.kind) {
        case ParseOutcome::Kind::help:
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
