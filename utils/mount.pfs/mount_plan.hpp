// What mount.pfs does, as pure functions: from its command line and the
// client config to the one mount(2) call it makes. main.cpp only performs
// the call; everything here is unit-tested.
#pragma once

#include "client_config.hpp"
#include "result.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pfs::mount {

// mount(8)'s exit codes (see its manual, "RETURN CODES").
inline constexpr int kExitOk = 0;
inline constexpr int kExitUsage = 1;    // incorrect invocation or permissions
inline constexpr int kExitFailure = 32; // mount failure

// `mount.pfs SOURCE DIR [-sfnv] [-N NS] [-o OPTIONS] [-t TYPE]`, as mount(8)
// runs it; flags may come before, between or after the two words.
struct Invocation {
    std::string source;
    std::string target;
    std::string options;       // every -o joined with ','
    std::optional<std::string> ns;  // -N: a PID or a mount namespace file
    bool fake = false;         // -f
    bool verbose = false;      // -v
    bool help = false;         // -h / --help: nothing else is required
    bool version = false;      // -V / --version: likewise
};

Result<Invocation> parse_command_line(const std::vector<std::string>& args);

// Where the mgmtd address comes from: "HOST", "HOST:PORT", "[V6]",
// "[V6]:PORT", a bare IPv6 literal, or "pfs"/"none" (from client.conf).
struct Source {
    std::string host;             // without brackets; empty when from_config
    std::optional<uint16_t> port;
    bool from_config = false;
    bool operator==(const Source&) const = default;
};

Result<Source> parse_source(std::string_view source);

// -o OPTIONS sorted into what goes where.
struct MountOptions {
    unsigned long flags = 0;                  // MS_* for mount(2)
    std::vector<KernelOption> kernel;         // passed on in the data string
    std::vector<std::string> dropped;         // user-space only (_netdev, x-*, ...)
    std::optional<std::string> config_path;   // config=PATH
};

Result<MountOptions> parse_mount_options(std::string_view options);

// The config file to read: config=PATH, else $PFS_CLIENT_CONF, else the
// default. Only the default may be missing.
struct ConfigChoice {
    std::string path;
    bool must_exist = false;
};
ConfigChoice choose_config(const MountOptions& options, const char* env_value);

// Host name -> literal address (no brackets), or why not.
using Resolver = std::function<Result<std::string>(const std::string& host)>;

// getaddrinfo(): the first IPv4 address, else the first IPv6 address.
Result<std::string> resolve_host(const std::string& host);

struct MountCall {
    std::string source;  // what the kernel gets: "A.B.C.D:PORT" or "[V6]:PORT"
    std::string target;
    std::string fstype = "pfs";
    unsigned long flags = 0;
    std::string data;    // the kernel's option string
    // For messages: where the address came from.
    std::string mgmtd_host;  // as named (before resolution)
    uint16_t mgmtd_port = 0;
    std::string auth_file;
};

// The mount(2) call. Options from the command line override the config
// file's. A remount sends only flags and the command line's options: the
// kernel fixes everything else at mount time, and the source is not used.
Result<MountCall> plan_mount(const Invocation& inv, const MountOptions& options,
                             const ClientConfig& config, const Resolver& resolve);

// "MS_RDONLY|MS_NOSUID", "0" for none.
std::string format_flags(unsigned long flags);

// mount("SRC", "DIR", "pfs", FLAGS, "DATA") with C string quoting.
std::string format_mount_call(const MountCall& call);

// What to tell the operator when mount(2) fails with `err` (an errno), and
// the exit status to return.
struct Failure {
    std::string message;
    int exit_code = kExitFailure;
};
Failure explain_mount_error(int err, const MountCall& call);

}  // namespace pfs::mount
