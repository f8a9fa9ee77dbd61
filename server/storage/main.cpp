// pfs-storage: the storage server. It keeps file contents as chunk files on
// its targets; this version registers the targets, reports their capacity
// and answers PING.
#include "server_main.hpp"

int main(int argc, char** argv) {
    const pfs::ServerDaemon spec{"pfs-storage", "PFS storage server.", PFS_NODE_STORAGE, PFS_DEFAULT_STORAGE_PORT,
                                 "/var/lib/pfs/storage", true};
    return pfs::run_server_daemon(spec, argc, argv,
                                  [](pfs::RpcServer&, pfs::NodeAgent&) { return pfs::ok_status(); });
}
