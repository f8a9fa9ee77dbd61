#include "local_fs.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <chrono>
#include <filesystem>
#include <functional>
#include <random>
#include <stdexcept>
#include <thread>

namespace pfs::bench {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Runs fn(thread index) on n threads; returns the wall time.
double parallel(int n, const std::function<void(int)>& fn) {
    auto t0 = Clock::now();
    std::vector<std::thread> threads;
    for (int i = 0; i < n; ++i) threads.emplace_back(fn, i);
    for (auto& t : threads) t.join();
    return seconds_since(t0);
}

void check(bool ok, const std::string& what) {
    if (!ok) throw std::runtime_error(what + ": " + std::strerror(errno));
}

// Whole-buffer pread/pwrite: a network file system may return short counts.
void pwrite_all(int fd, const char* p, size_t n, off_t off, const std::string& path) {
    while (n > 0) {
        ssize_t k = ::pwrite(fd, p, n, off);
        if (k < 0 && errno == EINTR) continue;
        check(k > 0, "pwrite " + path);
        p += k, n -= size_t(k), off += k;
    }
}

void pread_all(int fd, char* p, size_t n, off_t off, const std::string& path) {
    while (n > 0) {
        ssize_t k = ::pread(fd, p, n, off);
        if (k < 0 && errno == EINTR) continue;
        if (k == 0) throw std::runtime_error("pread " + path + ": unexpected end of file");
        check(k > 0, "pread " + path);
        p += k, n -= size_t(k), off += k;
    }
}

void maybe_drop_caches(const Workload& w) {
    if (!w.drop_caches) return;
    auto st = drop_caches();
    if (!st) throw std::runtime_error(st.error().message);
}

std::string dl_path(const std::string& root, int i) {
    return root + "/dl/" + std::to_string(i % 10) + "/" + std::to_string(i / 10 % 10) + "/img" + std::to_string(i);
}

}  // namespace

Status drop_caches() {
    ::sync();
    int fd = ::open("/proc/sys/vm/drop_caches", O_WRONLY);
    if (fd < 0) return Error{-errno, std::string("open /proc/sys/vm/drop_caches: ") + std::strerror(errno)};
    ssize_t n = ::write(fd, "3", 1);
    int err = errno;
    ::close(fd);
    if (n != 1) return Error{-err, std::string("write /proc/sys/vm/drop_caches: ") + std::strerror(err)};
    return ok_status();
}

Figures run_local(const std::string& dir, const Workload& w) {
    namespace fs = std::filesystem;
    fs::remove_all(dir);
    fs::create_directories(dir);
    Figures f;
    const size_t mib = 1 << 20;
    std::vector<char> block(mib, 'x');

    // (a) sequential file per thread, 1 MiB requests.
    double t = parallel(w.threads, [&](int i) {
        auto path = dir + "/seq" + std::to_string(i);
        int fd = ::open(path.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0644);
        check(fd >= 0, "open " + path);
        for (uint64_t b = 0; b < w.seq_mib_per_thread; ++b) pwrite_all(fd, block.data(), mib, b * mib, path);
        check(fdatasync(fd) == 0, "fdatasync " + path);
        ::close(fd);
    });
    f.seq_write_mbs = w.threads * w.seq_mib_per_thread / t;
    maybe_drop_caches(w);
    t = parallel(w.threads, [&](int i) {
        std::vector<char> buf(mib);
        auto path = dir + "/seq" + std::to_string(i);
        int fd = ::open(path.c_str(), O_RDONLY);
        check(fd >= 0, "open " + path);
        for (uint64_t b = 0; b < w.seq_mib_per_thread; ++b) pread_all(fd, buf.data(), mib, b * mib, path);
        ::close(fd);
    });
    f.seq_read_mbs = w.threads * w.seq_mib_per_thread / t;

    // (b) deep-learning reads: 100 KiB files, whole, random order.
    std::vector<char> image(100 << 10, 'i');
    for (int i = 0; i < w.dl_files; ++i) {
        auto p = dl_path(dir, i);
        fs::create_directories(fs::path(p).parent_path());
        int fd = ::open(p.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0644);
        check(fd >= 0, "create " + p);
        pwrite_all(fd, image.data(), image.size(), 0, p);
        ::close(fd);
    }
    maybe_drop_caches(w);
    std::vector<int> order(w.dl_files);
    for (int i = 0; i < w.dl_files; ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), std::mt19937(7));
    t = parallel(w.threads, [&](int tid) {
        std::vector<char> buf(image.size());
        for (size_t k = tid; k < order.size(); k += w.threads) {
            auto p = dl_path(dir, order[k]);
            int fd = ::open(p.c_str(), O_RDONLY);
            check(fd >= 0, "open " + p);
            pread_all(fd, buf.data(), buf.size(), 0, p);
            ::close(fd);
        }
    });
    f.dl_read_files_s = w.dl_files / t;

    // (c) metadata: one shared directory, then one per thread.
    fs::create_directories(dir + "/shared");
    auto name = [&](const std::string& d, int tid, int k) { return d + "/f" + std::to_string(tid) + "_" + std::to_string(k); };
    const int workers = w.meta_workers();
    const double n = double(workers) * w.meta_files_per_thread;
    t = parallel(workers, [&](int tid) {
        for (int k = 0; k < w.meta_files_per_thread; ++k) {
            int fd = ::open(name(dir + "/shared", tid, k).c_str(), O_CREAT | O_EXCL | O_WRONLY, 0644);
            check(fd >= 0, "create");
            ::close(fd);
        }
    });
    f.create_shared_s = n / t;
    maybe_drop_caches(w);
    t = parallel(workers, [&](int tid) {
        struct stat st;
        for (int k = 0; k < w.meta_files_per_thread; ++k) check(::stat(name(dir + "/shared", tid, k).c_str(), &st) == 0, "stat");
    });
    f.stat_shared_s = n / t;
    t = parallel(workers, [&](int tid) {
        for (int k = 0; k < w.meta_files_per_thread; ++k) check(::unlink(name(dir + "/shared", tid, k).c_str()) == 0, "unlink");
    });
    f.unlink_shared_s = n / t;
    t = parallel(workers, [&](int tid) {
        auto d = dir + "/private" + std::to_string(tid);
        fs::create_directories(d);
        for (int k = 0; k < w.meta_files_per_thread; ++k) {
            int fd = ::open(name(d, tid, k).c_str(), O_CREAT | O_EXCL | O_WRONLY, 0644);
            check(fd >= 0, "create");
            ::close(fd);
        }
    });
    f.create_private_s = n / t;
    fs::remove_all(dir);
    return f;
}

}  // namespace pfs::bench
