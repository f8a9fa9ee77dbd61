// pfs-meta: the metadata server. It owns part of the namespace; this
// version registers, reports its metadata store's capacity and answers PING.
#include "server_main.hpp"

int main(int argc, char** argv) {
    const pfs::ServerDaemon spec{"pfs-meta", "PFS metadata server.", PFS_NODE_META, PFS_DEFAULT_META_PORT,
                                 "/var/lib/pfs/meta", false};
    return pfs::run_server_daemon(spec, argc, argv,
                                  [](pfs::RpcServer&, pfs::NodeAgent&) { return pfs::ok_status(); });
}
