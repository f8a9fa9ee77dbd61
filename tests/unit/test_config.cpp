#include "config.hpp"
#include "log.hpp"
#include "pfs_proto.h"

#include <catch2/catch.hpp>

#include "temp_dir.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

using pfs::test::TempDir;

namespace {

void write_file(const fs::path& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
    REQUIRE(out.good());
}

pfs::ParseOutcome parse(pfs::Options& opts, std::vector<std::string> args) {
    std::vector<const char*> argv{"pfs-test"};
    for (const auto& a : args) argv.push_back(a.c_str());
    return opts.parse(static_cast<int>(argv.size()), argv.data());
}

// A program named so that its default config file (/etc/pfs/<name>.conf) cannot exist.
pfs::Options make_options() {
    pfs::Options opts("pfs-unit-test-no-such-program", "Test daemon.");
    opts.add()
        ("port", pfs::po::value<int>()->default_value(8000), "TCP port to listen on")
        ("alias", pfs::po::value<std::string>()->default_value("node"), "node alias")
        ("verbose-stats", pfs::po::bool_switch(), "print more statistics");
    return opts;
}

using Kind = pfs::ParseOutcome::Kind;

}  // namespace

TEST_CASE("config: defaults apply without arguments or config file", "[config]") {
    auto opts = make_options();
    auto out = parse(opts, {});
    REQUIRE(out.kind == Kind::run);
    CHECK(opts.get<int>("port") == 8000);
    CHECK(opts.get<std::string>("alias") == "node");
    CHECK_FALSE(opts.has("port"));
    CHECK(opts.config_file().empty());
    CHECK(opts.default_config_file() == "/etc/pfs/unit-test-no-such-program.conf");
}

TEST_CASE("config: default config path strips the pfs- prefix", "[config]") {
    CHECK(pfs::Options("pfs-mgmtd", "").default_config_file() == "/etc/pfs/mgmtd.conf");
    CHECK(pfs::Options("tool", "").default_config_file() == "/etc/pfs/tool.conf");
}

TEST_CASE("config: command line values", "[config]") {
    auto opts = make_options();
    auto out = parse(opts, {"--port", "9001", "--alias=s1", "--verbose-stats"});
    REQUIRE(out.kind == Kind::run);
    CHECK(opts.get<int>("port") == 9001);
    CHECK(opts.get<std::string>("alias") == "s1");
    CHECK(opts.get<bool>("verbose-stats"));
    CHECK(opts.has("port"));
}

TEST_CASE("config: file values, and the command line wins over the file", "[config]") {
    TempDir dir;
    fs::path conf = dir.path() / "test.conf";
    write_file(conf, "# a comment\nport = 7000\nalias = from-file\n");

    auto opts = make_options();
    auto out = parse(opts, {"--config", conf.string()});
    REQUIRE(out.kind == Kind::run);
    CHECK(opts.get<int>("port") == 7000);
    CHECK(opts.get<std::string>("alias") == "from-file");
    CHECK(opts.has("alias"));
    CHECK(opts.config_file() == conf.string());

    auto opts2 = make_options();
    out = parse(opts2, {"--config", conf.string(), "--port", "7500"});
    REQUIRE(out.kind == Kind::run);
    CHECK(opts2.get<int>("port") == 7500);
    CHECK(opts2.get<std::string>("alias") == "from-file");
}

TEST_CASE("config: unknown option on the command line is an error naming it", "[config]") {
    auto opts = make_options();
    auto out = parse(opts, {"--bogus-option", "1"});
    REQUIRE(out.kind == Kind::error);
    CHECK_THAT(out.message, Catch::Contains("bogus-option"));
}

TEST_CASE("config: option prefixes are not guessed", "[config]") {
    auto opts = make_options();
    auto out = parse(opts, {"--por", "1"});
    REQUIRE(out.kind == Kind::error);
    CHECK_THAT(out.message, Catch::Contains("por"));
}

TEST_CASE("config: unknown option in the file names the option and the file", "[config]") {
    TempDir dir;
    fs::path conf = dir.path() / "test.conf";
    write_file(conf, "port = 7000\nno-such-key = 3\n");
    auto opts = make_options();
    auto out = parse(opts, {"--config", conf.string()});
    REQUIRE(out.kind == Kind::error);
    CHECK_THAT(out.message, Catch::Contains("no-such-key"));
    CHECK_THAT(out.message, Catch::Contains(conf.string()));
}

TEST_CASE("config: bad integer values name the option", "[config]") {
    auto opts = make_options();
    auto out = parse(opts, {"--port", "abc"});
    REQUIRE(out.kind == Kind::error);
    CHECK_THAT(out.message, Catch::Contains("port"));
    CHECK_THAT(out.message, Catch::Contains("abc"));

    TempDir dir;
    fs::path conf = dir.path() / "test.conf";
    write_file(conf, "port = twelve\n");
    auto opts2 = make_options();
    out = parse(opts2, {"--config", conf.string()});
    REQUIRE(out.kind == Kind::error);
    CHECK_THAT(out.message, Catch::Contains("port"));
    CHECK_THAT(out.message, Catch::Contains(conf.string()));
}

TEST_CASE("config: an explicit config file that is missing is an error", "[config]") {
    TempDir dir;
    fs::path conf = dir.path() / "absent.conf";
    auto opts = make_options();
    auto out = parse(opts, {"--config", conf.string()});
    REQUIRE(out.kind == Kind::error);
    CHECK(out.message ==
          "cannot read config file " + conf.string() + ": No such file or directory");

    auto opts2 = make_options();
    out = parse(opts2, {"--config", dir.path().string()});
    REQUIRE(out.kind == Kind::error);
    CHECK_THAT(out.message, Catch::Contains("Is a directory"));
}

TEST_CASE("config: --help lists every option with defaults and descriptions", "[config]") {
    auto opts = make_options();
    auto out = parse(opts, {"--help"});
    REQUIRE(out.kind == Kind::help);
    CHECK(out.message == opts.help());
    for (const char* s : {"Usage: pfs-unit-test-no-such-program", "Test daemon.", "--help",
                          "-h", "--config", "/etc/pfs/unit-test-no-such-program.conf",
                          "--log-level", "(=info)", "--port", "(=8000)", "TCP port to listen on",
                          "--alias", "(=node)", "node alias", "--verbose-stats"}) {
        CHECK_THAT(out.message, Catch::Contains(s));
    }
    auto opts2 = make_options();
    CHECK(parse(opts2, {"-h"}).kind == Kind::help);
}

TEST_CASE("config: --log-level is validated and applied", "[config]") {
    auto opts = make_options();
    auto out = parse(opts, {"--log-level", "loud"});
    REQUIRE(out.kind == Kind::error);
    CHECK_THAT(out.message, Catch::Contains("loud"));
    CHECK_THAT(out.message, Catch::Contains("log-level"));

    auto opts2 = make_options();
    REQUIRE(parse(opts2, {"--log-level", "error"}).kind == Kind::run);
    CHECK_FALSE(pfs::log::enabled(pfs::log::Level::warn));
    CHECK(pfs::log::enabled(pfs::log::Level::error));

    TempDir dir;
    fs::path conf = dir.path() / "test.conf";
    write_file(conf, "log-level = debug\n");
    auto opts3 = make_options();
    REQUIRE(parse(opts3, {"--config", conf.string()}).kind == Kind::run);
    CHECK(pfs::log::enabled(pfs::log::Level::debug));

    pfs::log::set_level(pfs::log::Level::info);
}

TEST_CASE("config: positional words are rejected unless declared", "[config]") {
    auto opts = make_options();
    auto out = parse(opts, {"stray"});
    REQUIRE(out.kind == Kind::error);
    CHECK_THAT(out.message, Catch::Contains("stray"));
}

TEST_CASE("config: positional words are collected, with options after them", "[config]") {
    pfs::Options opts("pfs-ctl-unit-test", "Admin tool.");
    opts.add()
        ("json", pfs::po::bool_switch(), "JSON output")
        ("words", pfs::po::value<std::vector<std::string>>(), "command words");
    opts.positional("words", -1);
    auto out = parse(opts, {"target", "list", "--json", "--log-level", "warn", "extra"});
    REQUIRE(out.kind == Kind::run);
    CHECK(opts.get<std::vector<std::string>>("words") ==
          std::vector<std::string>{"target", "list", "extra"});
    CHECK(opts.get<bool>("json"));
    CHECK_THAT(opts.help(), Catch::Contains("<words>..."));
    pfs::log::set_level(pfs::log::Level::info);

    pfs::Options one("pfs-one-unit-test", "");
    one.add()("name", pfs::po::value<std::string>(), "a name");
    one.positional("name", 1);
    REQUIRE(parse(one, {"alpha"}).kind == Kind::run);
    CHECK(one.get<std::string>("name") == "alpha");
    auto again = parse(one, {"alpha", "beta"});
    CHECK(again.kind == Kind::error);
    CHECK_THAT(again.message, Catch::Contains("too many"));
}

TEST_CASE("config: --version prints the program, the version and the protocol", "[config]") {
    for (const char* flag : {"--version", "-V"}) {
        auto opts = make_options();
        auto out = parse(opts, {flag});
        REQUIRE(out.kind == Kind::version);
        CHECK(out.message == "pfs-unit-test-no-such-program " + std::string(pfs::version()) + " (protocol " +
                                 std::to_string(PFS_PROTO_VERSION) + ")\n");
    }
    CHECK_FALSE(pfs::version().empty());
}
