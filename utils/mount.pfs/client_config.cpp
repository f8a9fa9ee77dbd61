#include "client_config.hpp"

#include "pfs_proto.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <limits>

#include <fcntl.h>
#include <unistd.h>

namespace pfs::mount {
namespace {

enum class Kind { host, port, path, u32, cache, transport, interfaces };

struct Key {
    const char* name;    // in client.conf
    Kind kind;
    const char* kernel;  // the kernel option it becomes, or nullptr
};

constexpr Key kKeys[] = {
    {"mgmtd-host", Kind::host, nullptr},
    {"mgmtd-port", Kind::port, nullptr},
    {"auth-file", Kind::path, nullptr},
    {"timeout-ms", Kind::u32, "timeout"},
    {"connect-timeout-ms", Kind::u32, "connect_timeout"},
    {"attr-ttl-ms", Kind::u32, "attr_ttl"},
    {"conns-per-server", Kind::u32, "conns"},
    {"cache", Kind::cache, "cache"},
    {"transport", Kind::transport, "transport"},
    {"rdma-interfaces", Kind::interfaces, "rails"},
};

std::string_view trim(std::string_view s) {
    const char* ws = " \t\r\v\f";
    size_t b = s.find_first_not_of(ws);
    if (b == std::string_view::npos) return {};
    return s.substr(b, s.find_last_not_of(ws) - b + 1);
}

// As the kernel takes them (kmod/net/net.h): up to 8 rails, IFNAMSIZ names.
constexpr size_t kMaxRails = 8;
constexpr size_t kMaxInterfaceName = 15;

// "ib0, ib1" (the daemons' rdma-interfaces syntax) as rails= wants it:
// "ib0:ib1"; or why not.
std::string interfaces_to_rails(std::string_view value, std::string& rails) {
    size_t count = 0;
    while (true) {
        size_t comma = value.find(',');
        std::string_view name = trim(value.substr(0, comma));
        if (name.empty()) return "an empty interface name in '" + std::string(value) + "'";
        if (name.size() > kMaxInterfaceName ||
            name.find_first_of(":/ \t") != std::string_view::npos) {
            return "'" + std::string(name) + "' is not an interface name";
        }
        if (++count > kMaxRails) return "at most " + std::to_string(kMaxRails) + " interfaces";
        rails += (rails.empty() ? "" : ":") + std::string(name);
        if (comma == std::string_view::npos) return {};
        value = value.substr(comma + 1);
    }
}

size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<size_t> row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= b.size(); ++j) {
            size_t up = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] != b[j - 1])});
            diag = up;
        }
    }
    return row[b.size()];
}

std::string unknown_key_message(std::string_view key) {
    std::string msg = "unknown key '" + std::string(key) + "'";
    const Key* best = nullptr;
    size_t best_distance = 3;  // beyond two edits a guess misleads more than it helps
    for (const Key& k : kKeys) {
        size_t d = edit_distance(key, k.name);
        if (d < best_distance) {
            best_distance = d;
            best = &k;
        }
    }
    if (best) return msg + " (did you mean '" + best->name + "'?)";
    msg += " (known keys:";
    for (const Key& k : kKeys) msg += std::string(" ") + k.name;
    return msg + ")";
}

bool parse_u32(std::string_view text, uint32_t& out) {
    if (text.empty()) return false;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
    return ec == std::errc() && end == text.data() + text.size();
}

// Checks one value and stores it; returns what is wrong with it, or "".
std::string apply(const Key& key, std::string_view value, ClientConfig& config) {
    switch (key.kind) {
    case Kind::host: {
        std::string_view host = value;
        if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
            host = host.substr(1, host.size() - 2);
        }
        if (host.empty() || host.find_first_of(" \t,[]/") != std::string_view::npos) {
            return "'" + std::string(value) + "' is not a host name or address";
        }
        if (std::count(host.begin(), host.end(), ':') == 1) {
            return "takes a host without port ('" + std::string(value) +
                   "'): put the port into mgmtd-port";
        }
        config.mgmtd_host = std::string(host);
        return {};
    }
    case Kind::port: {
        uint32_t port = 0;
        if (!parse_u32(value, port) || port == 0 || port > 65535) {
            return "'" + std::string(value) + "' is not a port number (1..65535)";
        }
        config.mgmtd_port = static_cast<uint16_t>(port);
        return {};
    }
    case Kind::path:
        // The kernel opens the file itself (absolute paths only) and the
        // mount data is comma-separated.
        if (value.empty() || value.front() != '/') return "must be an absolute path";
        if (value.find(',') != std::string_view::npos) return "must not contain ','";
        config.auth_file = std::string(value);
        return {};
    case Kind::u32: {
        uint32_t n = 0;
        if (!parse_u32(value, n)) {
            return "'" + std::string(value) + "' is not a non-negative integer";
        }
        config.kernel_options.push_back({key.kernel, std::to_string(n)});
        return {};
    }
    case Kind::cache:
        if (value != "buffered" && value != "none") {
            return "'" + std::string(value) + "' is neither 'buffered' nor 'none'";
        }
        config.kernel_options.push_back({key.kernel, std::string(value)});
        return {};
    case Kind::transport:
        if (value != "auto" && value != "tcp" && value != "rdma") {
            return "'" + std::string(value) + "' is not 'auto', 'tcp' or 'rdma'";
        }
        config.kernel_options.push_back({key.kernel, std::string(value)});
        return {};
    case Kind::interfaces: {
        std::string rails;
        if (std::string why = interfaces_to_rails(value, rails); !why.empty()) return why;
        config.kernel_options.push_back({key.kernel, rails});
        return {};
    }
    }
    return "unhandled key";
}

}  // namespace

ClientConfig::ClientConfig() : mgmtd_port(PFS_DEFAULT_MGMTD_PORT) {}

Result<ClientConfig> parse_client_config(std::string_view text, const std::string& path) {
    ClientConfig config;
    config.path = path;
    int first_line[std::size(kKeys)] = {};
    int line_no = 0;
    auto fail = [&](const std::string& what) {
        return Error{-EINVAL, path + ":" + std::to_string(line_no) + ": " + what};
    };
    while (!text.empty()) {
        ++line_no;
        size_t nl = text.find('\n');
        std::string_view line = text.substr(0, nl);
        text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);

        if (size_t hash = line.find('#'); hash != std::string_view::npos) {
            line = line.substr(0, hash);
        }
        line = trim(line);
        if (line.empty()) continue;
        if (line.front() == '[') return fail("sections are not used in this file");
        size_t eq = line.find('=');
        if (eq == std::string_view::npos) {
            return fail("expected 'key = value', got '" + std::string(line) + "'");
        }
        std::string_view key = trim(line.substr(0, eq));
        std::string_view value = trim(line.substr(eq + 1));
        if (key.empty()) return fail("missing key before '='");

        size_t index = 0;
        while (index < std::size(kKeys) && key != kKeys[index].name) ++index;
        if (index == std::size(kKeys)) return fail(unknown_key_message(key));
        if (first_line[index] != 0) {
            return fail(std::string(kKeys[index].name) + " is set twice (first on line " +
                        std::to_string(first_line[index]) + ")");
        }
        first_line[index] = line_no;
        if (std::string what = apply(kKeys[index], value, config); !what.empty()) {
            return fail(std::string(kKeys[index].name) + ": " + what);
        }
    }
    return config;
}

Result<ClientConfig> load_client_config(const std::string& path, bool must_exist) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        int err = errno;
        if (err == ENOENT && !must_exist) return ClientConfig{};
        return Error{-err, "cannot read " + path + ": " + std::strerror(err)};
    }
    std::string text;
    char buf[4096];
    // A config file is a few hundred bytes; anything huge is a mistake
    // (a device, a log file named by accident).
    constexpr size_t kMaxSize = 1 << 20;
    for (;;) {
        ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            int err = errno;
            ::close(fd);
            return Error{-err, "cannot read " + path + ": " + std::strerror(err)};
        }
        if (n == 0) break;
        text.append(buf, static_cast<size_t>(n));
        if (text.size() > kMaxSize) {
            ::close(fd);
            return Error{-EFBIG, path + ": larger than 1 MiB, not a config file"};
        }
    }
    ::close(fd);
    return parse_client_config(text, path);
}

}  // namespace pfs::mount
