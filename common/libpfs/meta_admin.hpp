// Questions to the metadata servers about directories that live on one
// server while their entries live on another (fsck and the tests ask them).
#pragma once

#include <span>
#include <vector>

#include "cluster.hpp"

namespace pfs::client {

// Every detached directory of one metadata server, with its parent and
// state (LIST_DETACHED, page by page).
awaitable<Result<std::vector<pfs_detached_dir>>> list_detached(Cluster& cluster, uint32_t meta_node);

// Whether an entry on `owner` durably names each directory (ENTRY_CHECK,
// PFS_ENTRY_CHECK_MAX at a time): enum pfs_entry_state per id, in order.
awaitable<Result<std::vector<uint8_t>>> entry_states(Cluster& cluster, uint32_t owner,
                                                     std::span<const pfs_entry_id> dirs);

}  // namespace pfs::client
