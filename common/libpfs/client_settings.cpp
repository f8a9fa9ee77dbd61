#include "client_settings.hpp"

#include <string>

#include "daemon.hpp"
#include "pfs_proto.h"

namespace pfs::client {

using std::chrono::milliseconds;

ClientConfig ClientSettings::client_config() const {
    ClientConfig config;
    config.connect_timeout = timeout;
    config.request_timeout = timeout;
    // The admin role when the auth file allows it (changing the map and
    // fsck need it), else what the file proves.
    config.role = secret.strongest();
    config.transport = transport;
    config.rails = rails;
    config.macs = data_mac ? MacWish::frames_and_data : MacWish::if_required;
    return config;
}

void add_client_options(Options& options) {
    daemon::add_auth_option(options);
    options.add()
        ("mgmtd", po::value<std::string>()->default_value("localhost:" + std::to_string(PFS_DEFAULT_MGMTD_PORT))
                      ->value_name("HOST[:PORT]"),
         "management daemon to ask")
        ("timeout-ms", po::value<unsigned>()->default_value(5000)->value_name("MS"),
         "give up on connecting or on an answer after this long")
        ("transport", po::value<std::string>()->default_value("auto")->value_name("auto|tcp|rdma"),
         "to the servers: RDMA where they offer it (falling back to TCP), TCP only, or RDMA only")
        ("rails", po::value<std::string>()->default_value("")->value_name("IF[,IF...]"),
         "the local RDMA interfaces to use: each request to a server goes by the least loaded one that reaches "
         "it (same subnet), a failed one is left alone for a while (default: a way per server address, wherever routing says)")
        ("data-mac", po::bool_switch(),
         "frame MACs over file data too, on storage servers' connections as well (default: metadata servers' MACs "
         "cover headers and bodies, not file data; storage connections carry none)");
}

Result<ClientSettings> load_client_settings(const Options& options, SettingsProblem* problem) {
    SettingsProblem ignored;
    SettingsProblem& why = problem ? *problem : ignored;
    why = SettingsProblem::usage;
    auto endpoint = parse_endpoint(options.get<std::string>("mgmtd"), PFS_DEFAULT_MGMTD_PORT);
    if (!endpoint) return Error{-EINVAL, "--mgmtd: " + endpoint.error().message};
    unsigned timeout_ms = options.get<unsigned>("timeout-ms");
    if (timeout_ms == 0) return Error{-EINVAL, "--timeout-ms must be at least 1"};
    auto transport = parse_transport(options.get<std::string>("transport"));
    if (!transport) return Error{-EINVAL, "--transport: " + transport.error().message};
    auto rails = rdma::Rails::parse(options.get<std::string>("rails"));
    if (!rails) return Error{-EINVAL, "--rails: " + rails.error().message};
    if (!(*rails)->empty() && *transport == TransportChoice::tcp)
        return Error{-EINVAL, "--rails names RDMA interfaces, and --transport tcp uses none"};

    auto secret = daemon::load_secret(options);
    if (!secret) {
        why = SettingsProblem::secret;
        // "auth file PATH: strerror" reads well after "cannot read"; other complaints need a colon.
        const std::string& msg = secret.error().message;
        std::string prefix = "auth file " + options.get<std::string>("auth-file") + ": ";
        return Error{secret.error().code,
                     msg.starts_with(prefix) ? "cannot read " + msg : "cannot read auth file: " + msg};
    }
    return ClientSettings{std::move(*endpoint), std::move(*secret), milliseconds(timeout_ms), *transport,
                          std::move(*rails), options.get<bool>("data-mac")};
}

}  // namespace pfs::client
