#include "callbacks.hpp"

#include <algorithm>

namespace pfs::meta {

void Callbacks::watch(uint64_t client, const pfs_entry_id& id) {
    if (!client) return;
    auto& clients = by_entry_[EntryKey::of(id)];
    if (std::find(clients.begin(), clients.end(), client) != clients.end()) return;
    if (watches_ >= max_watches_) {
        by_entry_.clear();
        watches_ = 0;
        by_entry_[EntryKey::of(id)].push_back(client);
    } else {
        clients.push_back(client);
    }
    ++watches_;
}

std::vector<uint64_t> Callbacks::changed(const pfs_entry_id& id, uint64_t by) {
    auto it = by_entry_.find(EntryKey::of(id));
    if (it == by_entry_.end()) return {};
    std::vector<uint64_t> tell;
    std::vector<uint64_t> keep;
    for (uint64_t c : it->second) (c == by ? keep : tell).push_back(c);
    watches_ -= tell.size();
    if (keep.empty())
        by_entry_.erase(it);
    else
        it->second = std::move(keep);
    return tell;
}

}  // namespace pfs::meta
