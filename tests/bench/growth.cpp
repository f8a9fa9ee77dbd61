#include "growth.hpp"

#include <fcntl.h>

#include <charconv>
#include <chrono>
#include <climits>
#include <cstdint>
#include <fstream>
#include <sstream>

#include "pfs_fs.hpp"

namespace pfs::bench {
namespace {

// VmRSS of pid, in bytes.
Result<uint64_t> resident_bytes(pid_t pid) {
    std::ifstream status("/proc/" + std::to_string(pid) + "/status");
    if (!status) return Error{-ESRCH, "no process " + std::to_string(pid) + " here (--server-pid)"};
    std::string line;
    while (std::getline(status, line)) {
        uint64_t kib = 0;
        if (std::sscanf(line.c_str(), "VmRSS: %lu kB", &kib) == 1) return kib * 1024;
    }
    return Error{-EIO, "no VmRSS for process " + std::to_string(pid)};
}

// The servers' VmRSS added up.
Result<uint64_t> resident_bytes(const std::vector<pid_t>& pids) {
    uint64_t total = 0;
    for (pid_t pid : pids) {
        auto rss = resident_bytes(pid);
        if (!rss) return rss.error();
        total += *rss;
    }
    return total;
}

Result<uint64_t> parse_count(std::string_view word) {
    uint64_t n = 0;
    auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), n);
    const std::string_view unit(end, static_cast<size_t>(word.data() + word.size() - end));
    const uint64_t scale = unit.empty() ? 1 : unit == "k" || unit == "K" ? 1000 : unit == "m" || unit == "M" ? 1000000 : 0;
    if (ec != std::errc() || scale == 0 || n > UINT64_MAX / scale)
        return Error{-EINVAL, "not a count: '" + std::string(word) + "'"};
    return n * scale;
}

}  // namespace

Result<std::vector<pid_t>> parse_pids(const std::string& text) {
    std::vector<pid_t> out;
    std::stringstream in(text);
    std::string word;
    while (std::getline(in, word, ',')) {
        int pid = 0;
        auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), pid);
        if (ec != std::errc() || end != word.data() + word.size() || pid < 0)
            return Error{-EINVAL, "not a pid: '" + word + "'"};
        if (pid > 0) out.push_back(pid);
    }
    return out;
}

Result<std::vector<uint64_t>> parse_checkpoints(const std::string& text) {
    std::vector<uint64_t> out;
    std::stringstream in(text);
    std::string word;
    while (std::getline(in, word, ',')) {
        auto n = parse_count(word);
        if (!n) return n.error();
        if (*n == 0 || (!out.empty() && *n <= out.back()))
            return Error{-EINVAL, "--growth wants increasing positive counts, e.g. 10k,100k,1M"};
        out.push_back(*n);
    }
    if (out.empty()) return Error{-EINVAL, "--growth wants at least one count"};
    return out;
}

awaitable<Result<std::vector<GrowthStep>>> grow_directory(client::FileSystem& fs, const std::string& dir,
                                                         std::vector<uint64_t> checkpoints, int workers,
                                                         std::vector<pid_t> server_pids, uint32_t stripes) {
    if (auto st = co_await fs.mkdir(dir, 0755, 0, stripes); !st) co_return st.error();
    uint64_t rss_start = 0;
    if (!server_pids.empty()) {
        auto rss = resident_bytes(server_pids);
        if (!rss) co_return rss.error();
        rss_start = *rss;
    }
    std::vector<GrowthStep> steps;
    uint64_t next = 0;  // the next file's number; workers share it (one thread)
    for (uint64_t target : checkpoints) {
        const uint64_t before = next;
        auto t = co_await parallel(workers, [&](int) -> awaitable<Result<Unit>> {
            while (next < target) {
                auto file = co_await fs.open(dir + "/g" + std::to_string(next++), O_CREAT | O_EXCL | O_WRONLY);
                if (!file) co_return file.error();
                if (auto st = co_await fs.close(*file); !st) co_return st.error();
            }
            co_return Unit{};
        });
        if (!t) co_return t.error();
        GrowthStep step{.entries = target, .creates_s = double(target - before) / *t};
        if (!server_pids.empty()) {
            auto rss = resident_bytes(server_pids);
            if (!rss) co_return rss.error();
            step.server_rss_bytes = *rss;
            step.bytes_per_entry = (double(*rss) - double(rss_start)) / double(target);
        }
        std::fprintf(stderr, "growth: %lu entries, %.0f creates/s\n", static_cast<unsigned long>(target),
                     step.creates_s);
        steps.push_back(step);
    }
    co_return steps;
}

}  // namespace pfs::bench
