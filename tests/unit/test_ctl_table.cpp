// pfs-ctl's table printer and number formatting. The unit-test binary does
// not link pfs-ctl, so its (standard-library-only) source is compiled here.
#include "../../utils/ctl/table.cpp"

#include <catch2/catch.hpp>

using namespace pfs::ctl;

TEST_CASE("ctl table: columns as wide as their widest cell, numbers right-aligned", "[ctl]") {
    Table t({{"ID", Align::right}, {"NAME"}, {"SIZE", Align::right}});
    t.add_row({"1", "default", "12.3GiB"});
    t.add_row({"100", "x", "0B"});
    CHECK(t.rows() == 2);
    CHECK(t.render() ==
          " ID  NAME        SIZE\n"
          "  1  default  12.3GiB\n"
          "100  x             0B\n");
}

TEST_CASE("ctl table: no trailing blanks, missing cells empty, extra cells dropped", "[ctl]") {
    Table t({{"A"}, {"LONG-HEADER"}});
    t.add_row({"wide-cell"});
    t.add_row({"b", "c", "dropped"});
    CHECK(t.render() ==
          "A          LONG-HEADER\n"
          "wide-cell\n"
          "b          c\n");
}

TEST_CASE("ctl table: header only when there are no rows", "[ctl]") {
    Table t({{"ID", Align::right}, {"TYPE"}});
    CHECK(t.render() == "ID  TYPE\n");
}

TEST_CASE("ctl format_bytes: binary units with one decimal", "[ctl]") {
    CHECK(format_bytes(0) == "0B");
    CHECK(format_bytes(1023) == "1023B");
    CHECK(format_bytes(1024) == "1.0KiB");
    CHECK(format_bytes(1536) == "1.5KiB");
    CHECK(format_bytes(13207024435ull) == "12.3GiB");
    CHECK(format_bytes(7ull << 40) == "7.0TiB");
    // Rounding never prints a full unit: 1023.97 KiB is 1.0 MiB.
    CHECK(format_bytes(1048545) == "1.0MiB");
    CHECK(format_bytes(1048470) == "1023.9KiB");
    CHECK(format_bytes(UINT64_MAX) == "16.0EiB");
}

TEST_CASE("ctl format_count: decimal units", "[ctl]") {
    CHECK(format_count(0) == "0");
    CHECK(format_count(999) == "999");
    CHECK(format_count(1000) == "1.0k");
    CHECK(format_count(48000000) == "48.0M");
    CHECK(format_count(999960) == "1.0M");
    CHECK(format_count(1200000000) == "1.2G");
}

TEST_CASE("ctl format_percent: one decimal, '-' without a total", "[ctl]") {
    CHECK(format_percent(0, 0) == "-");
    CHECK(format_percent(1, 8) == "12.5%");
    CHECK(format_percent(5, 5) == "100.0%");
    CHECK(format_percent(0, 5) == "0.0%");
    CHECK(format_percent(UINT64_MAX / 3, UINT64_MAX) == "33.3%");
}

TEST_CASE("ctl format_age_ms: seconds with a decimal, then minutes, hours, days", "[ctl]") {
    CHECK(format_age_ms(0) == "0.0s");
    CHECK(format_age_ms(400) == "0.4s");
    CHECK(format_age_ms(449) == "0.4s");
    CHECK(format_age_ms(59940) == "59.9s");
    CHECK(format_age_ms(59950) == "1m00s");
    CHECK(format_age_ms(303000) == "5m03s");
    CHECK(format_age_ms(7800000) == "2h10m");
    CHECK(format_age_ms(3ull * 86400000 + 4 * 3600000) == "3d04h");
}
