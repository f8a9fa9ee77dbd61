// pfs-storage: the storage server. It keeps file contents as chunk files on
// its targets, serves the chunk messages through io_uring, registers the
// targets with pfs-mgmtd and reports their capacity.
#include "server_main.hpp"
#include "service.hpp"

int main(int argc, char** argv) {
    const pfs::ServerDaemon spec{"pfs-storage", "PFS storage server.", PFS_NODE_STORAGE,
                                 PFS_DEFAULT_STORAGE_PORT, "/var/lib/pfs/storage", true};
    auto install = [](pfs::RpcServer& server, pfs::NodeAgent& agent, pfs::DaemonContext&) -> pfs::Status {
        // The handlers own the service, and the server drops them before the
        // event loop goes: nothing of the ring outlives the loop.
        auto service = pfs::StorageService::create(agent.targets());
        if (!service) return service.error();
        (*service)->install(server);
        return pfs::ok_status();
    };
    return pfs::run_server_daemon(spec, argc, argv, install);
}
