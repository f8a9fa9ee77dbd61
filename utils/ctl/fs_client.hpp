// A synchronous face of libpfs for pfs-ctl's file commands: one call at a
// time, each driven to completion on a private io_context, except the
// streaming copies, which keep several pieces in flight. The Asio machinery
// stays in fs_client.cpp; this header is cheap to include.
#pragma once

#include "stripe_layout.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "config.hpp"
#include "result.hpp"

extern "C" {
#include "pfs_proto.h"
}

namespace pfs::ctl {

struct DirEntry {
    std::string name;
    pfs_entry_id id{};
    uint8_t type = 0;              // DT_*
    std::optional<pfs_attr> attr;  // readdir_plus: where the server gave them
};

using FileLayout = pfs::StripeLayout;

// One page of a storage target's chunk files (CHUNK_LIST).
struct ChunkPage {
    std::vector<pfs_chunk_entry> entries;
    pfs_chunk_cookie next{};
    bool eof = false;
};

// The caller's side of a streaming copy. A Source fills the span unless the
// data ends first and says how many bytes it put there (0: the end); a Sink
// takes the next bytes. Their errors come back from upload/download as they are.
using Source = std::function<Result<size_t>(std::span<uint8_t>)>;
using Sink = std::function<Status(std::span<const uint8_t>)>;

class FsClient {
public:
    static constexpr size_t kPieceSize = 8u << 20;
    static constexpr size_t kPiecesInFlight = 4;
    static constexpr size_t kStatsInFlight = 64;

    // Reads --mgmtd, --auth-file and --timeout-ms, loads the cluster map from
    // pfs-mgmtd and subscribes to it. These errors carry pfs-ctl exit statuses.
    static Result<std::unique_ptr<FsClient>> connect(const Options& options);
    ~FsClient();

    FsClient(const FsClient&) = delete;
    FsClient& operator=(const FsClient&) = delete;

    // From here on, errors are libpfs's: a negative errno or a PFS status.
    Result<pfs_attr> stat(const std::string& path);
    // The attributes of many entries, kStatsInFlight requests at a time; one
    // result each, in order.
    std::vector<Result<pfs_attr>> stat_all(const std::vector<pfs_entry_id>& ids);
    // Without "." and "..".
    Result<std::vector<DirEntry>> readdir(const std::string& path);
    // The same, with each entry's attributes where its server gives them.
    Result<std::vector<DirEntry>> readdir_plus(const std::string& path);
    Result<std::string> readlink(const std::string& path);
    // meta_node: the directory's metadata server (0: the placement policy's
    // choice); stripes: the metadata servers it is striped over (0: as its
    // parent's pattern says).
    Result<pfs_attr> mkdir(const std::string& path, uint32_t mode, uint32_t meta_node = 0, uint32_t stripes = 0);
    // A directory's shards: itself alone unless striped.
    Result<std::vector<pfs_entry_id>> shards(const std::string& dir);
    Status rmdir(const std::string& path);
    Status unlink(const std::string& path);
    Status rename(const std::string& from, const std::string& to);
    Result<pfs_pattern> get_pattern(const std::string& dir);
    Status set_pattern(const std::string& dir, const pfs_pattern& pattern);
    Result<FileLayout> layout(const std::string& path);

    // By entry id, for walking the whole namespace (fsck), kStatsInFlight
    // requests at a time; one result each, in order.
    Result<pfs_entry_id> root();
    // Without "." and "..".
    std::vector<Result<std::vector<DirEntry>>> readdir_all(const std::vector<pfs_entry_id>& dirs);
    // An open for reading and a close each.
    std::vector<Result<FileLayout>> layout_all(const std::vector<pfs_entry_id>& files);
    // The storage targets in the map.
    std::vector<pfs_target_info> targets() const;
    // The metadata servers in the map.
    std::vector<pfs_node_info> meta_nodes() const;
    // Every directory of a metadata server whose entry lives on another.
    Result<std::vector<pfs_detached_dir>> detached_dirs(uint32_t meta_node);
    // Whether an entry on `owner` names each directory: enum pfs_entry_state.
    Result<std::vector<uint8_t>> entry_states(uint32_t owner, const std::vector<pfs_entry_id>& dirs);
    // Up to max of a target's chunk files from `from` (zeros: the start).
    Result<ChunkPage> chunk_list(uint32_t target_id, const pfs_chunk_cookie& from, uint32_t max);
    // fsck --repair (the admin role): deletes a chunk file; removes a
    // detached directory no entry names, when it is empty (ENOTEMPTY else).
    Status chunk_unlink(uint32_t target_id, const pfs_entry_id& file);
    Status remove_detached_dir(const pfs_entry_id& dir);

    // Creates or truncates `path` and fills it from `source`, kPieceSize bytes
    // at a time with up to kPiecesInFlight pieces under way. Returns the size.
    Result<uint64_t> upload(const std::string& path, uint32_t mode, const Source& source);
    // Reads `path` the same way and hands its contents to `sink` in order.
    Result<uint64_t> download(const std::string& path, const Sink& sink);

    struct Impl;
    explicit FsClient(std::unique_ptr<Impl> impl);

private:
    std::unique_ptr<Impl> impl_;
};

}  // namespace pfs::ctl
