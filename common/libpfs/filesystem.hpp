// The POSIX-like face of libpfs: paths resolved from the root directory,
// namespace operations on the metadata servers, file contents straight to
// and from the storage servers.
#pragma once

#include <fcntl.h>

#include <chrono>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "cluster.hpp"
#include "striped_io.hpp"

namespace pfs::client {

struct Entry {
    std::string name;
    pfs_entry_id id{};
    uint8_t type = 0;  // DT_*
};

struct OpenFile {
    pfs_attr attr{};
    StripeLayout layout;
    uint64_t written_end = 0;  // how far this handle wrote: reported on sync/close
};

struct FileSystemOptions {
    // How long a directory found on a path is trusted without asking the
    // metadata server again (0: always ask). Renames and rmdirs by this
    // client drop the cache; other clients' changes show within this time.
    std::chrono::milliseconds dir_cache_ttl{1000};
};

class FileSystem {
public:
    explicit FileSystem(Cluster& cluster, FileSystemOptions options = {})
        : cluster_(cluster), io_(cluster), options_(options) {}

    awaitable<Result<pfs_attr>> stat(std::string_view path);
    awaitable<Result<pfs_attr>> mkdir(std::string_view path, uint32_t mode = 0755);
    awaitable<Status> rmdir(std::string_view path);
    awaitable<Status> unlink(std::string_view path);
    awaitable<Status> rename(std::string_view from, std::string_view to, uint32_t flags = 0);
    awaitable<Result<pfs_attr>> link(std::string_view existing, std::string_view path);
    awaitable<Result<pfs_attr>> symlink(std::string_view target, std::string_view path);
    awaitable<Result<std::string>> readlink(std::string_view path);
    awaitable<Result<std::vector<Entry>>> readdir(std::string_view path);
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

    // O_CREAT, O_EXCL, O_TRUNC are honoured; the rest is the caller's.
    awaitable<Result<OpenFile>> open(std::string_view path, int flags, uint32_t mode = 0644);
    // Reads up to out.size() bytes at offset, clamped to the file size.
    awaitable<Result<size_t>> read(OpenFile& file, uint64_t offset, std::span<uint8_t> out);
    awaitable<Status> write(OpenFile& file, uint64_t offset, std::span<const uint8_t> data);
    // Data durable on the storage targets, size known to the metadata server.
    awaitable<Status> fsync(OpenFile& file);
    awaitable<Status> close(OpenFile& file);

private:
    struct Parent {
        pfs_entry_id dir{};
        std::string name;
    };

    awaitable<Result<pfs_entry_id>> root();
    awaitable<Result<pfs_attr>> resolve(std::string_view path);
    awaitable<Result<pfs_attr>> walk(std::string_view path, bool use_cache);
    struct CachedDir {
        pfs_entry_id id{};
        std::chrono::steady_clock::time_point expires;
    };
    static std::string cache_key(const pfs_entry_id& dir, std::string_view name);
    awaitable<Result<Parent>> resolve_parent(std::string_view path);
    awaitable<Result<Bytes>> meta(const pfs_entry_id& owner, uint16_t type, Result<Bytes> payload);
    awaitable<Result<pfs_attr>> attr_call(const pfs_entry_id& owner, uint16_t type, Result<Bytes> payload);
    awaitable<Status> report_size(OpenFile& file);

    Cluster& cluster_;
    StripedIo io_;
    FileSystemOptions options_;
    std::unordered_map<std::string, CachedDir> dir_cache_;
};

}  // namespace pfs::client
