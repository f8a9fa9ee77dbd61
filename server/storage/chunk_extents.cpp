// ChunkStore's space operations: fallocate (allocate, punch, zero), SEEK_DATA
// / SEEK_HOLE and server-side copies between chunk files of one target.
#include "chunk_store.hpp"

#include <fcntl.h>
#include <linux/falloc.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>

namespace pfs {
namespace {

static_assert(PFS_FALLOC_KEEP_SIZE == FALLOC_FL_KEEP_SIZE && PFS_FALLOC_PUNCH_HOLE == FALLOC_FL_PUNCH_HOLE &&
              PFS_FALLOC_ZERO_RANGE == FALLOC_FL_ZERO_RANGE);
static_assert(PFS_SEEK_DATA == SEEK_DATA && PFS_SEEK_HOLE == SEEK_HOLE);

constexpr uint64_t kMaxOffset = static_cast<uint64_t>(LLONG_MAX);

Error sys_error(const char* what) { return Error{-errno, std::string(what) + ": " + errno_text(-errno)}; }

}  // namespace

awaitable<Status> ChunkStore::fallocate(const pfs_entry_id& id, uint32_t mode, uint64_t offset, uint64_t length) {
    if (pfs_falloc_mode_check(mode) != 0) co_return Error{-EOPNOTSUPP, "fallocate mode not supported"};
    if (length == 0 || offset > kMaxOffset || length > kMaxOffset - offset)
        co_return in_context(id, Error{-EFBIG, "fallocate range too large"});
    const bool punch = mode & PFS_FALLOC_PUNCH_HOLE;
    auto file = co_await this->file(id, !punch);
    if (!file) {
        if (punch && file.error().code == -ENOENT) co_return ok_status();  // nothing there to punch
        co_return in_context(id, file.error());
    }
    const int fd = (*file)->fd.get();
    auto st = co_await ring().fallocate(fd, static_cast<int>(mode), offset, length);
    if (!st && st.error().code == -EOPNOTSUPP && (mode & PFS_FALLOC_ZERO_RANGE)) {
        // Zeros by other means: free the range, then allocate it again.
        st = co_await ring().fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, offset, length);
        if (st) st = co_await ring().fallocate(fd, static_cast<int>(mode & PFS_FALLOC_KEEP_SIZE), offset, length);
    }
    if (!st) co_return in_context(id, st.error());
    // Durable before the metadata server commits a size that relies on it.
    auto synced = co_await ring().fsync(fd, true);
    if (!synced) co_return in_context(id, synced.error());
    co_return ok_status();
}

awaitable<Result<std::optional<uint64_t>>> ChunkStore::seek(const pfs_entry_id& id, uint8_t what, uint64_t offset) {
    const bool data = what == PFS_SEEK_DATA;
    if (offset > kMaxOffset) co_return in_context(id, Error{-EINVAL, "seek offset too large"});
    auto file = co_await this->file(id, false);
    if (!file) {
        if (file.error().code == -ENOENT) co_return data ? std::nullopt : std::optional<uint64_t>(offset);
        co_return in_context(id, file.error());
    }
    // lseek is no io_uring operation; SEEK_DATA/SEEK_HOLE only look up
    // extents (metadata, like the fstat of truncate), never wait for data I/O.
    const off_t at = ::lseek((*file)->fd.get(), static_cast<off_t>(offset), data ? SEEK_DATA : SEEK_HOLE);
    if (at < 0) {
        if (errno == ENXIO) co_return data ? std::nullopt : std::optional<uint64_t>(offset);
        co_return in_context(id, sys_error(data ? "lseek SEEK_DATA" : "lseek SEEK_HOLE"));
    }
    co_return std::optional<uint64_t>(static_cast<uint64_t>(at));
}

awaitable<Result<ChunkStore::CopyPair>> ChunkStore::copy_pair(const pfs_entry_id& src, const pfs_entry_id& dst) {
    CopyPair pair;
    auto from = co_await file(src, false);
    if (!from && from.error().code != -ENOENT) co_return in_context(src, from.error());
    auto to = co_await file(dst, true);
    if (!to) co_return in_context(dst, to.error());
    pair.dst = *to;
    pair.dst_fd = pair.dst->fd.get();
    if (from) {
        pair.src = *from;
        pair.src_fd = pair.src->fd.get();
    }
    if (options_.direct_io) {
        // copy_file_range goes through the page cache: the buffered
        // descriptors (the kernel keeps them coherent with O_DIRECT I/O).
        auto d = co_await buffered_fd(*pair.dst);
        if (!d) co_return in_context(dst, d.error());
        pair.dst_fd = *d;
        if (pair.src) {
            auto s = co_await buffered_fd(*pair.src);
            if (!s) co_return in_context(src, s.error());
            pair.src_fd = *s;
        }
    }
    co_return pair;
}

Status ChunkStore::copy(const CopyPair& pair, uint64_t src_offset, uint64_t dst_offset, uint64_t length) {
    if (src_offset > kMaxOffset - length || dst_offset > kMaxOffset - length)
        return Error{-EFBIG, "copy range too large"};
    uint64_t done = 0;
    while (pair.src && done < length) {
        auto in = static_cast<loff_t>(src_offset + done);
        auto out = static_cast<loff_t>(dst_offset + done);
        const ssize_t n = ::copy_file_range(pair.src_fd, &in, pair.dst_fd, &out, length - done, 0);
        if (n < 0) {
            if (errno == EINTR) continue;
            return sys_error("copy_file_range");
        }
        if (n == 0) break;  // the source chunk ends here
        done += static_cast<uint64_t>(n);
    }
    // Past the source's end the file reads as zeros: so must the copy.
    if (done < length &&
        ::fallocate(pair.dst_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(dst_offset + done),
                    static_cast<off_t>(length - done)) != 0)
        return sys_error("fallocate PUNCH_HOLE");
    return ok_status();
}

}  // namespace pfs
