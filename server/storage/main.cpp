// pfs-storage: the storage server. It keeps file contents as chunk files on
// its targets, serves the chunk messages through io_uring, registers the
// targets with pfs-mgmtd and reports their capacity.
#include "log.hpp"
#include "server_main.hpp"
#include "storage_service.hpp"

namespace {

void add_storage_options(pfs::Options& options) {
    namespace po = pfs::po;
    const pfs::StorageServiceOptions defaults;
    options.add()
        ("direct-io", po::value<std::string>()->default_value("auto")->implicit_value("true"),
         "chunk files with O_DIRECT, past the page cache: auto (where the target's file system supports it), "
         "true (it must) or false")
        ("io-ring-entries", po::value<unsigned>()->default_value(defaults.ring.entries),
         "io_uring submission queue size: disk operations in flight at once")
        ("io-buffers", po::value<unsigned>()->default_value(static_cast<unsigned>(defaults.fixed_buffers)),
         "registered (pinned) I/O buffers; 0: none")
        ("io-buffer-kib", po::value<unsigned>()->default_value(static_cast<unsigned>(defaults.fixed_buffer_size >> 10)),
         "size of each registered buffer in KiB; larger requests use plain buffers");
}

pfs::Result<pfs::StorageServiceOptions> storage_options(const pfs::Options& options) {
    pfs::StorageServiceOptions out;
    if (auto st = pfs::parse_direct_io(options.get<std::string>("direct-io"), "direct-io", out.chunks); !st)
        return st.error();
    out.ring.entries = options.get<unsigned>("io-ring-entries");
    out.fixed_buffers = options.get<unsigned>("io-buffers");
    out.fixed_buffer_size = size_t{options.get<unsigned>("io-buffer-kib")} << 10;
    // Out-of-range values are refused by the ring (start-up fails) and the
    // buffer pool (the server runs without registered buffers and says so).
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    const pfs::ServerDaemon spec{"pfs-storage", "PFS storage server.", PFS_NODE_STORAGE,
                                 PFS_DEFAULT_STORAGE_PORT, "/var/lib/pfs/storage", true, false,
                                 pfs::ServerDaemon::Loops::every_core, add_storage_options};
    auto install = [](pfs::RpcServer& server, pfs::NodeAgent& agent,
                      pfs::DaemonContext& ctx) -> pfs::Result<pfs::DaemonParts> {
        auto parsed = storage_options(ctx.options);
        if (!parsed) return parsed.error();
        auto options = std::move(*parsed);
        options.worker_loops = ctx.loops.size();
        // The handlers own the service, and the server drops them before the
        // event loop goes: nothing of the ring outlives the loop.
        auto service = pfs::StorageService::create(agent.targets(), options);
        if (!service) return service.error();
        (*service)->install(server);
        (*service)->install_sync_all(server);
        agent.on_registered([service = *service](uint32_t) { service->refresh_ids(); });
        // Not a coroutine itself: the lambda may be gone before the work ends.
        // The worker loops halt first: no write is acknowledged after the
        // targets were synced for the clean stop.
        ctx.before_stop = [service = *service, &loops = ctx.loops, &server] {
            server.stop();
            loops.halt();
            return service->stop_cleanly();
        };
        ctx.after_stop = [service = *service] { service->join_helpers(); };
        return pfs::DaemonParts{};
    };
    return pfs::run_server_daemon(spec, argc, argv, install);
}
