// An entry id as an ordered map key (the C struct has no comparison).
#pragma once

#include <compare>
#include <cstdint>

extern "C" {
#include "pfs_proto.h"
}

namespace pfs::meta {

struct EntryKey {
    uint32_t node = 0;
    uint64_t ino = 0;
    uint32_t generation = 0;

    static EntryKey of(const pfs_entry_id& id) { return EntryKey{id.owner_node, id.ino, id.generation}; }
    pfs_entry_id id() const { return pfs_entry_id{ino, node, generation}; }
    auto operator<=>(const EntryKey&) const = default;
};

}  // namespace pfs::meta
