// mount.pfs: the mount helper mount(8) runs for `mount -t pfs` and for
// fstab lines of type pfs. It reads /etc/pfs/client.conf, resolves the
// pfs-mgmtd host name (the kernel takes literal addresses only), turns
// generic options into MS_* flags, drops user-space-only options and calls
// mount(2). Everything but the call itself is in mount_plan.cpp.
//
// fstab: mark the line _netdev so that it is mounted after the network is up
// (systemd orders it after network-online.target); the helper drops it:
//     pfs  /mnt/pfs  pfs  _netdev,nofail  0  0
#include "mount_plan.hpp"
#include "pfs_proto.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <unistd.h>

namespace {

using namespace pfs::mount;

constexpr const char* kUsage =
    "Usage: mount.pfs SOURCE DIR [-sfnv] [-N NS] [-o OPTIONS]\n"
    "\n"
    "SOURCE is pfs-mgmtd: HOST[:PORT], [IPV6]:PORT, or 'pfs' for mgmtd-host and\n"
    "mgmtd-port from the client config (/etc/pfs/client.conf, or $PFS_CLIENT_CONF,\n"
    "or -o config=PATH).\n"
    "\n"
    "  -f  fake: print the mount(2) call instead of making it\n"
    "  -V, --version  print the version and exit\n"
    "  -v  verbose: print the config, the resolved source and the options\n"
    "  -s, -n  accepted and ignored (sloppy, no mtab)\n"
    "  -N NS   mount in the mount namespace of PID NS, or of the namespace file NS\n"
    "  -o OPTIONS  comma-separated: the kernel's secret_file=PATH, timeout=MS,\n"
    "      connect_timeout=MS, attr_ttl=MS, conns=N, cache=buffered|none (they win\n"
    "      over the client config), generic ones (ro, nosuid, noatime, ...), and\n"
    "      user-space ones that are dropped (_netdev, nofail, x-*, ...)\n";

int fail(int code, const std::string& message) {
    std::fprintf(stderr, "mount.pfs: %s\n", message.c_str());
    return code;
}

std::string ns_path(const std::string& ns) {
    bool pid = !ns.empty() && ns.find_first_not_of("0123456789") == std::string::npos;
    return pid ? "/proc/" + ns + "/ns/mnt" : ns;
}

// The kernel reads secret_file in the namespace it mounts in: enter it
// after everything was read from the caller's.
int enter_namespace(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return errno;
    int rc = ::setns(fd, CLONE_NEWNS);
    int err = rc < 0 ? errno : 0;
    ::close(fd);
    return err;
}

void print_plan(const ClientConfig& config, const MountOptions& options, const MountCall& call,
                const std::string& source) {
    std::printf("mount.pfs: config: %s\n",
                config.path.empty() ? "none (built-in defaults)" : config.path.c_str());
    if (options.flags & MS_REMOUNT) {
        std::printf("mount.pfs: remount: source and client config are not used\n");
    } else {
        std::printf("mount.pfs: source: %s -> pfs-mgmtd %s port %u -> %s\n", source.c_str(),
                    call.mgmtd_host.c_str(), unsigned{call.mgmtd_port}, call.source.c_str());
    }
    std::printf("mount.pfs: options: %s; flags: %s\n", call.data.c_str(),
                format_flags(call.flags).c_str());
    if (!options.dropped.empty()) {
        std::string dropped;
        for (const std::string& d : options.dropped) dropped += (dropped.empty() ? "" : ",") + d;
        std::printf("mount.pfs: not for the kernel: %s\n", dropped.c_str());
    }
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<std::string> args(argv + 1, argv + argc);
    auto inv = parse_command_line(args);
    if (!inv) return fail(kExitUsage, inv.error().message + " (try --help)");
    if (inv->help) {
        std::fputs(kUsage, stdout);
        return kExitOk;
    }
    if (inv->version) {
        std::printf("mount.pfs %s (protocol %d)\n", PFS_VERSION, PFS_PROTO_VERSION);
        return kExitOk;
    }
    auto options = parse_mount_options(inv->options);
    if (!options) return fail(kExitUsage, options.error().message);

    ClientConfig config;
    if (!(options->flags & MS_REMOUNT)) {
        ConfigChoice choice = choose_config(*options, std::getenv(kClientConfEnv));
        auto loaded = load_client_config(choice.path, choice.must_exist);
        if (!loaded) return fail(kExitUsage, loaded.error().message);
        config = std::move(*loaded);
    }

    auto call = plan_mount(*inv, *options, config, resolve_host);
    if (!call) {
        // An unknown host is a failed mount; anything else a wrong invocation.
        int code = call.error().code == -EHOSTUNREACH ? kExitFailure : kExitUsage;
        return fail(code, call.error().message);
    }
    if (inv->verbose) print_plan(config, *options, *call, inv->source);

    if (inv->ns) {
        std::string path = ns_path(*inv->ns);
        if (inv->fake) {
            std::printf("setns(open(\"%s\"), CLONE_NEWNS)\n", path.c_str());
        } else if (int err = enter_namespace(path); err != 0) {
            return fail(kExitUsage,
                        "cannot enter the mount namespace " + path + ": " + std::strerror(err));
        }
    }
    if (inv->fake || inv->verbose) {
        std::printf("%s\n", format_mount_call(*call).c_str());
        std::fflush(stdout);
    }
    if (inv->fake) return kExitOk;

    if (::mount(call->source.c_str(), call->target.c_str(), call->fstype.c_str(), call->flags,
                call->data.c_str()) != 0) {
        Failure f = explain_mount_error(errno, *call);
        return fail(f.exit_code, f.message);
    }
    return kExitOk;
}
