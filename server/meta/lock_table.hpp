// Advisory locks held by clients, cluster-wide: flock (whole file) and POSIX
// byte ranges, with the semantics Linux gives processes on one host, where
// a lock owner is (client id, owner id). Pure logic: no I/O, no clock.
//
// The two kinds are independent (an flock never conflicts with a POSIX
// lock). Locks of one owner never conflict with each other; a POSIX request
// rewrites the owner's locks in its range (merge with adjacent locks of the
// same type, split around an unlock or a different type), an flock request
// converts the owner's flock. Requests never wait: a conflict is -EAGAIN
// and the caller retries (see pfs_proto.h).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <vector>

#include "entry_key.hpp"
#include "result.hpp"

namespace pfs::meta {

struct LockOwner {
    uint64_t client = 0;
    uint64_t owner = 0;
    auto operator<=>(const LockOwner&) const = default;
};

struct HeldLock {
    LockOwner who;
    uint8_t type = PFS_LOCK_READ;  // PFS_LOCK_READ or PFS_LOCK_WRITE
    uint64_t start = 0;
    uint64_t end = PFS_LOCK_EOF;  // inclusive
    uint32_t pid = 0;
    bool operator==(const HeldLock&) const = default;
};

struct LockRequest {
    pfs_entry_id file{};
    uint8_t kind = PFS_LOCK_POSIX;
    uint8_t type = PFS_LOCK_READ;  // or WRITE, or UNLOCK
    uint64_t start = 0;            // POSIX only: flocks cover the whole file
    uint64_t end = PFS_LOCK_EOF;
    LockOwner who;
    uint32_t pid = 0;
};

class LockTable {
public:
    // Bound what clients can make the server hold (the network reaches it).
    static constexpr size_t kDefaultMaxPerClient = 1u << 16;
    static constexpr size_t kDefaultMaxTotal = 1u << 22;
    explicit LockTable(size_t max_per_client = kDefaultMaxPerClient, size_t max_total = kDefaultMaxTotal)
        : max_per_client_(max_per_client), max_total_(max_total) {}

    // Grants, converts or releases. -EAGAIN when another owner holds a
    // conflicting lock, -ENOLCK when the client would hold more than allowed
    // or all clients more than max_total, -EINVAL for a malformed request;
    // nothing changes on error. Unlocking what is not held succeeds.
    Status set(const LockRequest& req);
    // The first lock (lowest start) of another owner that conflicts with req
    // (F_GETLK); nullopt when none or when req unlocks.
    std::optional<HeldLock> conflict(const LockRequest& req) const;

    // Everything of one client (its session ended): the number released.
    size_t release_client(uint64_t client);
    // Everything on a file (its inode is gone).
    void release_file(const pfs_entry_id& file);

    // The locks of one kind on a file, ordered by owner then start.
    std::vector<HeldLock> held(const pfs_entry_id& file, uint8_t kind) const;
    size_t count(uint64_t client) const;
    size_t total() const;

private:
    struct FileLocks {
        std::vector<HeldLock> posix;  // per owner: disjoint, same-type neighbours merged
        std::vector<HeldLock> flock;  // at most one per owner
    };

    Status set_posix(FileLocks& f, const LockRequest& req);
    Status set_flock(FileLocks& f, const LockRequest& req);
    // Keeps the per-client counts and the client -> files index in step.
    void account(uint64_t client, const EntryKey& key, int64_t delta);
    void drop_if_empty(const EntryKey& key);

    // Whether `more` locks fit the client's share and the whole table.
    Status room_for(uint64_t client, size_t more) const;

    size_t max_per_client_;
    size_t max_total_;
    size_t total_ = 0;
    std::map<EntryKey, FileLocks> files_;
    std::unordered_map<uint64_t, size_t> per_client_;
    std::unordered_map<uint64_t, std::map<EntryKey, size_t>> client_files_;
};

}  // namespace pfs::meta
