// File contents over the storage servers: a byte range of a striped file
// becomes one chunk request per piece, all in flight at once.
#pragma once

#include <span>

#include "cluster.hpp"
#include "stripe_plan.hpp"

namespace pfs::client {

class StripedIo {
public:
    explicit StripedIo(Cluster& cluster) : cluster_(cluster) {}

    awaitable<Status> write(const StripeLayout& layout, const pfs_entry_id& file, uint64_t offset,
                            std::span<const uint8_t> data);
    // Fills out completely: holes and bytes past a chunk file's end read as
    // zeros (the caller knows the file size and clamps).
    awaitable<Status> read(const StripeLayout& layout, const pfs_entry_id& file, uint64_t offset,
                           std::span<uint8_t> out);
    // Sets every chunk file to its share of file_size.
    awaitable<Status> truncate(const StripeLayout& layout, const pfs_entry_id& file, uint64_t file_size);
    awaitable<Status> sync(const StripeLayout& layout, const pfs_entry_id& file);
    awaitable<Status> unlink(const StripeLayout& layout, const pfs_entry_id& file);

private:
    // The same request to every target of the layout.
    awaitable<Status> each_target(const StripeLayout& layout, uint16_t type,
                                  std::function<Result<Bytes>(uint32_t index, uint32_t target)> payload);

    Cluster& cluster_;
};

}  // namespace pfs::client
