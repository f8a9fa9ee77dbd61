// Which clients were answered about which entries, so that a change one
// client makes is pushed to the others that may cache the entry
// (PFS_MSG_INVALIDATE), as AFS callbacks and NFSv4 delegations do. A client
// hears of an entry once per answer; after the notice it must ask again to
// be told of the next change. A client that changes an entry watches it
// from then on: its answer is the entry's newest state. Clients trust names
// well beyond their attribute TTL on the strength of these watches, so
// forgetting them is never silent: every time the table forgets everything
// (resets()), the Service tells every client (PFS_MSG_INVALIDATE_ALL).
// Pure logic: the Service sends the notices.
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
    // the table is full it forgets everything first (resets() counts it).
    void watch(uint64_t client, const pfs_entry_id& id);
    // id changed on behalf of `by` (0: no client): the other clients that
    // watched it, each once; their watches of id end, `by` watches it.
    std::vector<uint64_t> changed(const pfs_entry_id& id, uint64_t by);
    // id is gone for good: nobody watches it any more.
    void forget(const pfs_entry_id& id);

    size_t size() const { return watches_; }
    // Whether n more watches leave the table at most half full: a listing
    // with attributes (READDIR_PLUS) adds one per entry and must not make
    // the table forget everything, every client's watches included.
    bool has_room(size_t n) const { return watches_ + n <= max_watches_ / 2; }
    // How many times the table was full and forgot every watch.
    uint64_t resets() const { return resets_; }

private:
    std::map<EntryKey, std::vector<uint64_t>> by_entry_;
    size_t watches_ = 0;
    size_t max_watches_;
    uint64_t resets_ = 0;
};

}  // namespace pfs::meta
