// The POSIX-like face of libpfs: paths resolved from the root directory,
// namespace operations on the metadata servers, file contents straight to
// and from the storage servers. A FileSystem is one client: a random client
// id in every metadata request, sessions on the metadata servers kept alive
// while files are open, and advisory locks (flock, POSIX ranges) that other
// clients of the cluster see.
#pragma once

#include <fcntl.h>

#include <chrono>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "cluster.hpp"
#include "session_keeper.hpp"
#include "striped_io.hpp"

namespace pfs::client {

struct Entry {
    std::string name;
    pfs_entry_id id{};
    uint8_t type = 0;              // DT_*
    std::optional<pfs_attr> attr;  // readdir_plus: where the server gave them
};

struct OpenFile {
    pfs_attr attr{};
    StripeLayout layout;
    uint64_t written_end = 0;  // how far this handle wrote: reported on sync/close
    bool unreported = false;   // written since the last report (mtime, st_blocks)
    uint64_t owner = 0;        // lock owner, unique within the client (0: closed)
    bool locked = false;       // took a lock once: close releases what is left
    WriteVerifiers verifiers;  // of the writes since the last fsync
    // The session epochs (on the inode's metadata server) the open and the
    // last lock were granted under: another epoch there means they are
    // gone (SessionKeeper::lost). 0: not known.
    uint64_t open_epoch = 0;
    uint64_t lock_epoch = 0;
    uint32_t open_flags = 0;  // O_ACCMODE of the open, to open it again
    // A read-only open of an inline file: its data as the open found it
    // (reads are served from it, as from a page cache filled at open).
    std::shared_ptr<const Bytes> content;
    // With all of the content: the server did not count the open, which
    // sends no CLOSE and is never lost (PFS_FLAG_UNTRACKED).
    bool untracked = false;
    bool gone = false;        // the open was lost and the file is no more
};

struct FileSystemOptions {
    // How long a directory found on a path is trusted without asking the
    // metadata server again (0: always ask). Renames and rmdirs by this
    // client drop the cache; other clients' changes show when the server's
    // notice arrives, and within this time when notices are lost.
    std::chrono::milliseconds dir_cache_ttl{1000};
    // Session renewals are at most this far apart (a third of the servers'
    // session-timeout when they say less).
    std::chrono::milliseconds session_renew_max{10000};
    // A blocking lock retries a conflict after 5 ms, doubling up to this.
    std::chrono::milliseconds lock_retry_max{500};
    // Whom the metadata servers check permissions for: this process's
    // effective uid, gid and groups unless given.
    std::optional<Credentials> as{};
};

class FileSystem {
public:
    explicit FileSystem(Cluster& cluster, FileSystemOptions options = {});
    // Without shutdown() the servers keep this client's opens and locks
    // until its sessions time out, as for a client that crashed.
    ~FileSystem();
    FileSystem(const FileSystem&) = delete;
    FileSystem& operator=(const FileSystem&) = delete;

    uint64_t client_id() const { return keeper_.client_id(); }
    const Credentials& credentials() const { return as_; }
    const SessionKeeper& sessions() const { return keeper_; }
    // Ends this client's sessions on every metadata server it used: its
    // locks are released and its open files closed there now. The last
    // call on a FileSystem.
    awaitable<Status> shutdown();

    awaitable<Result<pfs_attr>> stat(std::string_view path);
    // meta_node: the metadata server for the new directory (0: the
    // parent's server decides, by its placement policy). stripes: the
    // metadata servers it is striped over, handed down to its
    // subdirectories (0: as its parent's pattern says).
    awaitable<Result<pfs_attr>> mkdir(std::string_view path, uint32_t mode = 0755, uint32_t meta_node = 0,
                                      uint32_t stripes = 0);
    // A directory's shards (DIR_SHARDS): itself alone unless striped.
    awaitable<Result<std::vector<pfs_entry_id>>> shards(std::string_view dir);
    awaitable<Status> rmdir(std::string_view path);
    awaitable<Status> unlink(std::string_view path);
    awaitable<Status> rename(std::string_view from, std::string_view to, uint32_t flags = 0);
    awaitable<Result<pfs_attr>> link(std::string_view existing, std::string_view path);
    awaitable<Result<pfs_attr>> symlink(std::string_view target, std::string_view path);
    awaitable<Result<std::string>> readlink(std::string_view path);
    // A FIFO, socket or device: mode carries the type and permission bits,
    // rdev a device's number as new_encode_dev() packs it (pfs_encode_dev).
    awaitable<Result<pfs_attr>> mknod(std::string_view path, uint32_t mode, uint32_t rdev = 0);
    awaitable<Result<std::vector<Entry>>> readdir(std::string_view path);
    awaitable<Result<std::vector<Entry>>> readdir(const pfs_entry_id& dir);
    // Entries with their attributes, one request per page (READDIR_PLUS).
    awaitable<Result<std::vector<Entry>>> readdir_plus(std::string_view path);
    awaitable<Result<pfs_attr>> setattr(std::string_view path, const pfs_setattr& changes);
    awaitable<Status> truncate(std::string_view path, uint64_t size);
    awaitable<Status> set_xattr(std::string_view path, std::string_view name, std::string_view value,
                                uint32_t flags = 0);
    awaitable<Result<std::string>> get_xattr(std::string_view path, std::string_view name);
    awaitable<Result<std::vector<std::string>>> list_xattrs(std::string_view path);
    awaitable<Status> remove_xattr(std::string_view path, std::string_view name);
    awaitable<Result<pfs_statfs>> statfs();
    awaitable<Result<pfs_pattern>> get_pattern(std::string_view dir);
    awaitable<Status> set_pattern(std::string_view dir, const pfs_pattern& pattern);
    // The layout of a file (for pfs-ctl entry info).
    awaitable<Result<StripeLayout>> layout(std::string_view path);
    // The same by entry id (an open for reading and a close: pfs-ctl fsck).
    awaitable<Result<StripeLayout>> layout(const pfs_entry_id& file);

    // O_CREAT, O_EXCL, O_TRUNC are honoured; the rest is the caller's.
    //
    // An open lives in this client's session on the file's metadata server.
    // When that session is lost (it expired, or the server restarted) read,
    // write and fsync open the file again by its id first; a file that is
    // gone meanwhile (unlinked while open: the server freed it) fails them
    // with -ESTALE from then on, never reading what its chunks became.
    awaitable<Result<OpenFile>> open(std::string_view path, int flags, uint32_t mode = 0644);
    // Reads up to out.size() bytes at offset, clamped to the file size.
    awaitable<Result<size_t>> read(OpenFile& file, uint64_t offset, std::span<uint8_t> out);
    awaitable<Status> write(OpenFile& file, uint64_t offset, std::span<const uint8_t> data);
    // Data durable on the storage targets, size known to the metadata server.
    awaitable<Status> fsync(OpenFile& file);
    // The first error of: the size report, releasing the file's locks
    // (-ENOLCK when they had been lost), the CLOSE.
    awaitable<Status> close(OpenFile& file);

    // fallocate(2): mode is enum pfs_falloc_mode (Linux's FALLOC_FL_
    // KEEP_SIZE, PUNCH_HOLE, ZERO_RANGE); others are -EOPNOTSUPP. The
    // metadata server checks write permission. filesystem_space.cpp.
    awaitable<Status> fallocate(OpenFile& file, uint32_t mode, uint64_t offset, uint64_t length);
    // lseek(SEEK_DATA / SEEK_HOLE): what is PFS_SEEK_DATA or PFS_SEEK_HOLE;
    // -ENXIO at or past the end of the file, or with no data after offset.
    awaitable<Result<uint64_t>> seek(OpenFile& file, uint8_t what, uint64_t offset);
    // st_blocks * 512: the bytes the file's chunks take on the targets.
    awaitable<Result<uint64_t>> allocated(OpenFile& file);
    // The file's attributes now (fstat), its size counting this handle's
    // writes the metadata server has not heard of yet.
    awaitable<Result<pfs_attr>> attr(OpenFile& file);

    // Advisory locks. kind: PFS_LOCK_FLOCK (whole file; range ignored) or
    // PFS_LOCK_POSIX; type: PFS_LOCK_READ, _WRITE or _UNLOCK; len 0: to the
    // end of the file. A conflict is -EAGAIN, or with wait retried with
    // backoff until granted (F_SETLKW, flock without LOCK_NB). Locks belong
    // to the open file (like OFD locks) and go with its close. Locks lost
    // with the session are reported once: the next lock or unlock of the
    // file (or its close) fails with -ENOLCK, and the one after is served
    // as usual (an unlock is sent all the same).
    awaitable<Status> lock(OpenFile& file, uint8_t kind, uint8_t type, uint64_t start = 0, uint64_t len = 0,
                           bool wait = false);
    awaitable<Status> unlock(OpenFile& file, uint8_t kind, uint64_t start = 0, uint64_t len = 0);
    // The first lock of another owner that would block this one (F_GETLK);
    // type PFS_LOCK_UNLOCK when there is none.
    awaitable<Result<pfs_lock_conflict>> getlk(OpenFile& file, uint8_t kind, uint8_t type, uint64_t start = 0,
                                               uint64_t len = 0);

private:
    awaitable<Result<std::vector<Entry>>> list(const pfs_entry_id& dir, uint16_t type);
    struct Parent {
        pfs_entry_id dir{};
        std::string name;
        bool cached = false;  // the directory came from dir_cache_ (asked no one)
    };

    awaitable<Result<pfs_entry_id>> root();
    awaitable<Result<pfs_attr>> resolve(std::string_view path);
    awaitable<Result<pfs_attr>> walk(std::string_view path, bool use_cache);
    struct CachedDir {
        pfs_entry_id parent{};  // the directory (its shard) that names it
        pfs_entry_id id{};
        bool striped = false;  // PFS_ATTR_STRIPED
        std::chrono::steady_clock::time_point expires;
    };
    // Where name's entry in dir is: dir, or its shard when striped (the
    // shards asked once: they never change).
    awaitable<Result<pfs_entry_id>> name_dir(const pfs_entry_id& dir, bool striped, std::string_view name);
    awaitable<Result<const std::vector<pfs_entry_id>*>> shards_of(const pfs_entry_id& dir);
    static std::string cache_key(const pfs_entry_id& dir, std::string_view name);
    // An INVALIDATE notice: cached names in or of the entries go (count 0,
    // INVALIDATE_ALL: all of them).
    void invalidate(const pfs_invalidate& notice);
    // The directory that holds path's last component (its shard), and that
    // name. fresh: its last component looked up (else from the cache when
    // every component of its path is there, with no request at all).
    awaitable<Result<Parent>> resolve_parent(std::string_view path, bool fresh = false);
    // The directory at parts from the cache alone, when all of it is there.
    std::optional<CachedDir> cached_dir(const pfs_entry_id& root, std::span<const std::string_view> parts) const;
    // op(parent) for path's parent; a directory the cache gave that is gone
    // on the server (-ESTALE: op did nothing) is looked up again, and op
    // runs once more.
    template <class Op, class R = typename std::invoke_result_t<Op&, const Parent&>::value_type>
    awaitable<R> at_parent(std::string_view path, Op op);
    // An open's reply body, and the bulk data a read-only open may bring:
    // an inline file's content (PFS_FLAG_INLINE_CONTENT).
    struct OpenReply {
        Bytes body;
        std::shared_ptr<Bytes> data;
        bool untracked = false;  // PFS_FLAG_UNTRACKED: the server did not count the open
    };
    // Inline files up to this size come with their read-only opens.
    static constexpr size_t kOpenContentMax = 128u << 10;
    // OPEN_NAME or OPEN of an existing entry: the reply of an open.
    awaitable<Result<OpenReply>> open_existing(std::string_view path, uint32_t flags, uint64_t* epoch);
    // A request that opens (OPEN, OPEN_NAME, CREATE); read_only: with room
    // for an inline file's content.
    awaitable<Result<OpenReply>> open_call(const pfs_entry_id& owner, uint16_t type, Result<Bytes> payload,
                                           uint64_t* epoch, bool read_only);
    // A request to owner's metadata server in this client's session; *epoch
    // gets the session epoch its reply carried.
    awaitable<Result<Bytes>> meta(const pfs_entry_id& owner, uint16_t type, Result<Bytes> payload,
                                  uint64_t* epoch = nullptr);
    awaitable<Result<Reply>> meta_reply(const pfs_entry_id& owner, uint16_t type, Result<Bytes> payload,
                                        uint64_t* epoch, Bulk bulk);
    // Before file's data is used: its open is in the current session (opened
    // again if the session was lost), or -ESTALE when the file is gone.
    awaitable<Status> check(OpenFile& file);
    // io(layout) with the file's layout; once more with its layout fetched
    // again when an inline file's data moved to its storage targets
    // meanwhile (PFS_E_MOVED).
    template <class Io>
    auto with_layout(OpenFile& file, Io io) -> decltype(io(file.layout));
    awaitable<Status> refresh_layout(OpenFile& file);
    // Whether the locks taken through file were lost with a session.
    bool locks_lost(const OpenFile& file) const;
    awaitable<Result<pfs_attr>> attr_call(const pfs_entry_id& owner, uint16_t type, Result<Bytes> payload);
    // lazy (close, fallocate): only with something new, answered before the
    // server's journal has it (PFS_SET_LAZY: close(2) promises no
    // durability); durable (fsync): always, answered once the journal has
    // it and every report before it.
    enum class SizeReport { lazy, durable };
    awaitable<Status> report_size(OpenFile& file, SizeReport how);
    // An OPEN or CREATE-and-open reply (granted under epoch) as an open
    // file of this client.
    Result<OpenFile> opened(Result<OpenReply> reply, uint64_t epoch, int flags);
    Result<Bytes> lock_req(const OpenFile& file, uint8_t kind, uint8_t type, uint64_t start, uint64_t len) const;

    Cluster& cluster_;
    StripedIo io_;
    FileSystemOptions options_;
    Credentials as_;
    std::unordered_map<std::string, CachedDir> dir_cache_;
    std::unordered_map<std::string, std::vector<pfs_entry_id>> shards_;  // of striped directories
    uint64_t notices_ = 0;  // INVALIDATE notices received: a LOOKUP that saw one arrive is not cached
    SessionKeeper keeper_;
    uint64_t next_owner_ = 1;
};

template <class Io>
auto FileSystem::with_layout(OpenFile& file, Io io) -> decltype(io(file.layout)) {
    auto done = co_await io(file.layout);
    if (done || done.error().code != PFS_E_MOVED) co_return done;
    if (auto st = co_await refresh_layout(file); !st) co_return st.error();
    co_return co_await io(file.layout);
}

template <class Op, class R>
awaitable<R> FileSystem::at_parent(std::string_view path, Op op) {
    auto parent = co_await resolve_parent(path);
    if (!parent) co_return parent.error();
    R done = co_await op(*parent);
    if (done || done.error().code != -ESTALE || !parent->cached) co_return done;
    dir_cache_.clear();
    parent = co_await resolve_parent(path, true);
    if (!parent) co_return parent.error();
    co_return co_await op(*parent);
}

}  // namespace pfs::client
