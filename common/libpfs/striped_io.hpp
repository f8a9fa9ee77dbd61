// File contents over the storage servers: a byte range of a striped file
// becomes one chunk request per piece, all in flight at once.
#pragma once

#include <map>
#include <set>
#include <span>

#include "cluster.hpp"
#include "stripe_plan.hpp"

namespace pfs::client {

// The write verifiers (struct pfs_chunk_written) a file's writes were
// acknowledged under since its last sync, per target: a sync answering
// another one means those writes may be lost (the target crashed or lost
// power before they reached its disk), and the sync fails with EIO.
class WriteVerifiers {
public:
    void seen(uint32_t target, uint64_t verifier);
    // The target's sync answered verifier: what was written there since
    // the last sync is durable, or may be lost (-EIO). Starts over.
    Status synced(uint32_t target, uint64_t verifier);

private:
    std::map<uint32_t, uint64_t> seen_;
    std::set<uint32_t> changed_;  // written under more than one verifier
};

class StripedIo {
public:
    explicit StripedIo(Cluster& cluster) : cluster_(cluster) {}

    // verifiers: where the write verifiers the targets answer go (a sync
    // checks them).
    awaitable<Status> write(const StripeLayout& layout, const pfs_entry_id& file, uint64_t offset,
                            std::span<const uint8_t> data, WriteVerifiers* verifiers = nullptr);
    // Fills out completely: holes and bytes past a chunk file's end read as
    // zeros (the caller knows the file size and clamps).
    awaitable<Status> read(const StripeLayout& layout, const pfs_entry_id& file, uint64_t offset,
                           std::span<uint8_t> out);
    // Sets every chunk file to its share of file_size.
    awaitable<Status> truncate(const StripeLayout& layout, const pfs_entry_id& file, uint64_t file_size);
    // -EIO when a write recorded in verifiers may have been lost.
    awaitable<Status> sync(const StripeLayout& layout, const pfs_entry_id& file, WriteVerifiers* verifiers = nullptr);
    awaitable<Status> unlink(const StripeLayout& layout, const pfs_entry_id& file);
    // fallocate(2) of the file range [offset, offset + length): the same
    // mode on the part of it each chunk file holds (CHUNK_FALLOCATE).
    awaitable<Status> fallocate(const StripeLayout& layout, const pfs_entry_id& file, uint32_t mode,
                                uint64_t offset, uint64_t length);
    // The first file offset at or after offset where data (PFS_SEEK_DATA)
    // or a hole (PFS_SEEK_HOLE) begins, from every target's chunk file;
    // nullopt: no data there. The caller clamps to the file size.
    awaitable<Result<std::optional<uint64_t>>> seek(const StripeLayout& layout, const pfs_entry_id& file,
                                                    uint8_t what, uint64_t offset);
    // Bytes the chunk files take on the targets' disks (st_blocks * 512).
    awaitable<Result<uint64_t>> allocated(const StripeLayout& layout, const pfs_entry_id& file);

private:
    // The same request to every target of the layout.
    awaitable<Status> each_target(const StripeLayout& layout, const pfs_entry_id& file, uint16_t type,
                                  std::function<Result<Bytes>(uint32_t index, uint32_t target)> payload);

    Cluster& cluster_;
};

}  // namespace pfs::client
