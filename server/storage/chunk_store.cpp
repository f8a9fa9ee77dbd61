#include "chunk_store.hpp"

#include "log.hpp"
#include "worker_loops.hpp"
#include "write_verifier.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <charconv>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

namespace pfs {
namespace {

constexpr const char* kChunksDir = "chunks";
constexpr uint32_t kFanout = 256;  // fan-out directories chunks/00 .. chunks/ff

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

unsigned fanout_index(const pfs_entry_id& id) { return static_cast<unsigned>(entry_hash(id) >> 56); }

std::string fanout_dir(unsigned index) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%s/%02x", kChunksDir, index);
    return buf;
}

std::string fanout_dir(const pfs_entry_id& id) { return fanout_dir(fanout_index(id)); }

std::string chunk_name(const pfs_entry_id& id) {
    char name[64];
    std::snprintf(name, sizeof name, "%llx-%x-%x", static_cast<unsigned long long>(id.ino), id.owner_node,
                  id.generation);
    return name;
}

// The entry id a chunk file's name stands for: only the exact spelling
// chunk_name() gives counts (no leading zeros, signs, spaces or capitals).
std::optional<pfs_entry_id> parse_chunk_name(std::string_view name) {
    const std::string_view whole = name;
    uint64_t fields[3] = {};
    const uint64_t limits[3] = {UINT64_MAX, UINT32_MAX, UINT32_MAX};
    for (int i = 0; i < 3; ++i) {
        const size_t end = i < 2 ? name.find('-') : name.size();
        if (end == std::string_view::npos) return std::nullopt;
        auto [p, ec] = std::from_chars(name.data(), name.data() + end, fields[i], 16);
        if (ec != std::errc() || p != name.data() + end || fields[i] > limits[i]) return std::nullopt;
        name.remove_prefix(i < 2 ? end + 1 : end);
    }
    pfs_entry_id id{fields[0], static_cast<uint32_t>(fields[1]), static_cast<uint32_t>(fields[2])};
    if (chunk_name(id) != whole) return std::nullopt;
    return id;
}

bool is_direct_aligned(uint64_t value) { return value % ChunkStore::kDirectAlign == 0; }

bool is_enoent(const Error& e) { return e.code == -ENOENT; }

// chunks/ and its fan-out directories, made durable once at start-up: the
// first chunk of each directory is then one create, not a failed open, a
// mkdir and an open (each a trip through the ring's workers), and a chunk
// file synced later never depends on a directory entry left unsynced.
Status make_fanout_dirs(int target, const std::filesystem::path& target_dir) {
    auto made = [&](int at, const std::string& name) -> Result<bool> {
        if (::mkdirat(at, name.c_str(), 0700) == 0) return true;
        if (errno == EEXIST) return false;
        return Error{-errno, "cannot create " + (target_dir / name).string() + ": " + errno_text(-errno)};
    };
    auto sync = [&](int fd, const std::filesystem::path& path) -> Status {
        if (::fsync(fd) == 0) return ok_status();
        return Error{-errno, "fsync " + path.string() + ": " + errno_text(-errno)};
    };
    auto chunks_made = made(target, kChunksDir);
    if (!chunks_made) return chunks_made.error();
    bool any = false;
    for (unsigned i = 0; i < kFanout; ++i) {
        auto sub = made(target, fanout_dir(i));
        if (!sub) return sub.error();
        any = any || *sub;
    }
    if (!any && !*chunks_made) return ok_status();
    const auto chunks_path = target_dir / kChunksDir;
    UniqueFd chunks(::openat(target, kChunksDir, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!chunks.valid()) return Error{-errno, "cannot open " + chunks_path.string() + ": " + errno_text(-errno)};
    if (auto st = sync(chunks.get(), chunks_path); !st) return st;
    return *chunks_made ? sync(target, target_dir) : ok_status();
}

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

Result<std::unique_ptr<ChunkStore>> ChunkStore::open(std::vector<Uring*> rings,
                                                     const std::filesystem::path& target_dir,
                                                     ChunkStoreOptions options) {
    // Start-up work, done with plain system calls before the loop runs.
    UniqueFd dir(::open(target_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!dir.valid())
        return Error{-errno, "cannot open storage target " + target_dir.string() + ": " + errno_text(-errno)};
    if (auto made = make_fanout_dirs(dir.get(), target_dir); !made) return made.error();
    if (options.direct_io) {
        // Found out now rather than on the first write: file systems without
        // O_DIRECT refuse it with EINVAL when a file is opened.
        const char* probe = ".pfs-direct-io-probe";
        UniqueFd fd(::openat(dir.get(), probe, O_RDWR | O_CREAT | O_DIRECT | O_CLOEXEC, 0600));
        const int err = fd.valid() ? 0 : errno;
        ::unlinkat(dir.get(), probe, 0);
        if (err == EINVAL && options.direct_io_optional) {
            log::info("storage target " + target_dir.string() +
                      ": its file system has no O_DIRECT, chunk files use the page cache");
            options.direct_io = false;
        } else if (err == EINVAL) {
            return Error{-EINVAL, "storage target " + target_dir.string() +
                                      " does not support O_DIRECT (direct-io is on): tmpfs before Linux 6.6 and "
                                      "some other file systems do not; use ext4 or xfs, or set direct-io to auto or false"};
        } else if (err != 0) {
            return Error{-err, "cannot create a file in storage target " + target_dir.string() + ": " +
                                   errno_text(-err)};
        }
    }
    if (options.direct_io) log::info("storage target " + target_dir.string() + ": chunk files use O_DIRECT");
    auto verifier = WriteVerifier::take(dir.get(), target_dir.string());
    if (!verifier) return verifier.error();
    return std::unique_ptr<ChunkStore>(
        new ChunkStore(std::move(rings), target_dir, std::move(dir), options, *verifier));
}

ChunkStore::ChunkStore(std::vector<Uring*> rings, std::filesystem::path dir_path, UniqueFd dir,
                       ChunkStoreOptions options, uint64_t verifier)
    : rings_(std::move(rings)),
      dir_path_(std::move(dir_path)),
      dir_(std::move(dir)),
      verifier_(verifier),
      options_(options),
      cache_(options.max_open_files) {}

Uring& ChunkStore::ring() const {
    // A store of one ring serves one loop, whichever; a store of several
    // is used only from the loops they were made for.
    const unsigned loop = rings_.size() == 1 ? 0 : WorkerLoops::current();
    assert(loop < rings_.size());
    return *rings_[loop];
}

size_t ChunkStore::open_files() const {
    std::lock_guard lock(mu_);
    return cache_.size();
}

Status ChunkStore::sync_all() const {
    if (::syncfs(dir_.get()) != 0)
        return Error{-errno, "syncfs " + dir_path_.string() + ": " + errno_text(-errno)};
    return ok_status();
}

Status ChunkStore::stop_cleanly() {
    // syncfs reports any writeback error of the file system since the
    // descriptor was opened: then the verifier must change, and stays unsaid.
    if (auto st = sync_all(); !st) return st;
    return WriteVerifier::leave(dir_.get(), dir_path_.string(), verifier_);
}

std::string ChunkStore::chunk_path(const pfs_entry_id& id) { return fanout_dir(id) + "/" + chunk_name(id); }

Error ChunkStore::in_context(const pfs_entry_id& id, const Error& e) const {
    return Error{e.code, (dir_path_ / chunk_path(id)).string() + ": " + e.message};
}

void ChunkStore::forget(const pfs_entry_id& id) {
    std::lock_guard lock(mu_);
    cache_.erase(id);
    ++unlink_epoch_;
}

awaitable<Result<OpenFileCache::File>> ChunkStore::file(const pfs_entry_id& id, bool create) {
    uint64_t epoch = 0;
    {
        std::lock_guard lock(mu_);
        if (auto cached = cache_.get(id)) co_return cached;
        epoch = unlink_epoch_;
    }
    const std::string path = chunk_path(id);
    const int flags = O_RDWR | (create ? O_CREAT : 0) | (options_.direct_io ? O_DIRECT : 0);
    auto fd = co_await ring().openat(dir_.get(), path, flags, 0600);
    if (!fd && create && is_enoent(fd.error())) {
        // Its fan-out directory was removed since start-up: made again (a racing request may too).
        const std::string parent = fanout_dir(id);
        auto made = co_await ring().mkdirat(dir_.get(), parent, 0700);
        if (!made && made.error().code != -EEXIST) co_return made.error();
        fd = co_await ring().openat(dir_.get(), path, flags, 0600);
    }
    // direct-io = auto: a chunk file where O_DIRECT is refused (another
    // file system, a device) is used through the page cache; the aligned
    // I/O of the direct path works on it as it is.
    if (!fd && options_.direct_io && options_.direct_io_optional && fd.error().code == -EINVAL)
        fd = co_await ring().openat(dir_.get(), path, flags & ~O_DIRECT, 0600);
    if (!fd && options_.direct_io && fd.error().code == -EINVAL)
        co_return Error{-EINVAL, "cannot open with O_DIRECT (direct-io is on): " + fd.error().message};
    if (!fd) co_return fd.error();
    auto file = std::make_shared<ChunkFile>();
    file->fd = std::move(*fd);
    std::lock_guard lock(mu_);
    if (epoch != unlink_epoch_) co_return file;
    // Another loop may have opened and cached it meanwhile: one descriptor.
    if (auto cached = cache_.get(id)) co_return cached;
    cache_.put(id, file);
    co_return file;
}

// ---- O_DIRECT ----------------------------------------------------------------

// Memory O_DIRECT accepts: a registered buffer when one is free and large
// enough, else page-aligned heap memory.
struct ChunkStore::AlignedBuffer {
    std::optional<BufferPool::Lease> lease;
    std::unique_ptr<uint8_t, decltype(&std::free)> heap{nullptr, &std::free};
    uint8_t* data = nullptr;
};

Result<ChunkStore::AlignedBuffer> ChunkStore::aligned_buffer(size_t length) const {
    AlignedBuffer buf;
    buf.lease = lease_for(length);
    if (buf.lease) {
        buf.data = buf.lease->data();
        return buf;
    }
    const size_t bytes = (length + kDirectAlign - 1) / kDirectAlign * kDirectAlign;
    buf.heap.reset(static_cast<uint8_t*>(std::aligned_alloc(kDirectAlign, bytes ? bytes : kDirectAlign)));
    if (!buf.heap) return Error{-ENOMEM, "no memory for an aligned I/O buffer"};
    buf.data = buf.heap.get();
    return buf;
}

awaitable<Result<size_t>> ChunkStore::transfer(bool is_write, int fd, const AlignedBuffer& buf, size_t length,
                                               uint64_t offset) {
    Result<size_t> done = Error{};
    if (buf.lease && is_write) {
        done = co_await ring().write_fixed(fd, *buf.lease, length, offset);
    } else if (buf.lease) {
        done = co_await ring().read_fixed(fd, *buf.lease, length, offset);
    } else {
        std::span<uint8_t> span(buf.data, length);
        if (is_write) done = co_await ring().write(fd, span, offset);
        else done = co_await ring().read(fd, span, offset);
    }
    co_return done;
}

awaitable<Result<size_t>> ChunkStore::write_direct(ChunkFile& file, uint64_t offset,
                                                   std::span<const uint8_t> data) {
    if (!is_direct_aligned(offset) || !is_direct_aligned(data.size())) {
        auto fd = co_await buffered_fd(file);
        if (!fd) co_return fd.error();
        co_return co_await ring().write(*fd, data, offset);
    }
    // Page-aligned memory (a bulk payload whose data is whole pages:
    // tcp_channel.cpp) goes to the disk as it is.
    if (reinterpret_cast<uintptr_t>(data.data()) % kDirectAlign == 0)
        co_return co_await ring().write(file.fd.get(), data, offset);
    auto buf = aligned_buffer(data.size());
    if (!buf) co_return buf.error();
    std::memcpy(buf->data, data.data(), data.size());
    co_return co_await transfer(true, file.fd.get(), *buf, data.size(), offset);
}

awaitable<Result<SharedBytes>> ChunkStore::read_direct(ChunkFile& file, uint64_t offset, uint32_t length) {
    // The aligned blocks around [offset, offset + length).
    const uint64_t start = offset / kDirectAlign * kDirectAlign;
    const uint64_t end = (offset + length + kDirectAlign - 1) / kDirectAlign * kDirectAlign;
    const size_t span = static_cast<size_t>(end - start);
    auto buf = aligned_buffer(span);
    if (!buf) co_return buf.error();
    auto done = co_await transfer(false, file.fd.get(), *buf, span, start);
    if (!done) co_return done.error();
    const size_t head = static_cast<size_t>(offset - start);
    const size_t got = *done > head ? std::min<size_t>(*done - head, length) : 0;
    // The reply sends the bytes from this buffer, which it keeps until then.
    auto held = std::make_shared<const AlignedBuffer>(std::move(*buf));
    const std::span<const uint8_t> bytes(held->data + head, got);
    co_return SharedBytes(std::move(held), bytes);
}

awaitable<Result<int>> ChunkStore::buffered_fd(ChunkFile& file) {
    if (int fd = keep_buffered(file, UniqueFd()); fd >= 0) co_return fd;
    // Reopened through /proc, not by path: the same inode as file.fd even if
    // the chunk was unlinked and created anew meanwhile.
    auto fd = co_await ring().openat(AT_FDCWD, "/proc/self/fd/" + std::to_string(file.fd.get()), O_RDWR, 0);
    if (!fd) co_return fd.error();
    co_return keep_buffered(file, std::move(*fd));  // a racing request may have opened one first
}

int ChunkStore::keep_buffered(ChunkFile& file, UniqueFd fd) {
    std::lock_guard lock(mu_);
    if (!file.buffered.valid()) file.buffered = std::move(fd);
    return file.buffered.valid() ? file.buffered.get() : -1;
}

std::optional<BufferPool::Lease> ChunkStore::lease_for(size_t length) const {
    BufferPool* pool = ring().buffers();
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
    if (data.empty()) co_return size_t{0};
    const int fd = (*file)->fd.get();
    // Through the page cache the kernel copies from the request's own
    // buffer: a registered one would only add a copy into it.
    Result<size_t> done = Error{};
    if (options_.direct_io) done = co_await write_direct(**file, offset, data);
    else done = co_await ring().write(fd, data, offset);
    if (!done) co_return in_context(id, done.error());
    co_return done;
}

awaitable<Result<SharedBytes>> ChunkStore::read(const pfs_entry_id& id, uint64_t offset, uint32_t length) {
    auto file = co_await this->file(id, false);
    if (!file) {
        if (is_enoent(file.error())) co_return SharedBytes{};  // never written: a hole
        co_return in_context(id, file.error());
    }
    if (length == 0) co_return SharedBytes{};
    if (options_.direct_io) {
        auto data = co_await read_direct(**file, offset, length);
        if (!data) co_return in_context(id, data.error());
        co_return data;
    }
    const int fd = (*file)->fd.get();
    if (auto lease = lease_for(length)) {
        auto done = co_await ring().read_fixed(fd, *lease, length, offset);
        if (!done) co_return in_context(id, done.error());
        auto held = std::make_shared<const BufferPool::Lease>(std::move(*lease));
        const std::span<const uint8_t> bytes(held->data(), *done);
        co_return SharedBytes(std::move(held), bytes);
    }
    // No registered buffer free (or the request is larger than one): a heap
    // buffer, not zeroed first, as the read fills what the reply sends.
    auto out = std::make_shared_for_overwrite<uint8_t[]>(length);
    auto done = co_await ring().read(fd, std::span<uint8_t>(out.get(), length), offset);
    if (!done) co_return in_context(id, done.error());
    const std::span<const uint8_t> bytes(out.get(), *done);
    co_return SharedBytes(std::move(out), bytes);
}

awaitable<Status> ChunkStore::truncate(const pfs_entry_id& id, uint64_t size) {
    if (size > static_cast<uint64_t>(LLONG_MAX)) co_return in_context(id, Error{-EFBIG, "size too large"});
    auto file = co_await this->file(id, false);
    if (!file) {
        if (is_enoent(file.error())) co_return ok_status();  // nothing to cut
        co_return in_context(id, file.error());
    }
    struct stat st {};
    if (::fstat((*file)->fd.get(), &st) != 0)
        co_return in_context(id, Error{-errno, "fstat: " + errno_text(-errno)});
    if (static_cast<uint64_t>(st.st_size) <= size) co_return ok_status();
    // Plain ftruncate: io_uring has no truncate before Linux 6.9. It only
    // changes metadata, so it does not block on data I/O. Then the cut is
    // made durable: the caller commits the smaller size only after it.
    if (::ftruncate((*file)->fd.get(), static_cast<off_t>(size)) != 0)
        co_return in_context(id, Error{-errno, "ftruncate: " + errno_text(-errno)});
    auto synced = co_await ring().fsync((*file)->fd.get(), true);
    if (!synced) co_return in_context(id, synced.error());
    co_return ok_status();
}

awaitable<Status> ChunkStore::sync(const pfs_entry_id& id) {
    auto file = co_await this->file(id, false);
    if (!file) {
        if (is_enoent(file.error())) co_return ok_status();
        co_return in_context(id, file.error());
    }
    // One inode, one page cache: this also writes back what went through
    // the buffered descriptor.
    auto st = co_await ring().fsync((*file)->fd.get(), true);
    if (!st) co_return in_context(id, st.error());
    co_return ok_status();
}

awaitable<Status> ChunkStore::unlink(const pfs_entry_id& id) {
    // Forgotten before and after: an open that began before the unlink
    // completed may have found the old file.
    forget(id);
    const std::string path = chunk_path(id);
    auto st = co_await ring().unlinkat(dir_.get(), path, 0);
    forget(id);
    if (!st && !is_enoent(st.error())) co_return in_context(id, st.error());
    co_return ok_status();
}

awaitable<Result<ChunkStat>> ChunkStore::stat(const pfs_entry_id& id) {
    const std::string path = chunk_path(id);
    struct statx stx {};
    auto st = co_await ring().statx(dir_.get(), path, 0, STATX_SIZE | STATX_BLOCKS, &stx);
    if (!st) {
        if (is_enoent(st.error())) co_return ChunkStat{};
        co_return in_context(id, st.error());
    }
    co_return ChunkStat{stx.stx_size, stx.stx_blocks * 512};
}

Result<ChunkListing> ChunkStore::list(pfs_chunk_cookie from, uint32_t max) const {
    if (from.dir > kFanout) return Error{-EINVAL, "chunk listing position out of range"};
    ChunkListing out;
    uint32_t dir = from.dir;
    uint64_t pos = from.pos;
    while (dir < kFanout && out.entries.size() < max) {
        const std::string sub = fanout_dir(dir);
        const int fd = ::openat(dir_.get(), sub.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0) {
            if (errno != ENOENT)
                return Error{-errno, (dir_path_ / sub).string() + ": " + errno_text(-errno)};
            ++dir;  // no chunk ever hashed here
            pos = 0;
            continue;
        }
        std::unique_ptr<DIR, int (*)(DIR*)> d(::fdopendir(fd), &::closedir);  // owns fd from here
        if (!d) {
            const int err = errno;
            ::close(fd);
            return Error{-err, (dir_path_ / sub).string() + ": " + errno_text(-err)};
        }
        // Directory positions (d_off, telldir) stay valid while entries come
        // and go, so a listing resumes where it stopped.
        if (pos != 0) ::seekdir(d.get(), static_cast<long>(pos));
        bool full = false;
        for (;;) {
            errno = 0;
            const dirent* e = ::readdir(d.get());
            if (e == nullptr) {
                if (errno != 0) return Error{-errno, (dir_path_ / sub).string() + ": " + errno_text(-errno)};
                break;
            }
            if (out.entries.size() >= max) {
                full = true;  // this entry starts the next page
                break;
            }
            pos = static_cast<uint64_t>(e->d_off);
            auto id = parse_chunk_name(e->d_name);
            if (!id || fanout_index(*id) != dir) continue;  // not a chunk the store would ever open
            struct stat st {};
            if (::fstatat(::dirfd(d.get()), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
                if (errno == ENOENT) continue;  // removed since readdir saw it
                return Error{-errno, (dir_path_ / sub / e->d_name).string() + ": " + errno_text(-errno)};
            }
            if (!S_ISREG(st.st_mode)) continue;
            out.entries.push_back(ChunkListEntry{*id, static_cast<uint64_t>(st.st_size)});
        }
        if (full) break;
        ++dir;
        pos = 0;
    }
    out.next = pfs_chunk_cookie{dir, pos};
    out.eof = dir >= kFanout;
    return out;
}

Status parse_direct_io(std::string_view value, std::string_view name, ChunkStoreOptions& options) {
    if (value == "auto") {
        options.direct_io = options.direct_io_optional = true;
        return ok_status();
    }
    auto one_of = [value](std::initializer_list<std::string_view> words) {
        return std::find(words.begin(), words.end(), value) != words.end();
    };
    const bool yes = one_of({"true", "yes", "on", "1"});
    if (!yes && !one_of({"false", "no", "off", "0"}))
        return Error{-EINVAL, "--" + std::string(name) + ": auto, true or false, not '" + std::string(value) + "'"};
    options.direct_io = yes;
    options.direct_io_optional = false;
    return ok_status();
}

}  // namespace pfs
