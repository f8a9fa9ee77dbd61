#include "chunk_store.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstring>

namespace pfs {
namespace {

constexpr const char* kChunksDir = "chunks";

// splitmix64's finaliser: a fixed function, because the fan-out directory of
// every chunk ever written depends on it (std::hash may change).
uint64_t mix64(uint64_t x) {
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

uint64_t entry_hash(const pfs_entry_id& id) {
    return mix64(id.ino ^ mix64((static_cast<uint64_t>(id.owner_node) << 32) | id.generation));
}

std::string fanout_dir(const pfs_entry_id& id) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%s/%02x", kChunksDir, static_cast<unsigned>(entry_hash(id) >> 56));
    return buf;
}

bool is_enoent(const Error& e) { return e.code == -ENOENT; }

}  // namespace

size_t EntryIdHash::operator()(const pfs_entry_id& id) const { return entry_hash(id); }

// ---- OpenFileCache -----------------------------------------------------------

OpenFileCache::File OpenFileCache::get(const pfs_entry_id& id) {
    auto it = index_.find(id);
    if (it == index_.end()) return nullptr;
    lru_.splice(lru_.begin(), lru_, it->second);
    return it->second->second;
}

void OpenFileCache::put(const pfs_entry_id& id, File file) {
    if (capacity_ == 0) return;
    if (auto it = index_.find(id); it != index_.end()) {
        it->second->second = std::move(file);
        lru_.splice(lru_.begin(), lru_, it->second);
        return;
    }
    if (index_.size() >= capacity_) {
        index_.erase(lru_.back().first);
        lru_.pop_back();
    }
    lru_.emplace_front(id, std::move(file));
    index_.emplace(id, lru_.begin());
}

void OpenFileCache::erase(const pfs_entry_id& id) {
    auto it = index_.find(id);
    if (it == index_.end()) return;
    lru_.erase(it->second);
    index_.erase(it);
}

// ---- ChunkStore --------------------------------------------------------------

Result<std::unique_ptr<ChunkStore>> ChunkStore::open(Uring& ring, const std::filesystem::path& target_dir,
                                                     ChunkStoreOptions options) {
    // Start-up work, done with plain system calls before the loop runs.
    UniqueFd dir(::open(target_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!dir.valid())
        return Error{-errno, "cannot open storage target " + target_dir.string() + ": " + errno_text(-errno)};
    if (::mkdirat(dir.get(), kChunksDir, 0700) != 0 && errno != EEXIST)
        return Error{-errno,
                     "cannot create " + (target_dir / kChunksDir).string() + ": " + errno_text(-errno)};
    return std::unique_ptr<ChunkStore>(new ChunkStore(ring, target_dir, std::move(dir), options));
}

ChunkStore::ChunkStore(Uring& ring, std::filesystem::path dir_path, UniqueFd dir, ChunkStoreOptions options)
    : ring_(ring),
      dir_path_(std::move(dir_path)),
      dir_(std::move(dir)),
      options_(options),
      cache_(options.max_open_files) {}

std::string ChunkStore::chunk_path(const pfs_entry_id& id) {
    char name[64];
    std::snprintf(name, sizeof name, "/%llx-%x-%x", static_cast<unsigned long long>(id.ino), id.owner_node,
                  id.generation);
    return fanout_dir(id) + name;
}

Error ChunkStore::in_context(const pfs_entry_id& id, const Error& e) const {
    return Error{e.code, (dir_path_ / chunk_path(id)).string() + ": " + e.message};
}

void ChunkStore::forget(const pfs_entry_id& id) {
    cache_.erase(id);
    ++unlink_epoch_;
}

awaitable<Result<OpenFileCache::File>> ChunkStore::file(const pfs_entry_id& id, bool create) {
    if (auto cached = cache_.get(id)) co_return cached;
    const uint64_t epoch = unlink_epoch_;
    const std::string path = chunk_path(id);
    const int flags = O_RDWR | (create ? O_CREAT : 0);
    auto fd = co_await ring_.openat(dir_.get(), path, flags, 0600);
    if (!fd && create && is_enoent(fd.error())) {
        // First chunk in its fan-out directory: make it (a racing request may too).
        const std::string parent = fanout_dir(id);
        auto made = co_await ring_.mkdirat(dir_.get(), parent, 0700);
        if (!made && made.error().code != -EEXIST) co_return made.error();
        fd = co_await ring_.openat(dir_.get(), path, flags, 0600);
    }
    if (!fd) co_return fd.error();
    auto file = std::make_shared<UniqueFd>(std::move(*fd));
    if (epoch == unlink_epoch_) cache_.put(id, file);
    co_return file;
}

std::optional<BufferPool::Lease> ChunkStore::lease_for(size_t length) const {
    BufferPool* pool = ring_.buffers();
    if (!options_.fixed_buffers || pool == nullptr || length == 0 || length > pool->buffer_size())
        return std::nullopt;
    return pool->try_acquire();
}

awaitable<Result<size_t>> ChunkStore::write(const pfs_entry_id& id, uint64_t offset,
                                            std::span<const uint8_t> data) {
    if (offset > static_cast<uint64_t>(LLONG_MAX) - data.size())
        co_return in_context(id, Error{-EFBIG, "write beyond the largest file offset"});
    auto file = co_await this->file(id, true);
    if (!file) co_return in_context(id, file.error());
    const int fd = (*file)->get();
    Result<size_t> done = Error{};
    if (auto lease = lease_for(data.size())) {
        if (!data.empty()) std::memcpy(lease->data(), data.data(), data.size());
        done = co_await ring_.write_fixed(fd, *lease, data.size(), offset);
    } else {
        done = co_await ring_.write(fd, data, offset);
    }
    if (!done) co_return in_context(id, done.error());
    co_return done;
}

awaitable<Result<Bytes>> ChunkStore::read(const pfs_entry_id& id, uint64_t offset, uint32_t length) {
    auto file = co_await this->file(id, false);
    if (!file) {
        if (is_enoent(file.error())) co_return Bytes{};  // never written: a hole
        co_return in_context(id, file.error());
    }
    const int fd = (*file)->get();
    Bytes out(length);
    Result<size_t> done = Error{};
    if (auto lease = lease_for(length)) {
        done = co_await ring_.read_fixed(fd, *lease, length, offset);
        if (done && *done > 0) std::memcpy(out.data(), lease->data(), *done);
    } else {
        done = co_await ring_.read(fd, out, offset);
    }
    if (!done) co_return in_context(id, done.error());
    out.resize(*done);
    co_return out;
}

awaitable<Status> ChunkStore::truncate(const pfs_entry_id& id, uint64_t size) {
    if (size > static_cast<uint64_t>(LLONG_MAX)) co_return in_context(id, Error{-EFBIG, "size too large"});
    auto file = co_await this->file(id, size > 0);
    if (!file) {
        if (size == 0 && is_enoent(file.error())) co_return ok_status();
        co_return in_context(id, file.error());
    }
    // Plain ftruncate: io_uring has no truncate before Linux 6.9. It only
    // changes metadata, so it does not block on data I/O.
    if (::ftruncate((*file)->get(), static_cast<off_t>(size)) != 0)
        co_return in_context(id, Error{-errno, "ftruncate: " + errno_text(-errno)});
    co_return ok_status();
}

awaitable<Status> ChunkStore::sync(const pfs_entry_id& id) {
    auto file = co_await this->file(id, false);
    if (!file) {
        if (is_enoent(file.error())) co_return ok_status();
        co_return in_context(id, file.error());
    }
    auto st = co_await ring_.fsync((*file)->get(), true);
    if (!st) co_return in_context(id, st.error());
    co_return ok_status();
}

awaitable<Status> ChunkStore::unlink(const pfs_entry_id& id) {
    // Forgotten before and after: an open that began before the unlink
    // completed may have found the old file.
    forget(id);
    const std::string path = chunk_path(id);
    auto st = co_await ring_.unlinkat(dir_.get(), path, 0);
    forget(id);
    if (!st && !is_enoent(st.error())) co_return in_context(id, st.error());
    co_return ok_status();
}

awaitable<Result<ChunkStat>> ChunkStore::stat(const pfs_entry_id& id) {
    const std::string path = chunk_path(id);
    struct statx stx {};
    auto st = co_await ring_.statx(dir_.get(), path, 0, STATX_SIZE | STATX_BLOCKS, &stx);
    if (!st) {
        if (is_enoent(st.error())) co_return ChunkStat{};
        co_return in_context(id, st.error());
    }
    co_return ChunkStat{stx.stx_size, stx.stx_blocks * 512};
}

}  // namespace pfs
