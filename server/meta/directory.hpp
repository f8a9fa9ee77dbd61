// The entries of one directory, indexed twice: by name for lookups (hash,
// O(1)) and by cookie for readdir (ordered, O(log n) to resume).
//
// A cookie is the entry's insertion sequence number in its directory. It
// never changes while the entry exists and is never reused, so a readdir
// resumed after a cookie neither skips nor repeats entries that survived in
// between, whatever was inserted or removed meanwhile.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>

extern "C" {
#include "pfs_proto.h"
}

namespace pfs::meta {

class Directory {
public:
    // Cookies 1 and 2 belong to "." and "..".
    static constexpr uint64_t kFirstCookie = 3;

    struct Slot {
        pfs_entry_id id{};
        uint8_t type = 0;  // DT_*
        uint64_t cookie = 0;
    };

    Directory() = default;
    // The cookie index points into the name index's nodes: never copied or
    // moved (owners hold directories by pointer).
    Directory(const Directory&) = delete;
    Directory& operator=(const Directory&) = delete;

    const Slot* find(std::string_view name) const;
    // The name must be absent. Returns the new entry's cookie.
    uint64_t insert(std::string_view name, const pfs_entry_id& id, uint8_t type);
    // Restores an entry with its recorded cookie: false when the name or the
    // cookie is taken, or the cookie is outside [kFirstCookie, next_cookie()).
    bool insert_at(std::string_view name, const pfs_entry_id& id, uint8_t type, uint64_t cookie);
    // Points an existing name at another inode in place: the entry keeps
    // its cookie, so a reader that has passed it does not see it again.
    void repoint(std::string_view name, const pfs_entry_id& id, uint8_t type);
    void erase(std::string_view name);

    size_t size() const { return by_name_.size(); }
    bool empty() const { return by_name_.empty(); }
    uint64_t next_cookie() const { return next_cookie_; }
    // Restore only: must not go below any cookie handed out.
    bool set_next_cookie(uint64_t next);

    // Calls f(name, slot) for the entries with a cookie above `after`, in
    // cookie order, while f returns true.
    template <class F>
    void for_each_after(uint64_t after, F&& f) const {
        for (auto it = by_cookie_.upper_bound(after); it != by_cookie_.end(); ++it)
            if (!f(std::string_view(it->second->first), it->second->second)) return;
    }

private:
    struct NameHash {
        using is_transparent = void;
        size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
    };
    using ByName = std::unordered_map<std::string, Slot, NameHash, std::equal_to<>>;

    ByName by_name_;
    std::map<uint64_t, const ByName::value_type*> by_cookie_;
    uint64_t next_cookie_ = kFirstCookie;
};

}  // namespace pfs::meta
