// A server's request counters as GET_STATS answers them: the head, a row per
// message type, then what it moved over RDMA. One decoder for pfs-ctl's
// `stats server` and the tests.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "result.hpp"

extern "C" {
#include "pfs_proto.h"
}

namespace pfs {

struct StatsSample {
    pfs_stats head{};
    std::vector<pfs_msg_stats> types;
    pfs_transport_stats transport{};  // what the server moved over RDMA

    // The row of message type `type`, or nullptr when none came.
    const pfs_msg_stats* type(uint16_t type) const;
    // Requests of that type so far (0 without a row).
    uint64_t requests(uint16_t type) const;
};

// GET_STATS's reply body; -PFS_E_PROTO-style failure as the codec says.
Result<StatsSample> decode_stats(std::span<const uint8_t> body);

}  // namespace pfs
