// Which clients were answered about which entries, so that a change one
// client makes is pushed to the others that may cache the entry
// (PFS_MSG_INVALIDATE), as AFS callbacks and NFSv4 delegations do, only
// advisory: clients keep their TTL as the bound on staleness. A client hears
// of an entry once per answer; after the notice it must ask again to be told
// of the next change. Pure logic: the Service sends the notices.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "entry_key.hpp"

namespace pfs::meta {

class Callbacks {
public:
    // Every authenticated peer can make the server track entries: bound it.
    static constexpr size_t kDefaultMaxWatches = 1u << 20;

    explicit Callbacks(size_t max_watches = kDefaultMaxWatches) : max_watches_(max_watches) {}

    // The client was answered about id: it hears of id's next change. When
    // the table is full it forgets everything first (clients fall back on
    // their TTL until they ask again).
    void watch(uint64_t client, const pfs_entry_id& id);
    // id changed on behalf of `by` (0: no client): the other clients that
    // watched it, each once; their watches of id end.
    std::vector<uint64_t> changed(const pfs_entry_id& id, uint64_t by);

    size_t size() const { return watches_; }

private:
    std::map<EntryKey, std::vector<uint64_t>> by_entry_;
    size_t watches_ = 0;
    size_t max_watches_;
};

}  // namespace pfs::meta
