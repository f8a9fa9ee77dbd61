#include "callbacks.hpp"

#include <algorithm>

namespace pfs::meta {

void Callbacks::watch(uint64_t client, const pfs_entry_id& id) {
    if (!client) return;
    auto key = EntryKey::of(id);
    auto it = by_entry_.try_emplace(key).first;  // one lookup on this hot path
    if (std::find(it->second.begin(), it->second.end(), client) != it->second.end()) return;
    if (watches_ >= max_watches_) {
        by_entry_.clear();
        watches_ = 0;
        ++resets_;
        it = by_entry_.try_emplace(key).first;
    }
    it->second.push_back(client);
    ++watches_;
}

std::vector<uint64_t> Callbacks::changed(const pfs_entry_id& id, uint64_t by) {
    std::vector<uint64_t> tell;
    if (auto it = by_entry_.find(EntryKey::of(id)); it != by_entry_.end()) {
        auto& clients = it->second;
        for (uint64_t c : clients)
            if (c != by) tell.push_back(c);
        watches_ -= clients.size();
        if (by && watches_ < max_watches_) {
            // The common case (a client changing a directory it watches):
            // the entry's node stays, with its author alone.
            clients.assign(1, by);
            ++watches_;
            return tell;
        }
        by_entry_.erase(it);
    }
    watch(by, id);
    return tell;
}

void Callbacks::forget(const pfs_entry_id& id) {
    auto it = by_entry_.find(EntryKey::of(id));
    if (it == by_entry_.end()) return;
    watches_ -= it->second.size();
    by_entry_.erase(it);
}

}  // namespace pfs::meta
