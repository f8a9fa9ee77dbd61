// /etc/pfs/client.conf: what mount.pfs needs to know about the cluster.
//
// The syntax is the one the daemons read through Boost.Program_options
// (`key = value`, `#` starts a comment anywhere on a line, blank lines are
// ignored), parsed here by hand: the mount helper runs at boot from
// mount(8) and stays small, and a mistake must be reported with its line
// number, which Boost does not give.
#pragma once

#include "result.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pfs::mount {

inline constexpr const char* kDefaultClientConf = "/etc/pfs/client.conf";
inline constexpr const char* kDefaultAuthFile = "/etc/pfs/auth.secret";
inline constexpr const char* kClientConfEnv = "PFS_CLIENT_CONF";

// A kernel mount option, `name=value` ("cache=none"), or a bare `name`.
struct KernelOption {
    std::string name;
    std::optional<std::string> value;
    bool operator==(const KernelOption&) const = default;
};

struct ClientConfig {
    std::string path;                       // the file read; "" when none was
    std::optional<std::string> mgmtd_host;  // used when the mount source is "pfs"
    uint16_t mgmtd_port;                    // used when the source names no port
    std::string auth_file = kDefaultAuthFile;
    // The kernel tunables the file sets (timeout=, conns=, ...), in file order.
    // Those it leaves out keep the kernel's defaults.
    std::vector<KernelOption> kernel_options;

    ClientConfig();
};

// Parses the text of a client.conf; `path` only names the file in messages
// ("PATH:LINE: ..."). An unknown or repeated key, a missing '=' or a value
// of the wrong kind is an error.
Result<ClientConfig> parse_client_config(std::string_view text, const std::string& path);

// Reads and parses `path`. A file that does not exist is an empty config
// unless `must_exist` (the operator named it).
Result<ClientConfig> load_client_config(const std::string& path, bool must_exist);

}  // namespace pfs::mount
