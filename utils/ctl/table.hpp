// Plain-text output of pfs-ctl: aligned tables with a header row, and the
// human-readable forms of sizes, counts, percentages and ages. Standard
// library only, so the unit tests can compile it on its own.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pfs::ctl {

enum class Align { left, right };

struct Column {
    std::string header;
    Align align = Align::left;
};

class Table {
public:
    explicit Table(std::vector<Column> columns);

    // One cell per column; missing cells are empty, extra cells are dropped.
    void add_row(std::vector<std::string> cells);
    size_t rows() const { return rows_.size(); }

    // The header row and every row, each column as wide as its widest cell,
    // columns two spaces apart, no trailing blanks, each line ending in '\n'.
    std::string render() const;

private:
    std::vector<Column> columns_;
    std::vector<std::vector<std::string>> rows_;
};

// Binary units with one decimal: "0B", "512B", "1.0KiB", "12.3GiB".
std::string format_bytes(uint64_t bytes);
// Decimal units for counts such as inodes: "999", "12.3k", "4.0M".
std::string format_count(uint64_t count);
// part/total with one decimal, "12.5%"; "-" when total is 0 (nothing reported).
std::string format_percent(uint64_t part, uint64_t total);
// An age: "0.4s", "59.9s", "5m03s", "2h10m", "3d04h".
std::string format_age_ms(uint64_t ms);

}  // namespace pfs::ctl
