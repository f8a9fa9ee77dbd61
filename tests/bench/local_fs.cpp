#include "local_fs.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <chrono>
#include <filesystem>
#include <functional>
#include <random>
#include <stdexcept>
#include <thread>
#include <tuple>
#include <utility>

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

// Buffer for O_DIRECT: aligned to any device's logical block.
struct AlignedBuffer {
    explicit AlignedBuffer(size_t n, char fill) : p(static_cast<char*>(std::aligned_alloc(4096, n))) {
        if (!p) throw std::bad_alloc();
        std::memset(p, fill, n);
    }
    ~AlignedBuffer() { std::free(p); }
    AlignedBuffer(const AlignedBuffer&) = delete;
    AlignedBuffer& operator=(const AlignedBuffer&) = delete;
    char* p;
};

// Each thread writes PREFIX<i> in 1 MiB requests and fdatasyncs it; caches
// dropped; each reads its file back. Open flags beyond the access mode in
// `flags` (O_DIRECT). Returns {write MB/s, read MB/s}.
std::pair<double, double> sequential(const std::string& prefix, const Workload& w, int flags) {
    const size_t mib = 1 << 20;
    double t = parallel(w.threads, [&](int i) {
        AlignedBuffer block(mib, 'x');
        auto path = prefix + std::to_string(i);
        int fd = ::open(path.c_str(), O_CREAT | O_WRONLY | O_TRUNC | flags, 0644);
        check(fd >= 0, "open " + path);
        for (uint64_t b = 0; b < w.seq_mib_per_thread; ++b) pwrite_all(fd, block.p, mib, off_t(b * mib), path);
        check(fdatasync(fd) == 0, "fdatasync " + path);
        ::close(fd);
    });
    double write_mbs = w.threads * w.seq_mib_per_thread / t;
    maybe_drop_caches(w);
    t = parallel(w.threads, [&](int i) {
        AlignedBuffer buf(mib, 0);
        auto path = prefix + std::to_string(i);
        int fd = ::open(path.c_str(), O_RDONLY | flags);
        check(fd >= 0, "open " + path);
        for (uint64_t b = 0; b < w.seq_mib_per_thread; ++b) pread_all(fd, buf.p, mib, off_t(b * mib), path);
        ::close(fd);
    });
    return {write_mbs, w.threads * w.seq_mib_per_thread / t};
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

namespace {

// (a) a sequential file per thread, 1 MiB requests, through the page
// cache and then with O_DIRECT (fio's --end_fsync=1 for both writes).
void sequential_workloads(const std::string& dir, const Workload& w, Figures& f) {
    auto [write_mbs, read_mbs] = sequential(dir + "/seq", w, 0);
    f.seq_write_mbs = write_mbs, f.seq_read_mbs = read_mbs;
    std::tie(write_mbs, read_mbs) = sequential(dir + "/direct", w, O_DIRECT);
    f.direct_write_mbs = write_mbs, f.direct_read_mbs = read_mbs;
}

// (b) deep-learning reads: 100 KiB files written by every thread, then
// read whole in random order.
void small_file_workloads(const std::string& dir, const Workload& w, Figures& f) {
    namespace fs = std::filesystem;
    std::vector<char> image(100 << 10, 'i');
    for (int i = 0; i < std::min(w.dl_files, 100); ++i) fs::create_directories(fs::path(dl_path(dir, i)).parent_path());
    double t = parallel(w.threads, [&](int tid) {
        for (int i = tid; i < w.dl_files; i += w.threads) {
            auto p = dl_path(dir, i);
            int fd = ::open(p.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0644);
            check(fd >= 0, "create " + p);
            pwrite_all(fd, image.data(), image.size(), 0, p);
            ::close(fd);
        }
    });
    f.dl_write_files_s = w.dl_files / t;
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
}

void metadata_workloads(const std::string& dir, const Workload& w, Figures& f) {
    namespace fs = std::filesystem;
    // (c) metadata: one shared directory, then one per thread.
    fs::create_directories(dir + "/shared");
    auto name = [&](const std::string& d, int tid, int k) { return d + "/f" + std::to_string(tid) + "_" + std::to_string(k); };
    const int workers = w.meta_workers();
    const double n = double(workers) * w.meta_files_per_thread;
    double t = parallel(workers, [&](int tid) {
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
    maybe_drop_caches(w);
    size_t listed = 0;
    t = parallel(1, [&](int) {
        struct stat st;
        for (const auto& e : fs::directory_iterator(dir + "/shared")) {
            check(::lstat(e.path().c_str(), &st) == 0, "lstat");
            ++listed;
        }
    });
    check(listed == static_cast<size_t>(n), "listing of the shared directory");
    f.list_stat_shared_s = n / t;
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
}

}  // namespace

Figures run_local(const std::string& dir, const Workload& w) {
    namespace fs = std::filesystem;
    fs::remove_all(dir);
    fs::create_directories(dir);
    Figures f;
    if (w.runs(Only::sequential)) sequential_workloads(dir, w, f);
    if (w.runs(Only::small_files)) small_file_workloads(dir, w, f);
    if (w.runs(Only::metadata)) metadata_workloads(dir, w, f);
    fs::remove_all(dir);
    return f;
}

}  // namespace pfs::bench
