// Picks the metadata server of a new directory: ONLINE servers whose disk
// has normal free space first (then low, then emergency), in turn, so
// directories, and with them their entries and files, spread over all
// metadata servers. "local" keeps every directory with its parent's owner.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "result.hpp"

extern "C" {
#include "pfs_proto.h"
}

namespace pfs::meta {

class DirPlacement {
public:
    enum class Policy { spread, local };
    static Result<Policy> parse(std::string_view name);

    explicit DirPlacement(Policy policy = Policy::spread) : policy_(policy) {}

    // The server for a directory made by `self`, among the metadata
    // servers of the latest map (sorted by node id, as Cluster keeps
    // them); `self` when none is ONLINE.
    uint32_t choose(uint32_t self, std::span<const pfs_node_info> meta_nodes);
    // A named server must be a registered metadata server.
    static Status check(uint32_t node, std::span<const pfs_node_info> meta_nodes);

private:
    Policy policy_;
    uint64_t next_ = 0;  // rotation
};

}  // namespace pfs::meta
