// pfs-meta's callback table (which clients to tell when an entry changes)
// and the wire form of the INVALIDATE notice.
#include <catch2/catch.hpp>

#include <algorithm>

#include "callbacks.hpp"
#include "wire.hpp"

using namespace pfs;
using namespace pfs::meta;

namespace {

const pfs_entry_id kDir{1, 1, 0};
const pfs_entry_id kFile{77, 1, 3};

std::vector<uint64_t> sorted(std::vector<uint64_t> v) {
    std::sort(v.begin(), v.end());
    return v;
}

}  // namespace

TEST_CASE("a change is told to every other client that watched the entry, once", "[callbacks]") {
    Callbacks cb;
    cb.watch(10, kFile);
    cb.watch(11, kFile);
    cb.watch(11, kFile);  // twice: still one notice
    cb.watch(12, kDir);
    CHECK(cb.size() == 3);

    CHECK(sorted(cb.changed(kFile, 12)) == std::vector<uint64_t>{10, 11});
    // Told once: the next change needs a new answer first.
    CHECK(cb.changed(kFile, 12).empty());
    cb.watch(10, kFile);
    // The client that changed it (12) watches it now, as 10 does again.
    CHECK(sorted(cb.changed(kFile, 0)) == std::vector<uint64_t>{10, 12});
    // Other entries are not affected.
    CHECK(cb.changed(kDir, 0) == std::vector<uint64_t>{12});
    CHECK(cb.size() == 0);
}

TEST_CASE("the client that made a change is not told and watches the entry from then on", "[callbacks]") {
    Callbacks cb;
    cb.watch(10, kFile);
    cb.watch(11, kFile);
    CHECK(cb.changed(kFile, 10) == std::vector<uint64_t>{11});
    CHECK(cb.size() == 1);
    CHECK(cb.changed(kFile, 11) == std::vector<uint64_t>{10});
    CHECK(cb.size() == 1);
    // A directory a client only changed (it never looked it up): the
    // client still hears of the next change by another.
    CHECK(cb.changed(kDir, 13).empty());
    CHECK(cb.changed(kDir, 14) == std::vector<uint64_t>{13});
    // Client 0 (no session) is never recorded.
    cb.watch(0, kDir);
    CHECK(cb.changed(kFile, 0) == std::vector<uint64_t>{11});
    CHECK(cb.changed(kDir, 0) == std::vector<uint64_t>{14});
    CHECK(cb.size() == 0);
}

TEST_CASE("a removed entry is forgotten with all its watches", "[callbacks]") {
    Callbacks cb;
    cb.watch(10, kFile);
    cb.watch(11, kFile);
    cb.watch(10, kDir);
    cb.forget(kFile);
    CHECK(cb.size() == 1);
    CHECK(cb.changed(kFile, 0).empty());
    cb.forget(kFile);  // twice: nothing left to forget
    CHECK(cb.changed(kDir, 0) == std::vector<uint64_t>{10});
}

TEST_CASE("a full callback table forgets everything rather than grow, and counts it", "[callbacks]") {
    Callbacks cb(4);
    for (uint64_t ino = 1; ino <= 4; ++ino) cb.watch(5, pfs_entry_id{ino, 1, 0});
    CHECK(cb.size() == 4);
    CHECK(cb.resets() == 0);
    cb.watch(6, kFile);
    CHECK(cb.resets() == 1);
    CHECK(cb.size() == 1);
    CHECK(cb.changed(pfs_entry_id{1, 1, 0}, 0).empty());
    CHECK(cb.changed(kFile, 0) == std::vector<uint64_t>{6});
    // A change's new watch for its author fills the table the same way.
    for (uint64_t ino = 1; ino <= 4; ++ino) cb.watch(5, pfs_entry_id{ino, 1, 0});
    CHECK(cb.changed(kFile, 7).empty());
    CHECK(cb.resets() == 2);
    CHECK(cb.size() == 1);
}

TEST_CASE("a listing's watches fit only while the table stays at most half full", "[callbacks]") {
    Callbacks cb(8);
    CHECK(cb.has_room(4));
    CHECK_FALSE(cb.has_room(5));
    for (uint64_t ino = 1; ino <= 3; ++ino) cb.watch(5, pfs_entry_id{ino, 1, 0});
    CHECK(cb.has_room(1));
    CHECK_FALSE(cb.has_room(2));
    cb.changed(pfs_entry_id{1, 1, 0}, 0);  // its watch ends
    CHECK(cb.has_room(2));
}

TEST_CASE("INVALIDATE notices round-trip and refuse bad counts", "[callbacks][codec]") {
    pfs_invalidate m{2, {kDir, kFile}};
    auto bytes = encode(pfs_x_invalidate, m);
    REQUIRE(bytes);
    auto back = decode(*bytes, pfs_x_invalidate);
    REQUIRE(back);
    CHECK(back->count == 2);
    CHECK(back->ids[1].ino == kFile.ino);
    CHECK(back->ids[1].generation == kFile.generation);

    Bytes empty{0, 0, 0, 0};
    CHECK_FALSE(decode(empty, pfs_x_invalidate));
    Bytes too_many{PFS_INVALIDATE_MAX + 1, 0, 0, 0};
    too_many.resize(4 + 16 * (PFS_INVALIDATE_MAX + 1));
    CHECK_FALSE(decode(too_many, pfs_x_invalidate));
}
