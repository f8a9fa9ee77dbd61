// The chunk files of one storage target: one file per file system entry,
//   <target>/chunks/<2 hex digits>/<ino hex>-<owner hex>-<generation hex>
// with the two-digit fan-out directory taken from a hash of the entry id, so
// no directory grows beyond 1/256 of the target's chunks. All disk I/O goes
// through the ring (io_uring); file descriptors stay open in a bounded LRU
// cache so repeated I/O to a chunk does not reopen it.
//
// A store serves every event loop of the server (WorkerLoops): each loop's
// I/O goes through that loop's own ring, and the descriptor cache is locked.
//
// With direct_io, chunk files are opened with O_DIRECT: I/O bypasses the
// page cache through aligned buffers (registered ones where they fit).
// Reads of any range read the aligned blocks around it. Writes whose offset
// and length are multiples of kDirectAlign go straight to disk; other writes
// go through a second, buffered descriptor of the same file. Linux keeps the
// two coherent: a direct read or write first writes back cached pages in its
// range, and a direct write drops them afterwards. This needs no locking,
// where a read-modify-write of the edge blocks would have to serialise
// writers of the same block and fix up the size of extending writes.
#pragma once

#include <filesystem>
#include <list>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "uring.hpp"
#include "wire.hpp"

namespace pfs {

struct EntryIdHash {
    size_t operator()(const pfs_entry_id& id) const;
};
struct EntryIdEqual {
    bool operator()(const pfs_entry_id& a, const pfs_entry_id& b) const {
        return a.ino == b.ino && a.owner_node == b.owner_node && a.generation == b.generation;
    }
};

// An open chunk file.
struct ChunkFile {
    UniqueFd fd;        // O_DIRECT with direct_io
    UniqueFd buffered;  // direct_io only: the same inode without O_DIRECT, opened on first need
};

// Open chunk files, least recently used evicted first. Users hold a
// shared_ptr, so an evicted descriptor stays open until its last I/O ends
// (closing it earlier could let the number be reused under that I/O).
class OpenFileCache {
public:
    using File = std::shared_ptr<ChunkFile>;

    explicit OpenFileCache(size_t capacity) : capacity_(capacity) {}
    File get(const pfs_entry_id& id);  // null when not cached; marks it used
    void put(const pfs_entry_id& id, File file);
    void erase(const pfs_entry_id& id);
    size_t size() const { return index_.size(); }

private:
    using Entry = std::pair<pfs_entry_id, File>;
    size_t capacity_;
    std::list<Entry> lru_;  // most recently used first
    std::unordered_map<pfs_entry_id, std::list<Entry>::iterator, EntryIdHash, EntryIdEqual> index_;
};

struct ChunkStat {
    uint64_t size = 0;
    uint64_t allocated = 0;  // bytes on disk: st_blocks * 512
};

struct ChunkStoreOptions {
    size_t max_open_files = 1024;
    // I/O that fits goes through the ring's registered buffers (when it has any).
    bool fixed_buffers = true;
    // O_DIRECT chunk files (see above). If the target's file system does
    // not support it, open() fails with EINVAL and says so, or, with
    // direct_io_optional, the store uses the page cache instead.
    bool direct_io = false;
    bool direct_io_optional = false;
};

// A direct-io option's value (auto, or a yes or no in the words
// Boost.Program_options takes for one) into options; `name` is the
// option's, for the error.
Status parse_direct_io(std::string_view value, std::string_view name, ChunkStoreOptions& options);

// One chunk file as CHUNK_LIST reports it.
struct ChunkListEntry {
    pfs_entry_id id{};
    uint64_t size = 0;
};

struct ChunkListing {
    std::vector<ChunkListEntry> entries;
    pfs_chunk_cookie next{};
    bool eof = false;
};

class ChunkStore {
public:
    // Opens the target directory and creates its chunks/ directory. rings:
    // one per loop, indexed by WorkerLoops::current(); they must outlive it.
    static Result<std::unique_ptr<ChunkStore>> open(std::vector<Uring*> rings, const std::filesystem::path& target_dir,
                                                    ChunkStoreOptions options = {});
    static Result<std::unique_ptr<ChunkStore>> open(Uring& ring, const std::filesystem::path& target_dir,
                                                    ChunkStoreOptions options = {}) {
        return open(std::vector<Uring*>{&ring}, target_dir, options);
    }

    // What writes are acknowledged under (write_verifier.hpp).
    uint64_t verifier() const { return verifier_; }
    // Whether chunk files are opened with O_DIRECT (direct_io, and the
    // target's file system supports it).
    bool direct_io() const { return options_.direct_io; }
    // Everything of the target to disk (syncfs: a client's syncfs(2)).
    // Blocking system call.
    Status sync_all() const;
    // A clean stop: everything of the target to disk (syncfs), then the
    // verifier left for the next start. Blocking system calls.
    Status stop_cleanly();

    // Writes all of data at offset, creating the chunk file (mode 0600) on first write.
    awaitable<Result<size_t>> write(const pfs_entry_id& id, uint64_t offset, std::span<const uint8_t> data);
    // Up to length bytes at offset: short at the end of the file, empty
    // when the chunk was never written (sparse). They stay in the buffer
    // they were read into (no copy), which they keep.
    awaitable<Result<SharedBytes>> read(const pfs_entry_id& id, uint64_t offset, uint32_t length);
    // Cuts the chunk to at most size bytes, durably (fdatasync) when it
    // cut anything; never grows or creates one (reads past a chunk's end
    // are zeros anyway).
    awaitable<Status> truncate(const pfs_entry_id& id, uint64_t size);
    // fdatasync; nothing to do for a chunk that does not exist.
    awaitable<Status> sync(const pfs_entry_id& id);
    // Removes the chunk; a missing one is success, so retries are harmless.
    awaitable<Status> unlink(const pfs_entry_id& id);
    // Size and allocation; zero for a chunk that does not exist.
    awaitable<Result<ChunkStat>> stat(const pfs_entry_id& id);

    // fallocate(2) of the chunk (mode: enum pfs_falloc_mode, Linux's bits),
    // durably. Allocating modes create the chunk; punching a missing chunk
    // is done already. ZERO_RANGE falls back to punch-and-allocate where the
    // target's file system has no ZERO_RANGE (tmpfs). chunk_extents.cpp.
    awaitable<Status> fallocate(const pfs_entry_id& id, uint32_t mode, uint64_t offset, uint64_t length);
    // SEEK_DATA / SEEK_HOLE (enum pfs_seek_what) from offset: the offset
    // found, or nullopt when there is no data at or after offset. A missing
    // chunk, or the range past its end, is a hole.
    awaitable<Result<std::optional<uint64_t>>> seek(const pfs_entry_id& id, uint8_t what, uint64_t offset);
    // The two chunk files of a copy (the destination created), as
    // descriptors copy() may use off the event loop; both stay open while
    // the pair lives.
    struct CopyPair {
        OpenFileCache::File src;  // null: the source chunk does not exist
        OpenFileCache::File dst;
        int src_fd = -1;
        int dst_fd = -1;
    };
    awaitable<Result<CopyPair>> copy_pair(const pfs_entry_id& src, const pfs_entry_id& dst);
    // Copies length bytes (copy_file_range) from src_offset to dst_offset;
    // what lies past the source's end becomes a hole in the destination.
    // Blocking system calls: run it off the event loop.
    static Status copy(const CopyPair& pair, uint64_t src_offset, uint64_t dst_offset, uint64_t length);
    // Up to max chunk files from the position `from` (zeros: the start),
    // fan-out directory by fan-out directory. Files that are not chunks of
    // this layout are skipped. Blocking system calls (io_uring cannot list
    // directories): run it off the event loop; it only reads the directory
    // descriptor, so it may run on another thread while I/O goes on.
    Result<ChunkListing> list(pfs_chunk_cookie from, uint32_t max) const;

    // Offsets and lengths that O_DIRECT takes as they are.
    static constexpr size_t kDirectAlign = 4096;

    // The chunk's path relative to the target directory (an on-disk format).
    static std::string chunk_path(const pfs_entry_id& id);
    const std::filesystem::path& directory() const { return dir_path_; }
    size_t open_files() const;

private:
    ChunkStore(std::vector<Uring*> rings, std::filesystem::path dir_path, UniqueFd dir, ChunkStoreOptions options,
               uint64_t verifier);
    // The ring of the loop this runs on.
    Uring& ring() const;
    // The chunk's descriptor, cached or opened now (O_RDWR; with create,
    // O_CREAT and the fan-out directory made again if it was removed).
    awaitable<Result<OpenFileCache::File>> file(const pfs_entry_id& id, bool create);
    std::optional<BufferPool::Lease> lease_for(size_t length) const;
    struct AlignedBuffer;
    Result<AlignedBuffer> aligned_buffer(size_t length) const;
    awaitable<Result<size_t>> transfer(bool is_write, int fd, const AlignedBuffer& buf, size_t length,
                                       uint64_t offset);
    awaitable<Result<size_t>> write_direct(ChunkFile& file, uint64_t offset, std::span<const uint8_t> data);
    awaitable<Result<SharedBytes>> read_direct(ChunkFile& file, uint64_t offset, uint32_t length);
    awaitable<Result<int>> buffered_fd(ChunkFile& file);
    // file's buffered descriptor, keeping fd as it unless it has one; -1:
    // none (and fd invalid).
    int keep_buffered(ChunkFile& file, UniqueFd fd);
    Error in_context(const pfs_entry_id& id, const Error& e) const;
    void forget(const pfs_entry_id& id);

    std::vector<Uring*> rings_;
    std::filesystem::path dir_path_;
    UniqueFd dir_;
    uint64_t verifier_;
    ChunkStoreOptions options_;
    mutable std::mutex mu_;  // the cache, the epoch, each file's buffered descriptor
    OpenFileCache cache_;
    // Bumped by every unlink: an open that raced with one is not cached, so
    // the cache never keeps a descriptor of a removed file.
    uint64_t unlink_epoch_ = 0;
};

}  // namespace pfs
