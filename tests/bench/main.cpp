// pfs-bench: the three workloads of the design (sequential streams, deep-
// learning small-file reads, metadata ops), each beside the same workload on
// a peer, as a ratio to a baseline. Two modes:
//   default   through libpfs against a running PFS ("pfs"), beside plain
//             POSIX calls on --local-dir ("local", the baseline);
//   --posix   plain POSIX calls on each NAME=DIR given (a pfs.ko mount, an
//             NFS mount, a local directory, ...), ratios to --baseline.
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <exception>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "daemon.hpp"
#include "log.hpp"
#include "growth.hpp"
#include "pfs_fs.hpp"

using namespace pfs;
using nlohmann::json;

namespace {

// Which workload a row belongs to (--seq-only and --meta-only run one).
enum class Kind { sequential, small_files, metadata };

struct Row {
    const char* name;
    const char* unit;
    double bench::Figures::*field;
    Kind kind;
    bool posix_only = false;
};

const Row kRows[] = {
    {"seq_write", "MB/s", &bench::Figures::seq_write_mbs, Kind::sequential},
    {"seq_read", "MB/s", &bench::Figures::seq_read_mbs, Kind::sequential},
    {"direct_write", "MB/s", &bench::Figures::direct_write_mbs, Kind::sequential, true},
    {"direct_read", "MB/s", &bench::Figures::direct_read_mbs, Kind::sequential, true},
    {"dl_write_100k", "files/s", &bench::Figures::dl_write_files_s, Kind::small_files},
    {"dl_read_100k", "files/s", &bench::Figures::dl_read_files_s, Kind::small_files},
    {"create_shared_dir", "ops/s", &bench::Figures::create_shared_s, Kind::metadata},
    {"stat_shared_dir", "ops/s", &bench::Figures::stat_shared_s, Kind::metadata},
    {"list_stat_shared_dir", "entries/s", &bench::Figures::list_stat_shared_s, Kind::metadata},
    {"unlink_shared_dir", "ops/s", &bench::Figures::unlink_shared_s, Kind::metadata},
    {"create_dir_per_worker", "ops/s", &bench::Figures::create_private_s, Kind::metadata},
};

// One column of the table: a file system and how it was driven.
struct System {
    std::string name;
    std::string dir;    // POSIX: the directory given; libpfs: the path in PFS
    bool libpfs = false;
    bool dir_is_ours = false;   // --local-dir: used (created, removed) as it is
    std::vector<bench::Figures> rounds;
    bench::Figures figures;     // each figure's median over the rounds
    bench::Only only = bench::Only::all;  // --seq-only, --small-only, --meta-only
};

// Whether a system ran a row's workload (O_DIRECT is for POSIX systems).
bool measured(const System& s, const Row& r) {
    if (r.posix_only && s.libpfs) return false;
    switch (s.only) {
    case bench::Only::sequential: return r.kind == Kind::sequential;
    case bench::Only::small_files: return r.kind == Kind::small_files;
    case bench::Only::metadata: return r.kind == Kind::metadata;
    case bench::Only::all: break;
    }
    return true;
}

// The median of each figure over a system's rounds: one slow round (a noisy
// neighbour, a journal commit) does not decide a ratio.
bench::Figures median_figures(const std::vector<bench::Figures>& rounds) {
    bench::Figures m;
    for (const Row& r : kRows) {
        std::vector<double> v;
        for (const auto& f : rounds) v.push_back(f.*r.field);
        std::sort(v.begin(), v.end());
        size_t n = v.size();
        m.*r.field = n == 0 ? 0 : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    }
    return m;
}

std::string machine() {
    utsname u{};
    uname(&u);
    return std::string(u.machine) + ", " + std::to_string(std::thread::hardware_concurrency()) + " cores, Linux " +
           u.release;
}

std::string today() {
    std::time_t now = std::time(nullptr);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%d", std::gmtime(&now));
    return buf;
}

// NAME=DIR from --posix.
Result<System> parse_posix(const std::string& arg) {
    auto eq = arg.find('=');
    if (eq == 0 || eq == std::string::npos || eq + 1 == arg.size())
        return Error{-EINVAL, "--posix wants NAME=DIR, not '" + arg + "'"};
    System s;
    s.name = arg.substr(0, eq);
    s.dir = arg.substr(eq + 1);
    return s;
}

Result<bench::Figures> run_posix(const System& s, const bench::Workload& w) {
    // A mistyped mount point must not quietly measure the root file system.
    struct stat st;
    if (!s.dir_is_ours && (::stat(s.dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)))
        return Error{-ENOTDIR, s.name + ": " + s.dir + " is not an existing directory"};
    std::fprintf(stderr, "%s (POSIX, %s)...\n", s.name.c_str(), s.dir.c_str());
    try {
        // Otherwise a directory of its own: DIR may be a mount point, which
        // run_local could not remove.
        return bench::run_local(s.dir_is_ours ? s.dir : s.dir + "/pfs-bench.work", w);
    } catch (const std::exception& e) {
        return Error{-EIO, s.name + ": " + e.what()};
    }
}

// Runs body(fs) against the cluster --mgmtd names, through a client of its own.
template <class T>
Result<T> on_libpfs(const Options& options, std::function<awaitable<Result<T>>(client::FileSystem&)> body) {
    auto secret = daemon::load_secret(options);
    if (!secret) return secret.error();
    auto mgmtd = parse_endpoint(options.get<std::string>("mgmtd"), PFS_DEFAULT_MGMTD_PORT);
    if (!mgmtd) return mgmtd.error();
    asio::io_context io;
    client::Cluster cluster(io.get_executor(), *mgmtd, *secret);
    client::FileSystem fs(cluster);
    Result<T> out = Error{-EIO, "did not run"};
    asio::co_spawn(io, [&]() -> awaitable<void> {
        auto st = co_await cluster.start();
        if (!st) out = st.error();
        else out = co_await body(fs);
        cluster.close();
    }, asio::detached);
    io.run();
    return out;
}

// run: 0, 1, ... over every round and part; runs after the first use
// DIR.2, DIR.3, ... (libpfs has no recursive remove, and the workloads want
// a directory of their own).
Result<bench::Figures> run_libpfs(const System& s, const Options& options, const bench::Workload& w, int run) {
    const std::string dir = run == 0 ? s.dir : s.dir + "." + std::to_string(run + 1);
    std::fprintf(stderr, "%s (libpfs, %s)...\n", s.name.c_str(), dir.c_str());
    return on_libpfs<bench::Figures>(options,
                                     [&](client::FileSystem& fs) { return bench::run_pfs(fs, dir, w); });
}

// What a part of the workloads measured, into its round's figures (each
// figure comes from one part; the others leave it 0).
void add_part(bench::Figures& round, const bench::Figures& part) {
    for (const Row& r : kRows) round.*r.field += part.*r.field;
}

// Table on stdout: one column per system, then each one's ratio to the
// baseline.
void print_table(const std::vector<System>& systems, const System& base) {
    if (base.rounds.size() > 1) std::printf("median of %zu rounds\n", base.rounds.size());
    std::printf("%-24s", "workload");
    for (const auto& s : systems) std::printf(" %12s", s.name.c_str());
    for (const auto& s : systems)
        if (&s != &base) std::printf(" %12s", (s.name + "/" + base.name).c_str());
    std::printf("  unit\n");
    for (const Row& r : kRows) {
        std::printf("%-24s", r.name);
        for (const auto& s : systems)
            measured(s, r) ? std::printf(" %12.0f", s.figures.*r.field) : std::printf(" %12s", "-");
        double b = base.figures.*r.field;
        for (const auto& s : systems) {
            if (&s == &base) continue;
            measured(s, r) && measured(base, r) ? std::printf(" %11.2fx", b > 0 ? s.figures.*r.field / b : 0)
                                                : std::printf(" %12s", "-");
        }
        std::printf("  %s\n", r.unit);
    }
    if (base.rounds.size() < 2) return;
    std::printf("each round, in the order run\n");
    for (const Row& r : kRows) {
        std::printf("%-24s", r.name);
        for (const auto& s : systems) {
            if (!measured(s, r)) continue;
            std::printf(" %s", s.name.c_str());
            const char* sep = " ";
            for (const auto& f : s.rounds) std::printf("%s%.0f", sep, f.*r.field), sep = "/";
        }
        std::printf("\n");
    }
}

json to_json(const std::vector<System>& systems, const System& base, const bench::Workload& w,
             const std::string& note) {
    json out;
    out["date"] = today();
    out["machine"] = machine();
    if (!note.empty()) out["note"] = note;
    out["workload"] = {{"workers", w.threads}, {"seq_mib_per_worker", w.seq_mib_per_thread},
                       {"dl_files", w.dl_files}, {"meta_files_per_worker", w.meta_files_per_thread}, {"meta_workers", w.meta_workers()}, {"dir_stripes", w.dir_stripes},
                       {"drop_caches", w.drop_caches}};
    out["baseline"] = base.name;
    out["rounds"] = base.rounds.size();
    for (const auto& s : systems) out["systems"][s.name] = {{"dir", s.dir}, {"via", s.libpfs ? "libpfs" : "posix"}};
    for (const Row& r : kRows) {
        json row = {{"unit", r.unit}};
        double b = base.figures.*r.field;
        for (const auto& s : systems) {
            if (!measured(s, r)) continue;
            row[s.name] = s.figures.*r.field;
            for (const auto& f : s.rounds) row["rounds"][s.name].push_back(f.*r.field);
            if (&s != &base && measured(base, r)) row["ratio"][s.name] = b > 0 ? s.figures.*r.field / b : 0;
        }
        out["results"][r.name] = row;
    }
    return out;
}

// --growth: one directory grown through its checkpoints (growth.hpp);
// the table on stdout, the JSON at json_out.
Status run_growth(const Options& options, const std::vector<uint64_t>& checkpoints, int workers,
                  const std::string& json_out) {
    const std::string dir = options.get<std::string>("pfs-dir");
    auto pids = bench::parse_pids(options.get<std::string>("server-pid"));
    if (!pids) return pids.error();
    const auto stripes = options.get<uint32_t>("dir-stripes");
    auto steps = on_libpfs<std::vector<bench::GrowthStep>>(options, [&](client::FileSystem& fs) {
        return bench::grow_directory(fs, dir, checkpoints, workers, *pids, stripes);
    });
    if (!steps) return steps.error();
    json out = {{"date", today()}, {"machine", machine()}, {"dir", dir},         {"workers", workers},
                {"dir_stripes", stripes}, {"metadata_servers", pids->size()}, {"steps", json::array()}};
    if (!options.get<std::string>("note").empty()) out["note"] = options.get<std::string>("note");
    std::printf("%12s %12s %10s %14s %14s\n", "entries", "creates/s", "vs first", "server RSS MiB", "bytes/entry");
    for (const auto& step : *steps) {
        const double first = steps->front().creates_s;
        std::printf("%12lu %12.0f %9.2fx %14.1f %14.0f\n", static_cast<unsigned long>(step.entries), step.creates_s,
                    first > 0 ? step.creates_s / first : 0, double(step.server_rss_bytes) / (1 << 20),
                    step.bytes_per_entry);
        out["steps"].push_back({{"entries", step.entries}, {"creates_s", step.creates_s},
                                {"server_rss_bytes", step.server_rss_bytes}, {"bytes_per_entry", step.bytes_per_entry}});
    }
    if (!json_out.empty()) {
        std::ofstream f(json_out);
        f << out.dump(2) << "\n";
        if (!f.flush()) return Error{-EIO, "cannot write " + json_out};
    }
    return ok_status();
}

}  // namespace

int main(int argc, char** argv) {
    log::set_component("pfs-bench");
    Options options("pfs-bench",
                    "PFS benchmark: each workload on PFS (libpfs) and on a local directory, or through POSIX calls "
                    "on each --posix NAME=DIR; ratios to a baseline.");
    daemon::add_auth_option(options);
    options.add()
        ("mgmtd", po::value<std::string>()->default_value("localhost"), "management daemon, HOST[:PORT]")
        ("local-dir", po::value<std::string>(), "local directory for the comparison with libpfs (same disk as the targets)")
        ("pfs-dir", po::value<std::string>()->default_value("/bench"),
         "directory in PFS to create and use (later runs, a part of the workloads or a round each: DIR.2, DIR.3, ...)")
        ("posix", po::value<std::vector<std::string>>()->composing(),
         "NAME=DIR (repeatable): run the workloads through POSIX calls in DIR/pfs-bench.work instead of libpfs")
        ("baseline", po::value<std::string>()->default_value(""),
         "NAME of the --posix system the others are divided by (default: 'local' if given, else the last)")
        ("threads", po::value<int>()->default_value(4), "concurrent workers")
        ("seq-mib", po::value<uint64_t>()->default_value(64), "MiB each sequential stream writes and reads")
        ("dl-files", po::value<int>()->default_value(2000), "100 KiB files for the deep-learning read pattern")
        ("meta-files", po::value<int>()->default_value(2000), "files per worker for the metadata workload")
        ("meta-threads", po::value<int>()->default_value(0),
         "concurrent workers for the metadata workload (0: as many as --threads)")
        ("rounds", po::value<int>()->default_value(1),
         "run every system this many times, interleaved part by part (streams, small files, metadata), and report each figure's median")
        ("seq-only", po::bool_switch(), "only the sequential workloads (buffered and O_DIRECT streams)")
        ("small-only", po::bool_switch(), "only the small-file workload (100 KiB files written, then read)")
        ("meta-only", po::bool_switch(), "only the metadata workload (create, stat, list, unlink)")
        ("drop-caches", po::bool_switch(),
         "sync and drop the kernel's caches (root) before each read and stat phase, so reads reach the file system")
        ("growth", po::value<std::string>(),
         "instead of the workloads: grow --pfs-dir (libpfs) to each of these entry counts in turn, e.g. "
         "10k,100k,1M, with --meta-threads workers; creates/s over each stretch")
        ("server-pid", po::value<std::string>()->default_value("0"),
         "with --growth: the metadata servers' pids on this machine (PID[,PID...]), for their memory per entry")
        ("dir-stripes", po::value<uint32_t>()->default_value(0),
         "stripe --pfs-dir over this many metadata servers (pfs-ctl mkdir --stripe; 0: as its parent says)")
        ("note", po::value<std::string>()->default_value(""), "free text for the JSON, e.g. where it ran")
        ("json-out", po::value<std::string>()->default_value(""), "also write the results as JSON here");
    if (int rc = daemon::parse_or_exit(options, argc, argv); rc >= 0) return rc;
    auto usage_error = [](const std::string& msg) {
        std::fprintf(stderr, "pfs-bench: %s\n", msg.c_str());
        return 2;
    };

    bench::Workload w;
    w.threads = options.get<int>("threads");
    w.seq_mib_per_thread = options.get<uint64_t>("seq-mib");
    w.dl_files = options.get<int>("dl-files");
    w.meta_files_per_thread = options.get<int>("meta-files");
    w.meta_threads = options.get<int>("meta-threads");
    w.drop_caches = options.get<bool>("drop-caches");
    w.dir_stripes = options.get<uint32_t>("dir-stripes");
    const bool seq = options.get<bool>("seq-only"), small = options.get<bool>("small-only"),
               meta = options.get<bool>("meta-only");
    if (int(seq) + int(small) + int(meta) > 1)
        return usage_error("--seq-only, --small-only and --meta-only exclude each other");
    w.only = seq ? bench::Only::sequential : small ? bench::Only::small_files
           : meta ? bench::Only::metadata : bench::Only::all;
    if (w.threads < 1 || w.dl_files < 1 || w.meta_files_per_thread < 1 || w.seq_mib_per_thread < 1)
        return usage_error("--threads, --seq-mib, --dl-files and --meta-files must be positive");
    if (w.meta_threads < 0 || w.meta_threads > 1024) return usage_error("--meta-threads must be 0..1024");
    int rounds = options.get<int>("rounds");
    if (rounds < 1 || rounds > 100) return usage_error("--rounds must be 1..100");
    if (w.drop_caches && geteuid() != 0) return usage_error("--drop-caches needs root");

    if (options.has("growth")) {
        if (options.has("posix")) return usage_error("--growth runs through libpfs, not --posix");
        auto checkpoints = bench::parse_checkpoints(options.get<std::string>("growth"));
        if (!checkpoints) return usage_error(checkpoints.error().message);
        if (auto st = run_growth(options, *checkpoints, w.meta_workers(), options.get<std::string>("json-out")); !st) {
            std::fprintf(stderr, "pfs-bench: %s\n", st.error().message.c_str());
            return 1;
        }
        return 0;
    }

    std::vector<System> systems;
    std::string baseline = options.get<std::string>("baseline");
    if (options.has("posix")) {
        if (options.has("local-dir")) return usage_error("--local-dir goes with libpfs; with --posix name it local=DIR");
        for (const auto& arg : options.get<std::vector<std::string>>("posix")) {
            auto s = parse_posix(arg);
            if (!s) return usage_error(s.error().message);
            for (const auto& other : systems)
                if (other.name == s->name) return usage_error("--posix name '" + s->name + "' given twice");
            systems.push_back(*s);
        }
    } else {
        if (!options.has("local-dir")) return usage_error("give --local-dir (libpfs beside it) or --posix NAME=DIR");
        if (!baseline.empty() && baseline != "local") return usage_error("--baseline is for --posix");
        systems.push_back({"pfs", options.get<std::string>("pfs-dir"), true, false, {}, {}});
        systems.push_back({"local", options.get<std::string>("local-dir"), false, true, {}, {}});
    }
    for (auto& s : systems) s.only = w.only;
    const System* base = nullptr;
    for (const auto& s : systems)
        if (s.name == (baseline.empty() ? "local" : baseline)) base = &s;
    if (!base && !baseline.empty()) return usage_error("--baseline '" + baseline + "' is not a --posix NAME");
    if (!base) base = &systems.back();

    // Interleaved part by part (the streams on pfs, nfs, local, then the
    // small files on each, then the metadata workload, and again each
    // round): the figures set side by side are taken within a part's run
    // of each other, not a whole round apart, so a slow spell of the
    // machine falls on them alike.
    std::vector<bench::Only> parts{w.only};
    if (w.only == bench::Only::all) parts = {bench::Only::sequential, bench::Only::small_files, bench::Only::metadata};
    int run = 0;
    for (int round = 0; round < rounds; ++round) {
        for (auto& s : systems) s.rounds.emplace_back();
        for (bench::Only part : parts) {
            bench::Workload pw = w;
            pw.only = part;
            for (auto& s : systems) {
                if (rounds > 1) std::fprintf(stderr, "round %d of %d: ", round + 1, rounds);
                auto figures = s.libpfs ? run_libpfs(s, options, pw, run) : run_posix(s, pw);
                if (!figures) {
                    std::fprintf(stderr, "pfs-bench: %s\n", figures.error().message.c_str());
                    return 1;
                }
                add_part(s.rounds.back(), *figures);
            }
            ++run;
        }
    }
    for (auto& s : systems) s.figures = median_figures(s.rounds);

    print_table(systems, *base);
    json out = to_json(systems, *base, w, options.get<std::string>("note"));
    std::string path = options.get<std::string>("json-out");
    if (!path.empty()) {
        std::ofstream f(path);
        f << out.dump(2) << "\n";
        if (!f.flush()) return usage_error("cannot write " + path);
    }
    return 0;
}
