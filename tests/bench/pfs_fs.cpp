#include "pfs_fs.hpp"

#include <algorithm>
#include <chrono>
#include <random>

#include "gather.hpp"

namespace pfs::bench {

using Clock = std::chrono::steady_clock;

namespace {
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }
}  // namespace

awaitable<Result<double>> parallel(int n, Worker worker) {
    std::vector<Task<Unit>> tasks;
    for (int i = 0; i < n; ++i) tasks.push_back([&worker, i] { return worker(i); });
    auto t0 = Clock::now();
    auto results = co_await gather(std::move(tasks));
    double t = seconds_since(t0);
    for (auto& r : results)
        if (!r) co_return r.error();
    co_return t;
}

namespace {

std::string dl_path(const std::string& root, int i) {
    return root + "/dl/" + std::to_string(i % 10) + "/" + std::to_string(i / 10 % 10) + "/img" + std::to_string(i);
}

Status as_status(const Status& s) { return s; }
template <class T>
Status as_status(const Result<T>& r) {
    if (!r) return r.error();
    return ok_status();
}

// libpfs caches nothing, but the servers read through this machine's page
// cache: dropped for PFS as for the local peer.
Status cold_caches(const Workload& w) { return w.drop_caches ? drop_caches() : ok_status(); }

}  // namespace

#define TRY(expr)                                   \
    do {                                            \
        auto st_ = as_status(co_await (expr));      \
        if (!st_) co_return st_.error();            \
    } while (0)

namespace {

// (a) a sequential file per worker, 1 MiB requests.
awaitable<Result<Unit>> sequential_workloads(client::FileSystem& fs, const std::string& dir, const Workload& w,
                                             Figures& f) {
    const size_t mib = 1 << 20;
    Bytes block(mib, 'x');
    auto t = co_await parallel(w.threads, [&](int i) -> awaitable<Result<Unit>> {
        auto file = co_await fs.open(dir + "/seq" + std::to_string(i), O_CREAT | O_WRONLY | O_TRUNC);
        if (!file) co_return file.error();
        for (uint64_t b = 0; b < w.seq_mib_per_thread; ++b) TRY(fs.write(*file, b * mib, block));
        TRY(fs.fsync(*file));
        TRY(fs.close(*file));
        co_return Unit{};
    });
    if (!t) co_return t.error();
    f.seq_write_mbs = w.threads * w.seq_mib_per_thread / *t;
    if (auto st = cold_caches(w); !st) co_return st.error();
    t = co_await parallel(w.threads, [&](int i) -> awaitable<Result<Unit>> {
        Bytes buf(mib);
        auto file = co_await fs.open(dir + "/seq" + std::to_string(i), O_RDONLY);
        if (!file) co_return file.error();
        for (uint64_t b = 0; b < w.seq_mib_per_thread; ++b) TRY(fs.read(*file, b * mib, buf));
        TRY(fs.close(*file));
        co_return Unit{};
    });
    if (!t) co_return t.error();
    f.seq_read_mbs = w.threads * w.seq_mib_per_thread / *t;
    if (w.only == Only::sequential)
        for (int i = 0; i < w.threads; ++i) TRY(fs.unlink(dir + "/seq" + std::to_string(i)));
    co_return Unit{};
}

// (b) deep-learning reads: 100 KiB files, whole, random order.
awaitable<Result<Unit>> small_file_workloads(client::FileSystem& fs, const std::string& dir, const Workload& w,
                                             Figures& f) {
    Bytes image(100 << 10, 'i');
    TRY(fs.mkdir(dir + "/dl"));
    for (int a = 0; a < 10; ++a) {
        TRY(fs.mkdir(dir + "/dl/" + std::to_string(a)));
        for (int b = 0; b < 10; ++b) TRY(fs.mkdir(dir + "/dl/" + std::to_string(a) + "/" + std::to_string(b)));
    }
    auto t = co_await parallel(w.threads, [&](int tid) -> awaitable<Result<Unit>> {
        for (int i = tid; i < w.dl_files; i += w.threads) {
            auto file = co_await fs.open(dl_path(dir, i), O_CREAT | O_WRONLY | O_TRUNC);
            if (!file) co_return file.error();
            TRY(fs.write(*file, 0, image));
            TRY(fs.close(*file));
        }
        co_return Unit{};
    });
    if (!t) co_return t.error();
    f.dl_write_files_s = w.dl_files / *t;
    if (auto st = cold_caches(w); !st) co_return st.error();
    std::vector<int> order(w.dl_files);
    for (int i = 0; i < w.dl_files; ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), std::mt19937(7));
    t = co_await parallel(w.threads, [&](int tid) -> awaitable<Result<Unit>> {
        Bytes buf(image.size());
        for (size_t k = tid; k < order.size(); k += w.threads) {
            auto file = co_await fs.open(dl_path(dir, order[k]), O_RDONLY);
            if (!file) co_return file.error();
            auto n = co_await fs.read(*file, 0, buf);
            if (!n) co_return n.error();
            if (*n != buf.size()) co_return Error{-EIO, "short read"};
            TRY(fs.close(*file));
        }
        co_return Unit{};
    });
    if (!t) co_return t.error();
    f.dl_read_files_s = w.dl_files / *t;
    co_return Unit{};
}

awaitable<Result<Unit>> metadata_workloads(client::FileSystem& fs, const std::string& dir, const Workload& w,
                                           Figures& f) {
    // (c) metadata: one shared directory, then one per worker.
    TRY(fs.mkdir(dir + "/shared"));
    auto name = [](const std::string& d, int tid, int k) {
        return d + "/f" + std::to_string(tid) + "_" + std::to_string(k);
    };
    const int workers = w.meta_workers();
    const double n = double(workers) * w.meta_files_per_thread;
    auto create_in = [&](std::function<std::string(int)> where) {
        return parallel(workers, [&, where](int tid) -> awaitable<Result<Unit>> {
            for (int k = 0; k < w.meta_files_per_thread; ++k) {
                auto file = co_await fs.open(name(where(tid), tid, k), O_CREAT | O_EXCL | O_WRONLY);
                if (!file) co_return file.error();
                TRY(fs.close(*file));
            }
            co_return Unit{};
        });
    };
    auto t = co_await create_in([&](int) { return dir + "/shared"; });
    if (!t) co_return t.error();
    f.create_shared_s = n / *t;
    if (auto st = cold_caches(w); !st) co_return st.error();
    t = co_await parallel(workers, [&](int tid) -> awaitable<Result<Unit>> {
        for (int k = 0; k < w.meta_files_per_thread; ++k) TRY(fs.stat(name(dir + "/shared", tid, k)));
        co_return Unit{};
    });
    if (!t) co_return t.error();
    f.stat_shared_s = n / *t;
    if (auto st = cold_caches(w); !st) co_return st.error();
    t = co_await parallel(1, [&](int) -> awaitable<Result<Unit>> {
        // What ls -l does through libpfs: the listing brings the attributes.
        auto entries = co_await fs.readdir_plus(dir + "/shared");
        if (!entries) co_return entries.error();
        if (entries->size() != static_cast<size_t>(n) + 2)
            co_return Error{-EIO, "the shared directory lists " + std::to_string(entries->size()) + " entries"};
        for (const auto& e : *entries)
            if (e.name != "." && e.name != ".." && !e.attr) TRY(fs.stat(dir + "/shared/" + e.name));
        co_return Unit{};
    });
    if (!t) co_return t.error();
    f.list_stat_shared_s = n / *t;
    t = co_await parallel(workers, [&](int tid) -> awaitable<Result<Unit>> {
        for (int k = 0; k < w.meta_files_per_thread; ++k) TRY(fs.unlink(name(dir + "/shared", tid, k)));
        co_return Unit{};
    });
    if (!t) co_return t.error();
    f.unlink_shared_s = n / *t;
    for (int tid = 0; tid < workers; ++tid) TRY(fs.mkdir(dir + "/private" + std::to_string(tid)));
    t = co_await create_in([&](int tid) { return dir + "/private" + std::to_string(tid); });
    if (!t) co_return t.error();
    f.create_private_s = n / *t;
    co_return Unit{};
}

}  // namespace

awaitable<Result<Figures>> run_pfs(client::FileSystem& fs, const std::string& dir, const Workload& w) {
    Figures f;
    TRY(fs.mkdir(dir, 0755, 0, w.dir_stripes));
    if (w.runs(Only::sequential)) TRY(sequential_workloads(fs, dir, w, f));
    if (w.runs(Only::small_files)) TRY(small_file_workloads(fs, dir, w, f));
    if (w.runs(Only::metadata)) TRY(metadata_workloads(fs, dir, w, f));
    co_return f;
}

}  // namespace pfs::bench
