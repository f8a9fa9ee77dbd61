#include "state_file.hpp"

#include <catch2/catch.hpp>

#include "temp_dir.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <sys/stat.h>

namespace fs = std::filesystem;
using pfs::state_file::LoadStatus;
using nlohmann::json;

using pfs::test::TempDir;

namespace {

std::string read_file(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_file(const fs::path& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
    REQUIRE(out.good());
}

json sample() {
    return json{{"nodes", json::array({{{"id", 1}, {"alias", "alpha"}}, {{"id", 2}}})},
                {"next_id", 3},
                {"ratio", 0.1},
                {"big", 18446744073709551615ULL},
                {"text", "caf\xc3\xa9 \"quoted\""}};
}

}  // namespace

TEST_CASE("state_file: save then load returns the value", "[state_file]") {
    TempDir dir;
    fs::path path = dir.path() / "mgmtd.json";
    auto st = pfs::state_file::save(path, sample());
    REQUIRE(st.ok());

    auto loaded = pfs::state_file::load(path);
    REQUIRE(loaded.status == LoadStatus::ok);
    CHECK(loaded.value == sample());
    CHECK(loaded.error.empty());

    json doc = json::parse(read_file(path));
    CHECK(doc["format"] == "pfs-state");
    CHECK(doc["version"] == 1);
    CHECK(doc["sha256"].get<std::string>().size() == 64);
    CHECK(read_file(path).find("\n  \"format\"") != std::string::npos);  // pretty-printed

    CHECK(fs::status(path).permissions() ==
          (fs::perms::owner_read | fs::perms::owner_write));
    CHECK_FALSE(fs::exists(path.string() + ".tmp"));

    // A second save replaces the first.
    REQUIRE(pfs::state_file::save(path, json{{"next_id", 4}}).ok());
    loaded = pfs::state_file::load(path);
    REQUIRE(loaded.status == LoadStatus::ok);
    CHECK(loaded.value == json{{"next_id", 4}});
    CHECK_FALSE(fs::exists(path.string() + ".tmp"));
}

TEST_CASE("state_file: a missing file is reported as missing", "[state_file]") {
    TempDir dir;
    auto loaded = pfs::state_file::load(dir.path() / "absent.json");
    CHECK(loaded.status == LoadStatus::missing);
    CHECK(loaded.error.empty());
}

TEST_CASE("state_file: a truncated file is corrupt", "[state_file]") {
    TempDir dir;
    fs::path path = dir.path() / "s.json";
    REQUIRE(pfs::state_file::save(path, sample()).ok());
    std::string text = read_file(path);
    write_file(path, text.substr(0, text.size() / 2));

    auto loaded = pfs::state_file::load(path);
    CHECK(loaded.status == LoadStatus::corrupt);
    CHECK_THAT(loaded.error, Catch::Contains(path.string()));
    CHECK_THAT(loaded.error, Catch::Contains("refusing to start"));

    write_file(path, "");
    CHECK(pfs::state_file::load(path).status == LoadStatus::corrupt);
}

TEST_CASE("state_file: a changed byte inside the value fails the checksum", "[state_file]") {
    TempDir dir;
    fs::path path = dir.path() / "s.json";
    REQUIRE(pfs::state_file::save(path, sample()).ok());
    std::string text = read_file(path);
    auto pos = text.find("alpha");
    REQUIRE(pos != std::string::npos);
    text[pos] = 'A';
    write_file(path, text);

    auto loaded = pfs::state_file::load(path);
    CHECK(loaded.status == LoadStatus::corrupt);
    CHECK(loaded.error == "state file " + path.string() +
                              " is corrupt (checksum mismatch); refusing to start: restore it "
                              "from backup or remove it to start empty");
}

TEST_CASE("state_file: garbage and foreign JSON are corrupt", "[state_file]") {
    TempDir dir;
    fs::path path = dir.path() / "s.json";

    write_file(path, std::string("\x00\xff garbage \x01", 12));
    CHECK(pfs::state_file::load(path).status == LoadStatus::corrupt);

    write_file(path, R"({"nodes": []})");
    CHECK(pfs::state_file::load(path).status == LoadStatus::corrupt);

    write_file(path, "[1, 2, 3]");
    CHECK(pfs::state_file::load(path).status == LoadStatus::corrupt);

    write_file(path, R"({"format":"pfs-state","version":1,"value":{}})");
    CHECK(pfs::state_file::load(path).status == LoadStatus::corrupt);

    write_file(path, R"({"format":"pfs-state","version":1,"sha256":"00"})");
    CHECK(pfs::state_file::load(path).status == LoadStatus::corrupt);

    REQUIRE(pfs::state_file::save(path, sample()).ok());
    json doc = json::parse(read_file(path));
    doc["version"] = 2;
    write_file(path, doc.dump());
    auto loaded = pfs::state_file::load(path);
    CHECK(loaded.status == LoadStatus::corrupt);
    CHECK_THAT(loaded.error, Catch::Contains("version 2"));
}

TEST_CASE("state_file: reading a directory is an I/O error", "[state_file]") {
    TempDir dir;
    auto loaded = pfs::state_file::load(dir.path());
    CHECK(loaded.status == LoadStatus::io_error);
    CHECK_THAT(loaded.error, Catch::Contains(dir.path().string()));
}

TEST_CASE("state_file: saving into a missing directory fails", "[state_file]") {
    TempDir dir;
    fs::path path = dir.path() / "no-such-dir" / "s.json";
    auto st = pfs::state_file::save(path, sample());
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().code == -ENOENT);
    CHECK_THAT(st.error().message, Catch::Contains("No such file or directory"));
    CHECK_THAT(st.error().message, Catch::Contains("no-such-dir"));
}

TEST_CASE("state_file: a failed save keeps the old content", "[state_file]") {
    TempDir dir;
    fs::path path = dir.path() / "s.json";
    REQUIRE(pfs::state_file::save(path, json{{"generation", 1}}).ok());
    const std::string before = read_file(path);

    // A directory where the temporary file goes makes the open fail, even for root.
    fs::path tmp = path.string() + ".tmp";
    fs::create_directory(tmp);
    auto st = pfs::state_file::save(path, json{{"generation", 2}});
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().code == -EISDIR);
    CHECK_THAT(st.error().message, Catch::Contains(tmp.string()));
    CHECK(read_file(path) == before);
    CHECK(fs::is_directory(tmp));  // not ours to remove
    fs::remove(tmp);

    auto loaded = pfs::state_file::load(path);
    REQUIRE(loaded.status == LoadStatus::ok);
    CHECK(loaded.value == json{{"generation", 1}});
}

TEST_CASE("state_file: a full disk gives a clear error and keeps the old file", "[state_file]") {
    if (!fs::exists("/dev/full")) return;
    TempDir dir;
    fs::path path = dir.path() / "s.json";
    REQUIRE(pfs::state_file::save(path, json{{"generation", 1}}).ok());
    const std::string before = read_file(path);

    // Writes through a link to /dev/full fail with ENOSPC, as on a full file system.
    fs::path tmp = path.string() + ".tmp";
    fs::create_symlink("/dev/full", tmp);
    auto st = pfs::state_file::save(path, json{{"generation", 2}});
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().code == -ENOSPC);
    CHECK_THAT(st.error().message, Catch::Contains("No space left on device"));
    CHECK_THAT(st.error().message, Catch::Contains(path.string() + " was left unchanged"));
    CHECK(read_file(path) == before);
    CHECK_FALSE(fs::exists(fs::symlink_status(tmp)));
}

TEST_CASE("state_file: values that cannot be encoded are refused", "[state_file]") {
    TempDir dir;
    fs::path path = dir.path() / "s.json";
    auto st = pfs::state_file::save(path, json{{"bad", std::string("\xff\xfe")}});
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().code == -EINVAL);
    CHECK_FALSE(fs::exists(path));
}
