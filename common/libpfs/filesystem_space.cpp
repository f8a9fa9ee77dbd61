// FileSystem's space operations: fallocate (allocate, punch, zero), SEEK_DATA
// / SEEK_HOLE and the space a file takes.
#include <sys/stat.h>

#include <algorithm>

#include "filesystem.hpp"

namespace pfs::client {

awaitable<Status> FileSystem::fallocate(OpenFile& file, uint32_t mode, uint64_t offset, uint64_t length) {
    if ((file.attr.mode & S_IFMT) != S_IFREG) co_return Error{-ENODEV, "not a regular file"};
    if (pfs_falloc_mode_check(mode) != 0)
        co_return Error{-EOPNOTSUPP, "fallocate mode not supported: PFS does KEEP_SIZE, PUNCH_HOLE (with KEEP_SIZE) "
                                     "and ZERO_RANGE"};
    if (length == 0 || offset > PFS_MAX_FILE_OFFSET || length > PFS_MAX_FILE_OFFSET - offset)
        co_return Error{length == 0 ? -EINVAL : -EFBIG, "fallocate range outside the file size limits"};
    // Our own writes beyond what the server knows count for the size.
    if (auto st = co_await report_size(file, SizeReport::lazy); !st) co_return st;
    auto attr = co_await attr_call(file.attr.id, PFS_MSG_FALLOCATE,
                                   encode(pfs_x_fallocate, pfs_fallocate{file.attr.id, mode, offset, length}));
    if (!attr) co_return attr.error();
    file.attr = *attr;
    co_return ok_status();
}

awaitable<Result<uint64_t>> FileSystem::seek(OpenFile& file, uint8_t what, uint64_t offset) {
    if (what != PFS_SEEK_DATA && what != PFS_SEEK_HOLE) co_return Error{-EINVAL, "not SEEK_DATA or SEEK_HOLE"};
    const uint64_t size = std::max<uint64_t>(file.attr.size, file.written_end);
    if (offset >= size) co_return Error{-ENXIO, "offset at or past the end of the file"};
    auto found = co_await with_layout(
        file, [&](const StripeLayout& layout) { return io_.seek(layout, file.attr.id, what, offset); });
    if (!found) co_return found.error();
    if (what == PFS_SEEK_HOLE) co_return std::min(found->value_or(size), size);
    if (!*found || **found >= size) co_return Error{-ENXIO, "no data at or after the offset"};
    co_return **found;
}

awaitable<Result<uint64_t>> FileSystem::allocated(OpenFile& file) {
    co_return co_await with_layout(file,
                                   [&](const StripeLayout& layout) { return io_.allocated(layout, file.attr.id); });
}

}  // namespace pfs::client
