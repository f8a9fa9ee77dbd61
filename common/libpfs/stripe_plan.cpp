#include "stripe_plan.hpp"

#include <algorithm>

namespace pfs::client {

Status check_layout(const StripeLayout& layout) {
    if (pfs_stripe_check(layout.chunk_size, static_cast<uint32_t>(layout.targets.size())) != 0)
        return Error{-EINVAL, "invalid stripe layout: chunk size must be a power of two in [64 KiB, 1 GiB] "
                              "and there must be 1.." + std::to_string(PFS_STRIPE_TARGETS_MAX) + " targets"};
    return ok_status();
}

std::vector<Piece> plan_io(const StripeLayout& layout, uint64_t offset, uint64_t length, uint32_t max_piece) {
    std::vector<Piece> pieces;
    const auto n = static_cast<uint32_t>(layout.targets.size());
    const uint64_t end = offset + length;
    while (offset < end) {
        uint64_t len = std::min<uint64_t>(end - offset, max_piece);
        Piece piece{0, offset, offset, 0};
        // With one target the chunk file is the file: only max_piece cuts.
        if (n > 1) {
            pfs_stripe_pos pos;
            pfs_stripe_locate(layout.chunk_size, n, offset, &pos);
            piece.target_index = pos.target_index;
            piece.chunk_offset = pos.chunk_file_offset;
            len = std::min<uint64_t>(len, layout.chunk_size - pos.offset_in_chunk);
        }
        piece.length = static_cast<uint32_t>(len);
        pieces.push_back(piece);
        offset += len;
    }
    return pieces;
}

std::vector<ChunkRange> chunk_ranges(const StripeLayout& layout, uint64_t offset, uint64_t length) {
    std::vector<ChunkRange> ranges;
    const auto n = static_cast<uint32_t>(layout.targets.size());
    for (uint32_t i = 0; i < n; ++i) {
        const uint64_t from = pfs_stripe_target_from(layout.chunk_size, n, i, offset);
        const uint64_t to = pfs_stripe_target_from(layout.chunk_size, n, i, offset + length);
        if (to > from) ranges.push_back(ChunkRange{i, from, to - from});
    }
    return ranges;
}

std::vector<uint64_t> target_sizes(const StripeLayout& layout, uint64_t file_size) {
    std::vector<uint64_t> sizes;
    const auto n = static_cast<uint32_t>(layout.targets.size());
    for (uint32_t i = 0; i < n; ++i) sizes.push_back(pfs_stripe_target_size(layout.chunk_size, n, i, file_size));
    return sizes;
}

}  // namespace pfs::client
