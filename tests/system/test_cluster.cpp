#include "test_cluster.hpp"

#include <cstdio>
#include <exception>

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <mutex>
#include <random>
#include <set>
#include <stdexcept>
#include <sstream>
#include <thread>

extern char** environ;

namespace pfs::test {
namespace fs = std::filesystem;

Process::Process(std::string name, std::vector<std::string> argv, fs::path log)
    : name_(std::move(name)), argv_(std::move(argv)), log_(std::move(log)) {}

Process::~Process() {
    if (running()) kill(SIGKILL);
}

void Process::start() {
    std::vector<char*> args;
    for (auto& a : argv_) args.push_back(a.data());
    args.push_back(nullptr);
    const char* log = log_.c_str();
    const pid_t parent = getpid();
    // fork, not posix_spawn: the child must ask for SIGKILL when the test
    // dies (a crash, a timeout's kill -9), so that no daemon outlives it.
    // Between fork and exec only async-signal-safe calls.
    const pid_t pid = fork();
    if (pid == 0) {
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) _exit(127);
        // The test may have died before prctl took effect: then nobody will send it.
        if (getppid() != parent) _exit(127);
        const int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0) _exit(127);
        if (fd > 2) close(fd);
        execve(args[0], args.data(), environ);
        _exit(127);
    }
    pid_ = pid > 0 ? pid : -1;
}

void Process::kill(int signo) {
    if (!running()) return;
    ::kill(pid_, signo);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
}

void Process::signal(int signo) {
    if (running()) ::kill(pid_, signo);
}

std::string Process::log_text() const {
    std::ifstream f(log_);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

namespace {

bool bindable(uint16_t port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return false;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(port);
    bool ok = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    close(fd);
    return ok;
}

}  // namespace

// A port bound by nobody now, never handed out before by this process, and
// below the kernel's ephemeral range (32768 and up by default). A port the
// kernel picked for bind(0) was handed out twice in a row (mgmtd's, then a
// pfs-meta's: the second daemon took it, the first could not listen), and
// one in the ephemeral range can become the local end of any connect().
uint16_t free_port() {
    static std::mutex mu;
    static std::set<uint16_t> given;
    static std::mt19937 rng(std::random_device{}());
    std::lock_guard lock(mu);
    for (int attempt = 0; attempt < 10000; ++attempt) {
        const auto port = static_cast<uint16_t>(20000 + rng() % 12000);
        if (!given.contains(port) && bindable(port)) {
            given.insert(port);
            return port;
        }
    }
    throw std::runtime_error("no free TCP port in 20000-31999 on 127.0.0.1");
}

bool wait_until(const std::function<bool()>& pred, std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
        if (pred()) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return pred();
}

namespace {

std::string secret_text() {
    auto nonce = auth::random_nonce();
    std::string text;
    for (uint8_t b : nonce) text += "0123456789abcdef"[b & 15];
    return text;
}

}  // namespace

TestCluster::TestCluster() : secret_(auth::Secret::from_bytes({})), mgmtd_port_(free_port()) {
    std::string tmpl = (fs::temp_directory_path() / "pfs-system-XXXXXX").string();
    dir_ = mkdtemp(tmpl.data());
    std::string text = secret_text();
    {
        std::ofstream f(dir_ / "auth.secret");
        f << text << "\n";
    }
    fs::permissions(dir_ / "auth.secret", fs::perms::owner_read | fs::perms::owner_write);
    secret_ = auth::Secret::from_bytes(std::span(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
}

TestCluster::~TestCluster() {
    // A failed REQUIRE unwinds past the test's own report: the daemons'
    // side of the story goes to stderr (their logs end where they died).
    if (std::uncaught_exceptions() > 0) {
        std::string text = logs();
        constexpr size_t kMax = 40000;
        if (text.size() > kMax) text = "[...]\n" + text.substr(text.size() - kMax);
        std::fprintf(stderr, "----- daemon logs of the failed test -----\n%s\n----- end of daemon logs -----\n",
                     text.c_str());
    }
    daemons_.clear();
    std::error_code ec;
    fs::remove_all(dir_, ec);
}

Process& TestCluster::start_mgmtd() {
    std::vector<std::string> argv{std::string(PFS_BIN_DIR) + "/server/mgmtd/pfs-mgmtd", "--config", "/dev/null",
                                  "--auth-file", (dir_ / "auth.secret").string(), "--listen", "127.0.0.1",
                                  "--port", std::to_string(mgmtd_port_), "--data-dir", (dir_ / "mgmtd").string(),
                                  "--probably-offline-ms", "1500", "--offline-ms", "4000"};
    auto& p = daemons_["mgmtd"] = std::make_unique<Process>("mgmtd", argv, dir_ / "mgmtd.log");
    p->start();
    return *p;
}

std::vector<std::string> TestCluster::server_argv(const std::string& kind, const std::string& alias) const {
    return {std::string(PFS_BIN_DIR) + "/server/" + kind + "/pfs-" + kind, "--config", "/dev/null",
            "--auth-file", (dir_ / "auth.secret").string(), "--listen", "127.0.0.1",
            "--port", std::to_string(free_port()), "--mgmtd", "127.0.0.1:" + std::to_string(mgmtd_port_),
            "--alias", alias, "--state-dir", (dir_ / alias).string(), "--heartbeat-ms", "200"};
}

Process& TestCluster::start_meta(const std::string& alias, const std::vector<std::string>& extra) {
    auto argv = server_argv("meta", alias);
    argv.insert(argv.end(), extra.begin(), extra.end());
    auto& p = daemons_[alias] = std::make_unique<Process>(alias, argv, dir_ / (alias + ".log"));
    p->start();
    return *p;
}

Process& TestCluster::start_storage(const std::string& alias, int targets) {
    std::vector<std::string> argv = server_argv("storage", alias);
    for (int i = 0; i < targets; ++i) {
        auto t = dir_ / (alias + "-t" + std::to_string(i));
        fs::create_directories(t);
        argv.push_back("--targets");
        argv.push_back(t.string());
    }
    auto& p = daemons_[alias] = std::make_unique<Process>(alias, argv, dir_ / (alias + ".log"));
    p->start();
    return *p;
}

std::string TestCluster::logs() const {
    std::string out;
    for (const auto& [name, p] : daemons_) out += "----- " + name + " -----\n" + p->log_text();
    return out;
}

}  // namespace pfs::test
