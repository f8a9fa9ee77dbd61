// A synchronous client of pfs-mgmtd for pfs-ctl: one call at a time, each
// driven to completion on a private io_context. The Asio machinery stays in
// mgmt_client.cpp; this header is cheap to include.
//
// Every Error from here carries its pfs-ctl exit status in `code` (see
// exit_status.hpp) and a message ready to print after "pfs-ctl: ".
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "config.hpp"
#include "result.hpp"

extern "C" {
#include "pfs_proto.h"
}

namespace pfs::ctl {

class MgmtClient {
public:
    // --mgmtd, --auth-file and --timeout-ms.
    static void add_options(Options& options);
    // Reads those options and the auth file. Connects on the first call.
    static Result<std::unique_ptr<MgmtClient>> open(const Options& options);
    ~MgmtClient();

    MgmtClient(const MgmtClient&) = delete;
    MgmtClient& operator=(const MgmtClient&) = delete;

    // node_type 0: every type.
    Result<std::vector<pfs_node_info>> nodes(uint16_t node_type = 0);
    Result<std::vector<pfs_target_info>> targets();
    Result<std::vector<pfs_pool_info>> pools();
    // pool_id 0: the server picks one. Returns the pool as created.
    Result<pfs_create_pool> create_pool(uint32_t pool_id, const std::string& name);
    Status assign_pool(uint32_t target_id, uint32_t pool_id);
    Status set_target_state(uint32_t target_id, uint8_t consistency);

    // "host:port" of the management daemon, for messages.
    const std::string& address() const;

    struct Impl;
    explicit MgmtClient(std::unique_ptr<Impl> impl);

private:
    // Sends one request and returns the body of a successful reply.
    Result<std::vector<uint8_t>> call(uint16_t type, Result<std::vector<uint8_t>> payload);

    std::unique_ptr<Impl> impl_;
};

}  // namespace pfs::ctl
