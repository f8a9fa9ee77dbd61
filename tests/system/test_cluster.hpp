// Real PFS daemons for system tests: spawned from the build tree with a
// temporary directory, a fresh secret and free loopback ports; killed when
// the test ends, and by the kernel when the test process dies (the signal
// comes when the thread that started them ends: start them from the test's
// own thread).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "auth_crypto.hpp"
#include "rpc_client.hpp"

namespace pfs::test {

class Process {
public:
    Process(std::string name, std::vector<std::string> argv, std::filesystem::path log);
    ~Process();
    Process(const Process&) = delete;
    Process& operator=(const Process&) = delete;

    void start();
    void kill(int signo);  // and reap
    void signal(int signo);  // SIGSTOP, SIGCONT: nothing to reap
    bool running() const { return pid_ > 0; }
    std::string log_text() const;

private:
    std::string name_;
    std::vector<std::string> argv_;
    std::filesystem::path log_;
    pid_t pid_ = -1;
};

uint16_t free_port();

// Polls pred until true; false after the timeout.
bool wait_until(const std::function<bool()>& pred, std::chrono::milliseconds timeout);

class TestCluster {
public:
    TestCluster();
    ~TestCluster();

    Process& start_mgmtd();
    // A storage server with `targets` target directories.
    Process& start_storage(const std::string& alias, int targets);
    // extra: more command-line options, e.g. {"--session-timeout", "2"}.
    Process& start_meta(const std::string& alias, const std::vector<std::string>& extra = {});
    Process& daemon(const std::string& alias) { return *daemons_.at(alias); }

    Endpoint mgmtd() const { return Endpoint{"127.0.0.1", mgmtd_port_}; }
    const auth::Secret& secret() const { return secret_; }
    const std::filesystem::path& dir() const { return dir_; }
    // Every daemon's log, for failure reports.
    std::string logs() const;

private:
    std::vector<std::string> server_argv(const std::string& kind, const std::string& alias) const;

    std::filesystem::path dir_;
    auth::Secret secret_;
    uint16_t mgmtd_port_;
    std::map<std::string, std::unique_ptr<Process>> daemons_;
};

}  // namespace pfs::test

// GCC 12 evaluates a co_await inside Catch's assertion macros twice (their
// `while (false && (expr))` tail is awaited too): await into a variable
// first, then assert.
#define REQUIRE_OK(expr)                                                \
    do {                                                                \
        auto result_ = (expr);                                          \
        INFO((result_ ? std::string("ok") : result_.error().message));  \
        REQUIRE(result_);                                               \
    } while (0)

#define CHECK_ERRNO(expr, errno_value)                                  \
    do {                                                                \
        auto result_ = (expr);                                          \
        REQUIRE_FALSE(result_);                                         \
        CHECK(result_.error().code == (errno_value));                   \
    } while (0)

namespace pfs::test {

// Timeouts for tests that kill servers: a dead one is noticed in seconds.
inline ClientConfig short_timeouts(ClientConfig config = {}) {
    using namespace std::chrono_literals;
    config.request_timeout = 3s;
    config.connect_timeout = 1s;
    config.backoff_max = 500ms;
    return config;
}

// A client of the cluster that plays a server's part (pfs-meta truncating
// and deleting chunks, a metadata server talking to another).
inline ClientConfig as_server(ClientConfig config = {}) {
    config.role = auth::Role::server;
    return config;
}

// Runs a coroutine on io until it finishes (or 60 s pass); true if it did.
// Clients keep background work (session renewals) on io, so the run stops
// when the body ends rather than when io runs out of work.
template <class F>
bool run(asio::io_context& io, F&& body) {
    bool done = false;
    asio::co_spawn(io, [&]() -> awaitable<void> {
        co_await body();
        done = true;
        io.stop();
    }, [](std::exception_ptr e) { if (e) std::rethrow_exception(e); });
    io.restart();
    io.run_for(std::chrono::seconds(60));
    return done;
}

}  // namespace pfs::test
