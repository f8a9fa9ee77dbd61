#include "sessions.hpp"

namespace pfs::meta {

Result<uint64_t> Sessions::touch(uint64_t client, Clock::time_point now) {
    auto it = sessions_.find(client);
    if (it == sessions_.end()) {
        if (sessions_.size() >= max_sessions_) return Error{-EUSERS, "too many client sessions"};
        it = sessions_.emplace(client, Session{}).first;
        it->second.epoch = new_epoch();
    }
    it->second.last_seen = std::max(it->second.last_seen, now);
    return it->second.epoch;
}

uint64_t Sessions::epoch(uint64_t client) const {
    auto it = sessions_.find(client);
    return it == sessions_.end() ? 0 : it->second.epoch;
}

uint64_t Sessions::new_epoch() {
    // Neither 0 (none) nor UINT64_MAX (pfs.ko's mark of an open this
    // server did not count, PFS_FLAG_UNTRACKED).
    for (;;) {
        if (uint64_t e = random_(); e != 0 && e != UINT64_MAX) return e;
    }
}

void Sessions::add_open(uint64_t client, const pfs_entry_id& file) {
    auto it = sessions_.find(client);
    if (it == sessions_.end()) return;
    ++it->second.opens[EntryKey::of(file)];
}

bool Sessions::remove_open(uint64_t client, const pfs_entry_id& file) {
    auto it = sessions_.find(client);
    if (it == sessions_.end()) return false;
    auto open = it->second.opens.find(EntryKey::of(file));
    if (open == it->second.opens.end()) return false;
    if (--open->second == 0) it->second.opens.erase(open);
    return true;
}

uint32_t Sessions::opens(uint64_t client, const pfs_entry_id& file) const {
    auto it = sessions_.find(client);
    if (it == sessions_.end()) return 0;
    auto open = it->second.opens.find(EntryKey::of(file));
    return open == it->second.opens.end() ? 0 : open->second;
}

std::vector<EndedSession> Sessions::expire(Clock::time_point now) {
    std::vector<EndedSession> out;
    for (auto it = sessions_.begin(); it != sessions_.end();) {
        if (now - it->second.last_seen > timeout_) {
            out.push_back(ended(it->first, it->second));
            it = sessions_.erase(it);
        } else {
            ++it;
        }
    }
    return out;
}

std::optional<EndedSession> Sessions::end(uint64_t client) {
    auto it = sessions_.find(client);
    if (it == sessions_.end()) return std::nullopt;
    auto out = ended(client, it->second);
    sessions_.erase(it);
    return out;
}

EndedSession Sessions::ended(uint64_t client, Session& s) {
    EndedSession out{client, {}};
    for (const auto& [key, n] : s.opens) out.opens.emplace_back(key.id(), n);
    return out;
}

}  // namespace pfs::meta
