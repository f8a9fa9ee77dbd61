// st_blocks kept by the metadata namespace: known for new files, unknown
// after a change until a count over the targets ends, and a count that
// overlapped a change is not kept.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include "namespace_test_util.hpp"

using namespace pfs;
using namespace pfs::meta;
using namespace pfs::test;

namespace {

void set_size(Fs& fs, const pfs_entry_id& id, uint64_t size) {
    AttrChanges c;
    c.size = size;
    REQUIRE(fs.ns.setattr(id, c, fs.tick()));
}

}  // namespace

TEST_CASE("a new file has no blocks, known without a count", "[namespace][blocks]") {
    Fs fs;
    auto f = fs.file(fs.root(), "f");
    CHECK(fs.stat(f).blocks == 0);
    CHECK_FALSE(fs.ns.start_blocks_count(f));
    CHECK(fs.stat(fs.root()).blocks == 0);  // directories: unused
}

TEST_CASE("a change makes st_blocks unknown until a count ends", "[namespace][blocks]") {
    Fs fs;
    auto f = fs.file(fs.root(), "f");

    SECTION("a size set (a writer's report or a truncate)") { set_size(fs, f, 4096); }
    SECTION("an mtime set alone (a writer's report at the same size)") {
        AttrChanges c;
        c.mtime = at(500);
        REQUIRE(fs.ns.setattr(f, c, fs.tick()));
    }
    SECTION("a client that ended with the file open") { fs.ns.blocks_changed(f); }

    CHECK(fs.stat(f).blocks == PFS_BLOCKS_UNKNOWN);
    auto count = fs.ns.start_blocks_count(f);
    REQUIRE(count);
    CHECK(count->layout == *fs.ns.layout(f));
    // One count at a time.
    CHECK_FALSE(fs.ns.start_blocks_count(f));
    fs.ns.end_blocks_count(f, count->epoch, 8);
    CHECK(fs.stat(f).blocks == 8);
    CHECK(fs.stat(fs.root(), "f").blocks == 8);
    CHECK_FALSE(fs.ns.start_blocks_count(f));
}

TEST_CASE("a count that overlapped a change is not kept", "[namespace][blocks]") {
    Fs fs;
    auto f = fs.file(fs.root(), "f");
    set_size(fs, f, 1 << 20);
    auto count = fs.ns.start_blocks_count(f);
    REQUIRE(count);
    set_size(fs, f, 2 << 20);
    fs.ns.end_blocks_count(f, count->epoch, 2048);
    CHECK(fs.stat(f).blocks == PFS_BLOCKS_UNKNOWN);
    // The next count, started after the change, is kept.
    auto again = fs.ns.start_blocks_count(f);
    REQUIRE(again);
    CHECK(again->epoch != count->epoch);
    fs.ns.end_blocks_count(f, again->epoch, 4096);
    CHECK(fs.stat(f).blocks == 4096);
}

TEST_CASE("a failed count leaves st_blocks unknown and may be tried again", "[namespace][blocks]") {
    Fs fs;
    auto f = fs.file(fs.root(), "f");
    set_size(fs, f, 100);
    auto count = fs.ns.start_blocks_count(f);
    REQUIRE(count);
    fs.ns.end_blocks_count(f, count->epoch, std::nullopt);
    CHECK(fs.stat(f).blocks == PFS_BLOCKS_UNKNOWN);
    CHECK(fs.ns.start_blocks_count(f));
}

TEST_CASE("an open file is not counted", "[namespace][blocks]") {
    Fs fs;
    auto f = fs.file(fs.root(), "f");
    REQUIRE(fs.ns.open(f));
    set_size(fs, f, 100);
    CHECK_FALSE(fs.ns.start_blocks_count(f));
    REQUIRE(fs.ns.close(f));
    CHECK(fs.ns.start_blocks_count(f));
}

TEST_CASE("st_blocks is not persisted: a restored namespace counts again", "[namespace][blocks]") {
    Fs fs;
    auto f = fs.file(fs.root(), "f");
    auto snap = fs.ns.snapshot();
    REQUIRE(snap);
    auto back = Namespace::restore(*snap);
    REQUIRE(back);
    auto a = back->getattr(f);
    REQUIRE(a);
    CHECK(a->blocks == PFS_BLOCKS_UNKNOWN);
    CHECK(back->start_blocks_count(f));
}

TEST_CASE("st_blocks of other entries and gone files", "[namespace][blocks]") {
    Fs fs;
    auto d = fs.dir(fs.root(), "d");
    CHECK_FALSE(fs.ns.start_blocks_count(d));
    fs.ns.blocks_changed(d);  // no effect, no crash
    CHECK(fs.stat(d).blocks == 0);
    auto f = fs.file(fs.root(), "f");
    set_size(fs, f, 10);
    auto count = fs.ns.start_blocks_count(f);
    REQUIRE(count);
    REQUIRE(fs.ns.unlink(fs.root(), "f", fs.tick()));
    fs.ns.end_blocks_count(f, count->epoch, 1);  // gone: ignored
    CHECK_FALSE(fs.ns.getattr(f));
}
