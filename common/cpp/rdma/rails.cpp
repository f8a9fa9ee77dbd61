#include "rdma/rails.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>

#include <nlohmann/json.hpp>

#include "fd.hpp"

namespace pfs::rdma {
namespace {

using namespace std::chrono_literals;

struct CounterTable {
    std::mutex lock;
    std::map<std::string, std::unique_ptr<RailCounters>> by_name;
};

CounterTable& counter_table() {
    static CounterTable table;
    return table;
}

int read_int(const std::filesystem::path& file, int fallback) {
    std::ifstream in(file);
    int value = fallback;
    if (!(in >> value)) return fallback;
    return value;
}

// "0-3,8-11" -> does it hold cpu?
bool cpulist_has(const std::string& list, int cpu) {
    size_t pos = 0;
    while (pos < list.size()) {
        size_t end = list.find(',', pos);
        if (end == std::string::npos) end = list.size();
        const std::string part = list.substr(pos, end - pos);
        int lo = 0, hi = 0;
        if (std::sscanf(part.c_str(), "%d-%d", &lo, &hi) == 2) {
            if (cpu >= lo && cpu <= hi) return true;
        } else if (std::sscanf(part.c_str(), "%d", &lo) == 1 && lo == cpu) {
            return true;
        }
        pos = end + 1;
    }
    return false;
}

// CPU -> NUMA node, read once from sysfs.
std::vector<int> cpu_nodes() {
    std::vector<int> nodes;
    std::error_code ec;
    const long cpus = ::sysconf(_SC_NPROCESSORS_CONF);
    nodes.assign(cpus > 0 ? static_cast<size_t>(cpus) : 0, -1);
    for (const auto& dir : std::filesystem::directory_iterator("/sys/devices/system/node", ec)) {
        const std::string name = dir.path().filename();
        int node = -1;
        if (std::sscanf(name.c_str(), "node%d", &node) != 1) continue;
        std::ifstream in(dir.path() / "cpulist");
        std::string list;
        if (!(in >> list)) continue;
        for (size_t cpu = 0; cpu < nodes.size(); ++cpu)
            if (cpulist_has(list, static_cast<int>(cpu))) nodes[cpu] = node;
    }
    return nodes;
}

bool interface_up(const std::string& name) {
    UniqueFd sock(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    if (!sock.valid()) return false;
    ifreq req{};
    std::strncpy(req.ifr_name, name.c_str(), IFNAMSIZ - 1);
    if (::ioctl(sock.get(), SIOCGIFFLAGS, &req) != 0) return false;
    return (req.ifr_flags & IFF_UP) && (req.ifr_flags & IFF_RUNNING);
}

uint32_t parse_ipv4(const std::string& text) {
    in_addr a{};
    if (::inet_pton(AF_INET, text.c_str(), &a) != 1) return 0;
    return ntohl(a.s_addr);
}

}  // namespace

RailCounters& rail_counters(const std::string& name) {
    auto& table = counter_table();
    std::lock_guard guard(table.lock);
    auto& slot = table.by_name[name];
    if (!slot) slot = std::make_unique<RailCounters>();
    return *slot;
}

std::string rail_counters_json() {
    auto& table = counter_table();
    std::lock_guard guard(table.lock);
    nlohmann::json j = nlohmann::json::object();
    for (const auto& [name, c] : table.by_name) {
        j[name] = {{"state", c->down.load() || !interface_up(name) ? "down" : "up"},
                   {"requests", c->requests.load()},
                   {"bytes", c->bytes.load()},
                   {"errors", c->errors.load()}};
    }
    return j.dump();
}

Result<std::map<std::string, Ipv4Interface>> ipv4_interfaces() {
    std::map<std::string, Ipv4Interface> out;
    ifaddrs* list = nullptr;
    if (::getifaddrs(&list) != 0) return Error{-errno, std::string("getifaddrs: ") + std::strerror(errno)};
    for (ifaddrs* i = list; i; i = i->ifa_next) {
        if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || out.count(i->ifa_name)) continue;
        Ipv4Interface itf;
        char buf[INET_ADDRSTRLEN];
        const in_addr a = reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr;
        ::inet_ntop(AF_INET, &a, buf, sizeof buf);
        itf.address = buf;
        itf.addr = ntohl(a.s_addr);
        if (i->ifa_netmask) itf.mask = ntohl(reinterpret_cast<sockaddr_in*>(i->ifa_netmask)->sin_addr.s_addr);
        out[i->ifa_name] = itf;
    }
    ::freeifaddrs(list);
    return out;
}

Result<std::shared_ptr<Rails>> Rails::open(const std::vector<std::string>& names) {
    auto rails = std::make_shared<Rails>();
    if (names.empty()) return rails;
    auto itfs = ipv4_interfaces();
    if (!itfs) return itfs.error();
    for (const auto& name : names) {
        if (name.empty() || name.size() >= IFNAMSIZ || ::if_nametoindex(name.c_str()) == 0)
            return Error{-ENODEV, "RDMA interface '" + name + "' does not exist"};
        auto it = itfs->find(name);
        if (it == itfs->end()) return Error{-EADDRNOTAVAIL, "RDMA interface '" + name + "' has no IPv4 address"};
        for (const auto& r : rails->rails_)
            if (r.name == name) return Error{-EINVAL, "RDMA interface '" + name + "' is named twice"};
        Rail rail;
        rail.name = name;
        rail.address = it->second.address;
        rail.addr = it->second.addr;
        rail.mask = it->second.mask;
        rail.numa = read_int("/sys/class/net/" + name + "/device/numa_node", -1);
        rail.counters = &rail_counters(name);
        rails->rails_.push_back(std::move(rail));
    }
    rails->looks_.resize(rails->rails_.size());
    return rails;
}

Result<std::shared_ptr<Rails>> Rails::parse(std::string_view text) {
    std::vector<std::string> names;
    std::string current;
    for (char c : text) {
        if (c == ',' || c == ':' || c == ' ' || c == '\t') {
            if (!current.empty()) names.push_back(std::move(current));
            current.clear();
        } else {
            current += c;
        }
    }
    if (!current.empty()) names.push_back(std::move(current));
    return open(names);
}

std::optional<size_t> Rails::rail_to(const std::string& server_address) const {
    for (size_t i = 0; i < rails_.size(); ++i)
        if (reaches(i, server_address)) return i;
    return std::nullopt;
}

bool Rails::reaches(size_t i, const std::string& server_address) const {
    const uint32_t ip = parse_ipv4(server_address);
    return ip != 0 && rails_[i].on_subnet(ip);
}

bool Rails::usable(size_t i) const {
    const auto now = std::chrono::steady_clock::now();
    Look& look = looks_[i];
    if (now - look.at >= 50ms) {
        look.up = interface_up(rails_[i].name);
        look.at = now;
    }
    return look.up;
}

bool Rails::near(size_t i) const {
    const int here = current_numa_node();
    return here < 0 || rails_[i].numa < 0 || rails_[i].numa == here;
}

int current_numa_node() {
    static const std::vector<int> nodes = cpu_nodes();
    const int cpu = ::sched_getcpu();
    if (cpu < 0 || static_cast<size_t>(cpu) >= nodes.size()) return -1;
    return nodes[static_cast<size_t>(cpu)];
}

}  // namespace pfs::rdma
