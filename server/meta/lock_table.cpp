#include "lock_table.hpp"

#include <algorithm>
#include <cstdio>
#include <string>

namespace pfs::meta {
namespace {

bool overlaps(const HeldLock& l, uint64_t start, uint64_t end) { return l.start <= end && start <= l.end; }

bool types_conflict(uint8_t a, uint8_t b) { return a == PFS_LOCK_WRITE || b == PFS_LOCK_WRITE; }

// One range directly follows the other (no byte between them).
bool adjacent(const HeldLock& a, const HeldLock& b) {
    return (a.end != PFS_LOCK_EOF && a.end + 1 == b.start) || (b.end != PFS_LOCK_EOF && b.end + 1 == a.start);
}

bool valid(const LockRequest& r) {
    return (r.kind == PFS_LOCK_FLOCK || r.kind == PFS_LOCK_POSIX) && r.type >= PFS_LOCK_READ &&
           r.type <= PFS_LOCK_UNLOCK && r.start <= r.end;
}

std::string describe(const HeldLock& l) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "%s lock held by client %016llx pid %u on bytes %llu..%s",
                  l.type == PFS_LOCK_WRITE ? "write" : "read", static_cast<unsigned long long>(l.who.client),
                  l.pid, static_cast<unsigned long long>(l.start),
                  l.end == PFS_LOCK_EOF ? "EOF" : std::to_string(l.end).c_str());
    return buf;
}

bool by_owner_then_start(const HeldLock& a, const HeldLock& b) {
    return a.who != b.who ? a.who < b.who : a.start < b.start;
}

}  // namespace

std::optional<HeldLock> LockTable::conflict(const LockRequest& req) const {
    if (req.type == PFS_LOCK_UNLOCK) return std::nullopt;
    auto it = files_.find(EntryKey::of(req.file));
    if (it == files_.end()) return std::nullopt;
    bool posix = req.kind == PFS_LOCK_POSIX;
    const auto& list = posix ? it->second.posix : it->second.flock;
    std::optional<HeldLock> first;
    for (const auto& l : list) {
        if (l.who == req.who || !types_conflict(l.type, req.type)) continue;
        if (posix && !overlaps(l, req.start, req.end)) continue;
        if (!first || l.start < first->start) first = l;
    }
    return first;
}

Status LockTable::set(const LockRequest& req) {
    if (!valid(req)) return Error{-EINVAL, "malformed lock request"};
    if (auto held = conflict(req)) return Error{-EAGAIN, describe(*held)};
    auto key = EntryKey::of(req.file);
    if (req.type == PFS_LOCK_UNLOCK && !files_.contains(key)) return ok_status();
    FileLocks& f = files_[key];
    auto st = req.kind == PFS_LOCK_FLOCK ? set_flock(f, req) : set_posix(f, req);
    drop_if_empty(key);
    return st;
}

Status LockTable::set_posix(FileLocks& f, const LockRequest& req) {
    std::vector<HeldLock> others, mine;
    for (const auto& l : f.posix) (l.who == req.who ? mine : others).push_back(l);
    // The owner's locks outside the requested range stay; the request's
    // range is then wholly the new lock (or nothing, for an unlock).
    std::vector<HeldLock> out;
    for (const auto& l : mine) {
        if (!overlaps(l, req.start, req.end)) {
            out.push_back(l);
            continue;
        }
        if (l.start < req.start) {
            HeldLock left = l;
            left.end = req.start - 1;
            out.push_back(left);
        }
        if (l.end > req.end) {
            HeldLock right = l;
            right.start = req.end + 1;
            out.push_back(right);
        }
    }
    if (req.type != PFS_LOCK_UNLOCK) {
        HeldLock added{req.who, req.type, req.start, req.end, req.pid};
        std::vector<HeldLock> kept;
        for (const auto& l : out) {
            if (l.type == added.type && adjacent(l, added)) {
                added.start = std::min(added.start, l.start);
                added.end = std::max(added.end, l.end);
            } else {
                kept.push_back(l);
            }
        }
        kept.push_back(added);
        out = std::move(kept);
    }
    auto delta = static_cast<int64_t>(out.size()) - static_cast<int64_t>(mine.size());
    if (delta > 0) {
        if (auto st = room_for(req.who.client, static_cast<size_t>(delta)); !st) return st;
    }
    others.insert(others.end(), out.begin(), out.end());
    std::sort(others.begin(), others.end(), by_owner_then_start);
    f.posix = std::move(others);
    account(req.who.client, EntryKey::of(req.file), delta);
    return ok_status();
}

Status LockTable::set_flock(FileLocks& f, const LockRequest& req) {
    auto it = std::find_if(f.flock.begin(), f.flock.end(), [&](const HeldLock& l) { return l.who == req.who; });
    auto key = EntryKey::of(req.file);
    if (req.type == PFS_LOCK_UNLOCK) {
        if (it != f.flock.end()) {
            f.flock.erase(it);
            account(req.who.client, key, -1);
        }
        return ok_status();
    }
    if (it != f.flock.end()) {  // conversion: atomic here, unlike Linux
        it->type = req.type;
        it->pid = req.pid;
        return ok_status();
    }
    if (auto st = room_for(req.who.client, 1); !st) return st;
    f.flock.push_back(HeldLock{req.who, req.type, 0, PFS_LOCK_EOF, req.pid});
    std::sort(f.flock.begin(), f.flock.end(), by_owner_then_start);
    account(req.who.client, key, +1);
    return ok_status();
}

size_t LockTable::release_client(uint64_t client) {
    auto it = client_files_.find(client);
    if (it == client_files_.end()) return 0;
    size_t released = count(client);
    total_ -= released;
    auto mine = [client](const HeldLock& l) { return l.who.client == client; };
    for (const auto& [key, n] : it->second) {
        auto f = files_.find(key);
        if (f == files_.end()) continue;
        std::erase_if(f->second.posix, mine);
        std::erase_if(f->second.flock, mine);
        drop_if_empty(key);
    }
    client_files_.erase(it);
    per_client_.erase(client);
    return released;
}

void LockTable::release_file(const pfs_entry_id& file) {
    auto key = EntryKey::of(file);
    auto it = files_.find(key);
    if (it == files_.end()) return;
    for (const auto* list : {&it->second.posix, &it->second.flock})
        for (const auto& l : *list) account(l.who.client, key, -1);
    files_.erase(it);
}

std::vector<HeldLock> LockTable::held(const pfs_entry_id& file, uint8_t kind) const {
    auto it = files_.find(EntryKey::of(file));
    if (it == files_.end()) return {};
    return kind == PFS_LOCK_FLOCK ? it->second.flock : it->second.posix;
}

size_t LockTable::count(uint64_t client) const {
    auto it = per_client_.find(client);
    return it == per_client_.end() ? 0 : it->second;
}

size_t LockTable::total() const { return total_; }

Status LockTable::room_for(uint64_t client, size_t more) const {
    if (count(client) + more > max_per_client_) return Error{-ENOLCK, "client holds too many locks"};
    if (total_ + more > max_total_) return Error{-ENOLCK, "lock table full"};
    return ok_status();
}

void LockTable::account(uint64_t client, const EntryKey& key, int64_t delta) {
    if (delta == 0) return;
    total_ = static_cast<size_t>(static_cast<int64_t>(total_) + delta);
    auto& total = per_client_[client];
    total = static_cast<size_t>(static_cast<int64_t>(total) + delta);
    auto& files = client_files_[client];
    auto& on_file = files[key];
    on_file = static_cast<size_t>(static_cast<int64_t>(on_file) + delta);
    if (on_file == 0) files.erase(key);
    if (total == 0) {
        per_client_.erase(client);
        client_files_.erase(client);
    }
}

void LockTable::drop_if_empty(const EntryKey& key) {
    auto it = files_.find(key);
    if (it != files_.end() && it->second.posix.empty() && it->second.flock.empty()) files_.erase(it);
}

}  // namespace pfs::meta
