#include "mount_plan.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/mount.h>
#include <sys/socket.h>

namespace pfs::mount {
namespace {

Error usage_error(std::string message) { return Error{-EINVAL, std::move(message)}; }

// Arguments of -o, -N and -t: the rest of the word ("-oro") or the next word.
bool take_value(const std::vector<std::string>& args, size_t& i, size_t pos, std::string& out) {
    if (pos + 1 < args[i].size()) {
        out = args[i].substr(pos + 1);
        return true;
    }
    if (i + 1 >= args.size()) return false;
    out = args[++i];
    return true;
}

bool parse_port(std::string_view text, uint16_t& port) {
    unsigned value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value == 0 ||
        value > 65535) {
        return false;
    }
    port = static_cast<uint16_t>(value);
    return true;
}

std::vector<std::string_view> split_commas(std::string_view s) {
    std::vector<std::string_view> out;
    while (!s.empty()) {
        size_t comma = s.find(',');
        std::string_view item = s.substr(0, comma);
        if (!item.empty()) out.push_back(item);
        if (comma == std::string_view::npos) break;
        s.remove_prefix(comma + 1);
    }
    return out;
}

struct FlagOption {
    const char* name;
    unsigned long set;
    unsigned long clear;
};

// The atime modes exclude each other: the last one named wins, as with mount(8).
constexpr unsigned long kAtimeModes = MS_NOATIME | MS_RELATIME | MS_STRICTATIME;

constexpr FlagOption kFlagOptions[] = {
    {"ro", MS_RDONLY, 0},
    {"rw", 0, MS_RDONLY},
    {"nosuid", MS_NOSUID, 0},
    {"suid", 0, MS_NOSUID},
    {"nodev", MS_NODEV, 0},
    {"dev", 0, MS_NODEV},
    {"noexec", MS_NOEXEC, 0},
    {"exec", 0, MS_NOEXEC},
    {"sync", MS_SYNCHRONOUS, 0},
    {"async", 0, MS_SYNCHRONOUS},
    {"dirsync", MS_DIRSYNC, 0},
    {"noatime", MS_NOATIME, kAtimeModes},
    {"atime", 0, MS_NOATIME},
    {"relatime", MS_RELATIME, kAtimeModes},
    {"norelatime", 0, MS_RELATIME},
    {"strictatime", MS_STRICTATIME, kAtimeModes},
    {"nostrictatime", 0, MS_STRICTATIME},
    {"nodiratime", MS_NODIRATIME, 0},
    {"diratime", 0, MS_NODIRATIME},
    {"lazytime", MS_LAZYTIME, 0},
    {"nolazytime", 0, MS_LAZYTIME},
    {"iversion", MS_I_VERSION, 0},
    {"noiversion", 0, MS_I_VERSION},
    {"silent", MS_SILENT, 0},
    {"loud", 0, MS_SILENT},
    {"remount", MS_REMOUNT, 0},
};

// Meant for mount(8), fstab readers (systemd, mount -a) or other helpers,
// never for the kernel.
constexpr const char* kUserSpaceOptions[] = {
    "_netdev", "nofail", "noauto", "auto", "user", "users", "nouser", "owner", "group", "defaults",
};
constexpr const char* kUserSpacePrefixes[] = {"x-", "X-", "comment=", "user="};

// mount(8) does these itself; reaching a helper with them is a mistake.
constexpr const char* kUnsupported[] = {
    "bind",   "rbind",   "move",  "shared", "rshared",    "private",
    "rprivate", "slave", "rslave", "unbindable", "runbindable",
};

template <class Range>
bool contains(const Range& names, std::string_view name) {
    return std::any_of(std::begin(names), std::end(names),
                       [&](const char* n) { return name == n; });
}

void set_option(std::vector<KernelOption>& list, const KernelOption& option) {
    auto it = std::find_if(list.begin(), list.end(),
                           [&](const KernelOption& o) { return o.name == option.name; });
    if (it == list.end()) {
        list.push_back(option);
    } else {
        it->value = option.value;
    }
}

std::string join(const std::vector<KernelOption>& options) {
    std::string out;
    for (const KernelOption& o : options) {
        if (!out.empty()) out += ',';
        out += o.name;
        if (o.value) out += '=' + *o.value;
    }
    return out;
}

std::string quote(std::string_view s) {
    std::string out = "\"";
    for (unsigned char c : s) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += static_cast<char>(c);
        } else if (c < 0x20 || c >= 0x7f) {
            char buf[5];
            std::snprintf(buf, sizeof buf, "\\x%02x", c);
            out += buf;
        } else {
            out += static_cast<char>(c);
        }
    }
    return out + '"';
}

}  // namespace

Result<Invocation> parse_command_line(const std::vector<std::string>& args) {
    Invocation inv;
    std::vector<std::string> words;
    bool only_words = false;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& arg = args[i];
        if (only_words || arg.size() < 2 || arg[0] != '-') {
            words.push_back(arg);
            continue;
        }
        if (arg == "--") {
            only_words = true;
            continue;
        }
        if (arg == "--help") {
            inv.help = true;
            continue;
        }
        if (arg == "--version") {
            inv.version = true;
            continue;
        }
        for (size_t pos = 1; pos < arg.size(); ++pos) {
            char c = arg[pos];
            std::string value;
            switch (c) {
            case 's':  // sloppy: every option we do not know goes to the kernel anyway
            case 'n':  // no mtab: there is none to write
                break;
            case 'f':
                inv.fake = true;
                break;
            case 'v':
                inv.verbose = true;
                break;
            case 'h':
                inv.help = true;
                break;
            case 'V':
                inv.version = true;
                break;
            case 'o':
            case 'N':
            case 't':
                if (!take_value(args, i, pos, value)) {
                    return usage_error(std::string("option -") + c + " needs a value");
                }
                if (c == 'o') {
                    if (!inv.options.empty() && !value.empty()) inv.options += ',';
                    inv.options += value;
                } else if (c == 'N') {
                    inv.ns = value;
                } else if (value != "pfs") {
                    return usage_error("this helper mounts type 'pfs', not '" + value + "'");
                }
                pos = arg.size();  // the value used the rest of the word
                break;
            default:
                return usage_error(std::string("unknown flag -") + c);
            }
        }
    }
    if (inv.help || inv.version) return inv;
    if (words.size() != 2) {
        return usage_error(words.size() < 2 ? "expected SOURCE and DIR"
                                            : "too many arguments: '" + words[2] + "'");
    }
    if (words[0].empty() || words[1].empty()) return usage_error("SOURCE and DIR must not be empty");
    inv.source = words[0];
    inv.target = words[1];
    return inv;
}

Result<Source> parse_source(std::string_view text) {
    Source src;
    if (text == "pfs" || text == "none") {
        src.from_config = true;
        return src;
    }
    auto bad = [&](const std::string& why) {
        return usage_error("bad source '" + std::string(text) + "': " + why +
                           " (expected HOST[:PORT], [IPV6]:PORT, or pfs)");
    };
    std::string_view host = text;
    std::string_view port;
    bool has_port = false;
    if (text.front() == '[') {
        size_t close = text.find(']');
        if (close == std::string_view::npos) return bad("no ']'");
        host = text.substr(1, close - 1);
        std::string_view rest = text.substr(close + 1);
        if (!rest.empty()) {
            if (rest.front() != ':') return bad("text after ']'");
            port = rest.substr(1);
            has_port = true;
        }
    } else if (std::count(text.begin(), text.end(), ':') == 1) {
        size_t colon = text.find(':');
        host = text.substr(0, colon);
        port = text.substr(colon + 1);
        has_port = true;
    }
    // More than one ':' without brackets: a bare IPv6 address, no port.
    if (host.empty()) return bad("no host");
    if (host.find_first_of(" \t,/[]") != std::string_view::npos) return bad("not a host name");
    if (has_port) {
        uint16_t p = 0;
        if (!parse_port(port, p)) return bad("port must be 1..65535");
        src.port = p;
    }
    src.host = std::string(host);
    return src;
}

Result<MountOptions> parse_mount_options(std::string_view options) {
    MountOptions out;
    for (std::string_view item : split_commas(options)) {
        std::string_view name = item.substr(0, item.find('='));
        if (const FlagOption* f = std::find_if(std::begin(kFlagOptions), std::end(kFlagOptions),
                                               [&](const FlagOption& o) { return item == o.name; });
            f != std::end(kFlagOptions)) {
            out.flags = (out.flags & ~f->clear) | f->set;
        } else if (name == "config") {
            if (item.size() <= 7) return usage_error("config= needs a path");
            out.config_path = std::string(item.substr(7));
        } else if (contains(kUserSpaceOptions, item) ||
                   std::any_of(std::begin(kUserSpacePrefixes), std::end(kUserSpacePrefixes),
                               [&](const char* p) { return item.starts_with(p); })) {
            out.dropped.emplace_back(item);
        } else if (contains(kUnsupported, name)) {
            return usage_error("option '" + std::string(item) +
                               "' is not supported by mount.pfs (mount(8) handles it itself)");
        } else {
            KernelOption o{std::string(name), std::nullopt};
            if (name.size() < item.size()) o.value = std::string(item.substr(name.size() + 1));
            out.kernel.push_back(std::move(o));
        }
    }
    return out;
}

ConfigChoice choose_config(const MountOptions& options, const char* env_value) {
    if (options.config_path) return {*options.config_path, true};
    if (env_value && *env_value) return {env_value, true};
    return {kDefaultClientConf, false};
}

Result<std::string> resolve_host(const std::string& host) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* list = nullptr;
    int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &list);
    if (rc != 0) {
        const char* why = rc == EAI_SYSTEM ? std::strerror(errno) : ::gai_strerror(rc);
        return Error{-EHOSTUNREACH, "cannot resolve '" + host + "': " + why};
    }
    const addrinfo* v4 = nullptr;
    const addrinfo* v6 = nullptr;
    for (const addrinfo* ai = list; ai; ai = ai->ai_next) {
        if (ai->ai_family == AF_INET && !v4) v4 = ai;
        if (ai->ai_family == AF_INET6 && !v6) v6 = ai;
    }
    const addrinfo* pick = v4 ? v4 : v6;
    char text[INET6_ADDRSTRLEN] = {};
    const char* ok = nullptr;
    if (pick && pick->ai_family == AF_INET) {
        ok = ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(pick->ai_addr)->sin_addr,
                         text, sizeof text);
    } else if (pick) {
        ok = ::inet_ntop(AF_INET6,
                         &reinterpret_cast<const sockaddr_in6*>(pick->ai_addr)->sin6_addr, text,
                         sizeof text);
    }
    ::freeaddrinfo(list);
    if (!ok) return Error{-EHOSTUNREACH, "'" + host + "' has no IPv4 or IPv6 address"};
    return std::string(text);
}

Result<MountCall> plan_mount(const Invocation& inv, const MountOptions& options,
                             const ClientConfig& config, const Resolver& resolve) {
    MountCall call;
    call.target = inv.target;
    call.flags = options.flags;
    if (options.flags & MS_REMOUNT) {
        call.source = inv.source;
        call.data = join(options.kernel);
        return call;
    }

    auto src = parse_source(inv.source);
    if (!src) return src.error();
    if (src->from_config) {
        if (!config.mgmtd_host) {
            return usage_error("source '" + inv.source + "' takes mgmtd-host from " +
                               (config.path.empty() ? std::string(kDefaultClientConf) + " (absent)"
                                                    : config.path) +
                               ", which does not set it");
        }
        call.mgmtd_host = *config.mgmtd_host;
    } else {
        call.mgmtd_host = src->host;
    }
    call.mgmtd_port = src->port.value_or(config.mgmtd_port);

    auto addr = resolve(call.mgmtd_host);
    if (!addr) return addr.error();
    const std::string port = std::to_string(call.mgmtd_port);
    call.source = addr->find(':') == std::string::npos ? *addr + ":" + port
                                                       : "[" + *addr + "]:" + port;

    std::vector<KernelOption> merged{{"secret_file", config.auth_file}};
    for (const KernelOption& o : config.kernel_options) set_option(merged, o);
    for (const KernelOption& o : options.kernel) set_option(merged, o);
    call.auth_file = config.auth_file;
    for (const KernelOption& o : merged) {
        if (o.name == "secret_file" && o.value) call.auth_file = *o.value;
    }
    call.data = join(merged);
    // mount(2) copies at most one page of option data.
    if (call.data.size() >= 4096) return usage_error("mount options longer than 4095 bytes");
    return call;
}

std::string format_flags(unsigned long flags) {
    static constexpr std::pair<unsigned long, const char*> kNames[] = {
        {MS_RDONLY, "MS_RDONLY"},       {MS_NOSUID, "MS_NOSUID"},
        {MS_NODEV, "MS_NODEV"},         {MS_NOEXEC, "MS_NOEXEC"},
        {MS_SYNCHRONOUS, "MS_SYNCHRONOUS"}, {MS_REMOUNT, "MS_REMOUNT"},
        {MS_DIRSYNC, "MS_DIRSYNC"},     {MS_NOATIME, "MS_NOATIME"},
        {MS_NODIRATIME, "MS_NODIRATIME"}, {MS_SILENT, "MS_SILENT"},
        {MS_RELATIME, "MS_RELATIME"},   {MS_I_VERSION, "MS_I_VERSION"},
        {MS_STRICTATIME, "MS_STRICTATIME"}, {MS_LAZYTIME, "MS_LAZYTIME"},
    };
    std::string out;
    for (const auto& [bit, name] : kNames) {
        if (!(flags & bit)) continue;
        if (!out.empty()) out += '|';
        out += name;
        flags &= ~bit;
    }
    if (flags) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%s0x%lx", out.empty() ? "" : "|", flags);
        out += buf;
    }
    return out.empty() ? "0" : out;
}

std::string format_mount_call(const MountCall& call) {
    return "mount(" + quote(call.source) + ", " + quote(call.target) + ", " + quote(call.fstype) +
           ", " + format_flags(call.flags) + ", " + quote(call.data) + ")";
}

Failure explain_mount_error(int err, const MountCall& call) {
    const std::string why = std::strerror(err);
    switch (err) {
    case ENODEV:
        return {"the pfs kernel module is not loaded: modprobe pfs"};
    case EACCES:
        return {"authentication failed: check that auth-file " + call.auth_file +
                " matches the servers' secret and is mode 0600 (see dmesg)"};
    case ECONNREFUSED:
    case ETIMEDOUT:
    case EHOSTUNREACH:
    case ENETUNREACH:
    case EHOSTDOWN:
    case ENETDOWN:
    case ECONNRESET:
        return {"cannot reach pfs-mgmtd at " + call.source + " (" + call.mgmtd_host + " port " +
                std::to_string(call.mgmtd_port) + "): " + why};
    case EINVAL:
        return {"bad mount option or source (see dmesg for the kernel's reason): " +
                format_mount_call(call)};
    case EPERM:
        return {"permission denied: only root can mount a pfs file system", kExitUsage};
    case ENOENT:
        return {"mount point " + call.target + " does not exist"};
    case ENOTDIR:
        return {"mount point " + call.target + " is not a directory"};
    case EBUSY:
        return {call.target + " is busy or already mounted"};
    default:
        return {"mount(2) failed: " + why + " (see dmesg)"};
    }
}

}  // namespace pfs::mount
