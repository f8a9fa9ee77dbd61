// How a libpfs client reaches its file system: pfs-mgmtd's address, the
// shared secret, the time limit and the transport, from the command line or
// a config file in pfs-ctl's format (/etc/pfs/ctl.conf). pfs-ctl and the C
// interface (shared/pfsclient.h) read them alike.
#pragma once

#include <chrono>
#include <memory>

#include "auth_crypto.hpp"
#include "config.hpp"
#include "rdma/rails.hpp"
#include "rpc_client.hpp"

namespace pfs::client {

struct ClientSettings {
    Endpoint mgmtd;
    auth::Secret secret;
    std::chrono::milliseconds timeout{5000};
    TransportChoice transport = TransportChoice::automatic;
    std::shared_ptr<const rdma::Rails> rails{};
    // Frame MACs over file data too, on every server's connections (else
    // metadata servers' MACs leave bulk data out and storage servers'
    // connections carry none): pfs.ko's data_mac.
    bool data_mac = false;

    ClientConfig client_config() const;
};

// --auth-file, --mgmtd, --timeout-ms, --transport, --rails, --data-mac.
void add_client_options(Options& options);

enum class SettingsProblem { usage, secret };

// The options of add_client_options, checked. On an error *problem says
// whether an option is wrong or the secret could not be read.
Result<ClientSettings> load_client_settings(const Options& options, SettingsProblem* problem = nullptr);

}  // namespace pfs::client
