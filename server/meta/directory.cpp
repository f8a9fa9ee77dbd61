#include "directory.hpp"

namespace pfs::meta {

const Directory::Slot* Directory::find(std::string_view name) const {
    auto it = by_name_.find(name);
    return it == by_name_.end() ? nullptr : &it->second;
}

uint64_t Directory::insert(std::string_view name, const pfs_entry_id& id, uint8_t type) {
    uint64_t cookie = next_cookie_++;
    auto [it, added] = by_name_.emplace(std::string(name), Slot{id, type, cookie});
    (void)added;
    by_cookie_.emplace(cookie, &*it);
    return cookie;
}

bool Directory::insert_at(std::string_view name, const pfs_entry_id& id, uint8_t type, uint64_t cookie) {
    if (cookie < kFirstCookie || cookie >= next_cookie_ || by_cookie_.count(cookie) || find(name))
        return false;
    auto it = by_name_.emplace(std::string(name), Slot{id, type, cookie}).first;
    by_cookie_.emplace(cookie, &*it);
    return true;
}

void Directory::repoint(std::string_view name, const pfs_entry_id& id, uint8_t type) {
    auto it = by_name_.find(name);
    if (it == by_name_.end()) return;
    it->second.id = id;
    it->second.type = type;
}

void Directory::erase(std::string_view name) {
    auto it = by_name_.find(name);
    if (it == by_name_.end()) return;
    by_cookie_.erase(it->second.cookie);
    by_name_.erase(it);
}

bool Directory::set_next_cookie(uint64_t next) {
    if (next < kFirstCookie || (!by_cookie_.empty() && next <= by_cookie_.rbegin()->first)) return false;
    next_cookie_ = next;
    return true;
}

}  // namespace pfs::meta
