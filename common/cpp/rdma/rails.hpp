// Rails: the local interfaces a client's RDMA traffic leaves by (Lustre's
// LNet multi-rail, BeeGFS's connRDMAInterfacesFile). Each rail knows its
// IPv4 subnet (a server address on it is reached through it), the NUMA
// node of its device, whether its interface is up, and what went through
// it. The choice of a rail per request is libpfs's (node_paths.hpp); the
// kernel client has the same rules in kmod/net/node.c.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "result.hpp"

namespace pfs::rdma {

// What went through one interface, in this process (pfs-ctl
// --transport-stats): counted per interface name, whichever Rails used it.
struct RailCounters {
    std::atomic<uint64_t> requests{0};
    std::atomic<uint64_t> bytes{0};   // bulk bytes either way
    std::atomic<uint64_t> errors{0};  // failed connects, lost connections, timeouts
    std::atomic<uint64_t> bulk_in_flight{0};
    std::atomic<uint32_t> requests_in_flight{0};
    std::atomic<bool> down{false};  // the last connection through it failed
};
RailCounters& rail_counters(const std::string& name);
// {"NAME": {"state": "up"|"down", "requests": N, "bytes": N, "errors": N}, ...}
std::string rail_counters_json();

struct Rail {
    std::string name;     // the netdev
    std::string address;  // its IPv4 address, dotted
    uint32_t addr = 0;    // host order
    uint32_t mask = 0;
    int numa = -1;        // its device's NUMA node; -1: unknown
    RailCounters* counters = nullptr;

    bool on_subnet(uint32_t ipv4) const { return (ipv4 & mask) == (addr & mask); }
};

class Rails {
public:
    // The named interfaces; an interface that does not exist or has no
    // IPv4 address is an error. No names: no rails (routing chooses).
    static Result<std::shared_ptr<Rails>> open(const std::vector<std::string>& names);
    // "ib0,ib1", "ib0, ib1" or "ib0:ib1" (as rails= and rdma-interfaces write it).
    static Result<std::shared_ptr<Rails>> parse(std::string_view text);

    const std::vector<Rail>& list() const { return rails_; }
    size_t size() const { return rails_.size(); }
    bool empty() const { return rails_.empty(); }
    const Rail& operator[](size_t i) const { return rails_[i]; }
    // The rail whose subnet holds a server's IPv4 address.
    std::optional<size_t> rail_to(const std::string& server_address) const;
    // Rail i's subnet holds the server's IPv4 address.
    bool reaches(size_t i, const std::string& server_address) const;
    // Its interface is up and running; looked at no more than every 50 ms.
    bool usable(size_t i) const;
    // The rail is near the CPU that asks (same NUMA node, or either unknown).
    bool near(size_t i) const;

private:
    std::vector<Rail> rails_;
    struct Look {
        std::chrono::steady_clock::time_point at{};
        bool up = false;
    };
    mutable std::vector<Look> looks_;
};

// The NUMA node of the CPU this thread runs on; -1: unknown.
int current_numa_node();

// Every interface's first IPv4 address, by netdev name.
struct Ipv4Interface {
    std::string address;  // dotted
    uint32_t addr = 0;    // host order
    uint32_t mask = 0;
};
Result<std::map<std::string, Ipv4Interface>> ipv4_interfaces();

}  // namespace pfs::rdma
