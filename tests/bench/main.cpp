// pfs-bench: the three workloads of the design (sequential streams, deep-
// learning small-file reads, metadata ops) through libpfs against a running
// PFS, each beside the same workload on a local directory, as a ratio.
#include <sys/utsname.h>

#include <cstdio>
#include <ctime>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "daemon.hpp"
#include "log.hpp"
#include "pfs_fs.hpp"

using namespace pfs;
using nlohmann::json;

namespace {

struct Row {
    const char* name;
    const char* unit;
    double bench::Figures::*field;
};

const Row kRows[] = {
    {"seq_write", "MB/s", &bench::Figures::seq_write_mbs},
    {"seq_read", "MB/s", &bench::Figures::seq_read_mbs},
    {"dl_read_100k", "files/s", &bench::Figures::dl_read_files_s},
    {"create_shared_dir", "ops/s", &bench::Figures::create_shared_s},
    {"stat_shared_dir", "ops/s", &bench::Figures::stat_shared_s},
    {"unlink_shared_dir", "ops/s", &bench::Figures::unlink_shared_s},
    {"create_dir_per_worker", "ops/s", &bench::Figures::create_private_s},
};

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

}  // namespace

int main(int argc, char** argv) {
    log::set_component("pfs-bench");
    Options options("pfs-bench", "PFS benchmark: each workload on PFS and on a local directory, as a ratio.");
    daemon::add_auth_option(options);
    options.add()
        ("mgmtd", po::value<std::string>()->default_value("localhost"), "management daemon, HOST[:PORT]")
        ("local-dir", po::value<std::string>()->required(), "local directory for the comparison (same disk as the targets)")
        ("pfs-dir", po::value<std::string>()->default_value("/bench"), "directory in PFS to create and use")
        ("threads", po::value<int>()->default_value(4), "concurrent workers")
        ("seq-mib", po::value<uint64_t>()->default_value(64), "MiB each sequential stream writes and reads")
        ("dl-files", po::value<int>()->default_value(2000), "100 KiB files for the deep-learning read pattern")
        ("meta-files", po::value<int>()->default_value(2000), "files per worker for the metadata workload")
        ("json-out", po::value<std::string>()->default_value(""), "also write the results as JSON here");
    if (int rc = daemon::parse_or_exit(options, argc, argv); rc >= 0) return rc;

    bench::Workload w;
    w.threads = options.get<int>("threads");
    w.seq_mib_per_thread = options.get<uint64_t>("seq-mib");
    w.dl_files = options.get<int>("dl-files");
    w.meta_files_per_thread = options.get<int>("meta-files");
    auto secret = daemon::load_secret(options);
    auto mgmtd = parse_endpoint(options.get<std::string>("mgmtd"), PFS_DEFAULT_MGMTD_PORT);
    if (!secret || !mgmtd) {
        std::fprintf(stderr, "pfs-bench: %s\n", (!secret ? secret.error() : mgmtd.error()).message.c_str());
        return 2;
    }

    std::fprintf(stderr, "local file system...\n");
    bench::Figures local = bench::run_local(options.get<std::string>("local-dir"), w);

    std::fprintf(stderr, "pfs...\n");
    asio::io_context io;
    client::Cluster cluster(io.get_executor(), *mgmtd, *secret);
    client::FileSystem fs(cluster);
    Result<bench::Figures> pfs_figures = Error{-EIO, "did not run"};
    asio::co_spawn(io, [&]() -> awaitable<void> {
        auto st = co_await cluster.start();
        if (!st) {
            pfs_figures = st.error();
        } else {
            pfs_figures = co_await bench::run_pfs(fs, options.get<std::string>("pfs-dir"), w);
        }
        cluster.close();
    }, asio::detached);
    io.run();
    if (!pfs_figures) {
        std::fprintf(stderr, "pfs-bench: %s\n", pfs_figures.error().message.c_str());
        return 1;
    }

    json out;
    out["date"] = today();
    out["machine"] = machine();
    out["workload"] = {{"workers", w.threads}, {"seq_mib_per_worker", w.seq_mib_per_thread},
                       {"dl_files", w.dl_files}, {"meta_files_per_worker", w.meta_files_per_thread}};
    std::printf("%-24s %12s %12s %8s\n", "workload", "pfs", "local", "ratio");
    for (const Row& r : kRows) {
        double p = (*pfs_figures).*r.field, l = local.*r.field;
        double ratio = l > 0 ? p / l : 0;
        std::printf("%-24s %12.0f %12.0f %7.2fx  %s\n", r.name, p, l, ratio, r.unit);
        out["results"][r.name] = {{"unit", r.unit}, {"pfs", p}, {"local", l}, {"ratio", ratio}};
    }
    std::string path = options.get<std::string>("json-out");
    if (!path.empty()) std::ofstream(path) << out.dump(2) << "\n";
    return 0;
}
