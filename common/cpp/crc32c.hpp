// CRC-32C (Castagnoli, polynomial 0x1EDC6F41 reflected as 0x82F63B78), the
// checksum of iSCSI, ext4 metadata and LevelDB: stronger than CRC-32 at
// catching the burst errors of torn writes, and cheap in software.
//
// Portable slicing-by-8 (about 1-2 GB/s): journals and snapshots checksum
// metadata, far from the disk's speed limit, so no SSE4.2 path for now.
#pragma once

#include <cstdint>
#include <span>

namespace pfs {

// Continues a checksum: crc32c_extend(crc32c(a), b) == crc32c(a followed by b).
uint32_t crc32c_extend(uint32_t crc, std::span<const uint8_t> data);

inline uint32_t crc32c(std::span<const uint8_t> data) { return crc32c_extend(0, data); }

}  // namespace pfs
