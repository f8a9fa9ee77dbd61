// pfs.ko's counters as /proc/self/mountstats shows them: per mount, a line
// per rail ("rail NAME: state up requests N bytes N errors N"), per
// transport ("transport tcp: conns N requests N ...") and one of GPU
// transfers ("gpu nvfs: state registered requests N bytes N errors N
// copies N"). Standard library
// only, so the unit tests can compile it on its own.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace pfs::ctl {

struct MountCounters {
    std::string kind;  // "rail", "transport" or "gpu"
    std::string name;  // the interface, "tcp" / "rdma", or "nvfs"
    std::string state;  // rails: "up" or "down"; gpu: "registered" or "unregistered"
    std::map<std::string, int64_t> values;  // requests, bytes, errors, conns, ... (registered_now may dip below 0)
};

struct PfsMount {
    std::string device;  // what was mounted ("pfs", "host:8008")
    std::string mount_point;
    std::vector<MountCounters> counters;
};

// The pfs mounts in a mountstats text, each with its counters; other file
// systems are left out, malformed lines skipped.
std::vector<PfsMount> parse_mountstats(std::string_view text);

}  // namespace pfs::ctl
