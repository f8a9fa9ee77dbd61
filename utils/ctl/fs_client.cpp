#include "fs_client.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <string_view>

#include "filesystem.hpp"
#include "listing.hpp"
#include "meta_admin.hpp"
#include "sync_client.hpp"

namespace pfs::ctl {

using client::FileSystem;
using client::OpenFile;

struct FsClient::Impl {
    asio::io_context io;
    std::unique_ptr<client::Cluster> cluster;
    std::unique_ptr<FileSystem> fs;

    template <class T>
    T run(awaitable<T> task) {
        return run_sync(io, std::move(task));
    }
};

namespace {

// libpfs's FileSystem answers by path; pfs-ctl also asks by entry id.
awaitable<Result<pfs_attr>> getattr(client::Cluster& cluster, pfs_entry_id id) {
    auto body = co_await cluster.call_meta_ok(id.owner_node, PFS_MSG_GETATTR, encode(pfs_x_entry_id, id));
    if (!body) co_return body.error();
    co_return decode(*body, pfs_x_attr);
}

// Runs start(i) for i in [0, n), FsClient::kStatsInFlight at a time; the
// results in order.
template <class T, class Start>
std::vector<T> for_each_id(asio::io_context& io, size_t n, Start start) {
    std::vector<T> out;
    out.reserve(n);
    pipeline<T>(
        io, FsClient::kStatsInFlight,
        [&](size_t i) -> std::optional<awaitable<T>> {
            if (i >= n) return std::nullopt;
            return start(i);
        },
        [&](size_t, T&& result) {
            out.push_back(std::move(result));
            return true;
        });
    return out;
}

awaitable<Result<ChunkPage>> list_chunks(client::Cluster& cluster, pfs_chunk_list req) {
    auto body = co_await cluster.call_target_ok(req.target_id, PFS_MSG_CHUNK_LIST, encode(pfs_x_chunk_list, req));
    if (!body) co_return body.error();
    ChunkPage page;
    pfs_chunk_page head{};
    auto st = decode_payload(*body, [&](pfs_xdr* x) {
        if (pfs_x_chunk_page(x, &head)) return;
        page.entries.resize(head.count);
        for (auto& e : page.entries)
            if (pfs_x_chunk_entry(x, &e)) return;
    });
    if (!st) co_return st.error();
    page.next = head.next;
    page.eof = head.eof != 0;
    co_return page;
}

// pfs-ctl's entries, from a listing made safe (client::plain_entries).
Result<std::vector<DirEntry>> without_dots(std::vector<client::Entry>&& entries) {
    auto plain = client::plain_entries(std::move(entries));
    if (!plain) return plain.error();
    std::vector<DirEntry> out;
    out.reserve(plain->size());
    for (auto& e : *plain) out.push_back(DirEntry{std::move(e.name), e.id, e.type, e.attr});
    return out;
}

awaitable<Result<std::vector<DirEntry>>> list_dir(FileSystem& fs, pfs_entry_id dir) {
    auto entries = co_await fs.readdir(dir);
    if (!entries) co_return entries.error();
    co_return without_dots(std::move(*entries));
}

// Only regular files have contents to copy.
Status check_regular(const pfs_attr& attr, const std::string& path) {
    if ((attr.mode & S_IFMT) == S_IFDIR) return Error{-EISDIR, path + " is a directory"};
    if ((attr.mode & S_IFMT) != S_IFREG) return Error{-EINVAL, path + " is not a regular file"};
    return ok_status();
}

}  // namespace

FsClient::FsClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

FsClient::~FsClient() {
    if (!impl_) return;
    impl_->cluster->close();
    impl_->io.restart();
    impl_->io.poll();  // let the readers see their closed sockets before the loop goes away
}

Result<std::unique_ptr<FsClient>> FsClient::connect(const Options& options) {
    auto settings = load_settings(options);
    if (!settings) return settings.error();
    auto impl = std::make_unique<Impl>();
    impl->cluster = std::make_unique<client::Cluster>(impl->io.get_executor(), settings->mgmtd, settings->secret,
                                                      settings->client_config());
    impl->fs = std::make_unique<FileSystem>(*impl->cluster);
    auto client = std::make_unique<FsClient>(std::move(impl));
    auto st = client->impl_->run(client->impl_->cluster->start());
    if (!st) {
        bool connected = client->impl_->cluster->mgmtd().connected();
        return mgmtd_no_answer(st.error(), settings->mgmtd.str(), settings->timeout, connected);
    }
    return client;
}

Result<pfs_attr> FsClient::stat(const std::string& path) { return impl_->run(impl_->fs->stat(path)); }

std::vector<Result<pfs_attr>> FsClient::stat_all(const std::vector<pfs_entry_id>& ids) {
    return for_each_id<Result<pfs_attr>>(impl_->io, ids.size(),
                                         [&](size_t i) { return getattr(*impl_->cluster, ids[i]); });
}

Result<pfs_entry_id> FsClient::root() {
    auto node = impl_->cluster->root_meta();
    if (!node) return node.error();
    return pfs_entry_id{PFS_ROOT_INO, *node, PFS_ROOT_GENERATION};
}

std::vector<Result<std::vector<DirEntry>>> FsClient::readdir_all(const std::vector<pfs_entry_id>& dirs) {
    return for_each_id<Result<std::vector<DirEntry>>>(impl_->io, dirs.size(),
                                                      [&](size_t i) { return list_dir(*impl_->fs, dirs[i]); });
}

std::vector<Result<FileLayout>> FsClient::layout_all(const std::vector<pfs_entry_id>& files) {
    return for_each_id<Result<FileLayout>>(impl_->io, files.size(),
                                           [&](size_t i) { return impl_->fs->layout(files[i]); });
}

std::vector<pfs_target_info> FsClient::targets() const { return impl_->cluster->targets(); }

std::vector<pfs_node_info> FsClient::meta_nodes() const { return impl_->cluster->meta_nodes(); }

Result<std::vector<pfs_detached_dir>> FsClient::detached_dirs(uint32_t meta_node) {
    return impl_->run(client::list_detached(*impl_->cluster, meta_node));
}

Result<std::vector<uint8_t>> FsClient::entry_states(uint32_t owner, const std::vector<pfs_entry_id>& dirs) {
    return impl_->run(client::entry_states(*impl_->cluster, owner, dirs));
}

Result<ChunkPage> FsClient::chunk_list(uint32_t target_id, const pfs_chunk_cookie& from, uint32_t max) {
    return impl_->run(list_chunks(*impl_->cluster, pfs_chunk_list{target_id, from, max}));
}

Status FsClient::chunk_unlink(uint32_t target_id, const pfs_entry_id& file) {
    auto body = impl_->run(impl_->cluster->call_target_ok(target_id, PFS_MSG_CHUNK_UNLINK,
                                                          encode(pfs_x_chunk_ref, pfs_chunk_ref{file, target_id})));
    if (!body) return body.error();
    return ok_status();
}

Status FsClient::remove_detached_dir(const pfs_entry_id& dir) {
    // As the parent's server removes one (prepare: empty, no new entries;
    // then commit), for a directory whose entry is gone for good.
    for (uint8_t phase : {uint8_t{PFS_RMDIR_PREPARE}, uint8_t{PFS_RMDIR_COMMIT}}) {
        auto body = impl_->run(impl_->cluster->call_meta_ok(dir.owner_node, PFS_MSG_RMDIR_DETACHED,
                                                            encode(pfs_x_rmdir_detached, pfs_rmdir_detached{dir, phase})));
        if (!body) return body.error();
    }
    return ok_status();
}

Result<std::vector<DirEntry>> FsClient::readdir(const std::string& path) {
    auto entries = impl_->run(impl_->fs->readdir(path));
    if (!entries) return entries.error();
    return without_dots(std::move(*entries));
}

Result<std::vector<DirEntry>> FsClient::readdir_plus(const std::string& path) {
    auto entries = impl_->run(impl_->fs->readdir_plus(path));
    if (!entries) return entries.error();
    return without_dots(std::move(*entries));
}

Result<std::string> FsClient::readlink(const std::string& path) { return impl_->run(impl_->fs->readlink(path)); }

Result<pfs_attr> FsClient::mkdir(const std::string& path, uint32_t mode, uint32_t meta_node, uint32_t stripes) {
    return impl_->run(impl_->fs->mkdir(path, mode, meta_node, stripes));
}

Result<std::vector<pfs_entry_id>> FsClient::shards(const std::string& dir) {
    return impl_->run(impl_->fs->shards(dir));
}

Status FsClient::rmdir(const std::string& path) { return impl_->run(impl_->fs->rmdir(path)); }

Status FsClient::unlink(const std::string& path) { return impl_->run(impl_->fs->unlink(path)); }

Status FsClient::rename(const std::string& from, const std::string& to) {
    return impl_->run(impl_->fs->rename(from, to));
}

Result<pfs_pattern> FsClient::get_pattern(const std::string& dir) { return impl_->run(impl_->fs->get_pattern(dir)); }

Status FsClient::set_pattern(const std::string& dir, const pfs_pattern& pattern) {
    return impl_->run(impl_->fs->set_pattern(dir, pattern));
}

Result<FileLayout> FsClient::layout(const std::string& path) { return impl_->run(impl_->fs->layout(path)); }

Result<uint64_t> FsClient::upload(const std::string& path, uint32_t mode, const Source& source) {
    auto file = impl_->run(impl_->fs->open(path, O_WRONLY | O_CREAT | O_TRUNC, mode));
    if (!file) return file.error();
    std::vector<Bytes> buffers(kPiecesInFlight);
    uint64_t offset = 0;
    bool at_end = false;
    Status failed = ok_status();
    pipeline<Status>(
        impl_->io, kPiecesInFlight,
        [&](size_t i) -> std::optional<awaitable<Status>> {
            if (at_end) return std::nullopt;
            Bytes& buf = buffers[i % kPiecesInFlight];
            buf.resize(kPieceSize);
            auto n = source(buf);
            if (!n) failed = n.error();
            if (!n || *n < kPieceSize) at_end = true;
            if (!n || *n == 0) return std::nullopt;
            uint64_t at = offset;
            offset += *n;
            return impl_->fs->write(*file, at, std::span<const uint8_t>(buf.data(), *n));
        },
        [&](size_t, Status&& st) {
            if (!st && failed) failed = st;
            return st.ok();
        });
    // Close even after a failure: the metadata server learns how far we got.
    auto closed = impl_->run(impl_->fs->close(*file));
    if (!failed) return failed.error();
    if (!closed) return closed.error();
    return offset;
}

Result<uint64_t> FsClient::download(const std::string& path, const Sink& sink) {
    auto file = impl_->run(impl_->fs->open(path, O_RDONLY));
    if (!file) return file.error();
    Status failed = check_regular(file->attr, path);
    const uint64_t size = failed ? file->attr.size : 0;
    std::vector<Bytes> buffers(kPiecesInFlight);
    uint64_t copied = 0;
    pipeline<Result<size_t>>(
        impl_->io, kPiecesInFlight,
        [&](size_t i) -> std::optional<awaitable<Result<size_t>>> {
            uint64_t at = static_cast<uint64_t>(i) * kPieceSize;
            if (at >= size) return std::nullopt;
            Bytes& buf = buffers[i % kPiecesInFlight];
            buf.resize(static_cast<size_t>(std::min<uint64_t>(kPieceSize, size - at)));
            return impl_->fs->read(*file, at, buf);
        },
        [&](size_t i, Result<size_t>&& n) {
            if (!n) failed = n.error();
            else failed = sink(std::span<const uint8_t>(buffers[i % kPiecesInFlight].data(), *n));
            if (failed) copied += *n;
            return failed.ok();
        });
    auto closed = impl_->run(impl_->fs->close(*file));
    if (!failed) return failed.error();
    if (!closed) return closed.error();
    return copied;
}

}  // namespace pfs::ctl
