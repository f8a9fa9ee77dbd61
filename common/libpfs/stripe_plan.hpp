// Cuts a byte range of a striped file into the pieces each storage target
// holds, so a client issues one request per piece, all at once.
#pragma once

#include <cstdint>
#include <vector>

#include "result.hpp"
#include "stripe_layout.hpp"

extern "C" {
#include "pfs_stripe.h"
}

namespace pfs::client {

using StripeLayout = pfs::StripeLayout;

struct Piece {
    uint32_t target_index = 0;  // into StripeLayout::targets
    uint64_t chunk_offset = 0;  // in that target's chunk file
    uint64_t file_offset = 0;
    uint32_t length = 0;
};

Status check_layout(const StripeLayout& layout);

// Pieces of [offset, offset + length), in file order. Consecutive chunks on
// the same target are separate pieces (they are not adjacent in the chunk
// file unless there is one target); no piece exceeds max_piece bytes.
std::vector<Piece> plan_io(const StripeLayout& layout, uint64_t offset, uint64_t length, uint32_t max_piece);

// The part of a file range one target holds: one range of its chunk file.
struct ChunkRange {
    uint32_t target_index = 0;
    uint64_t offset = 0;  // in the chunk file
    uint64_t length = 0;
};

// The chunk file ranges of [offset, offset + length), one per target that
// holds any of it, in target order.
std::vector<ChunkRange> chunk_ranges(const StripeLayout& layout, uint64_t offset, uint64_t length);

// The chunk file size each target must have for a file of file_size bytes.
std::vector<uint64_t> target_sizes(const StripeLayout& layout, uint64_t file_size);

}  // namespace pfs::client
