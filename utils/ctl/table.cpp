#include "table.hpp"

#include <algorithm>
#include <array>
#include <cstdio>

namespace pfs::ctl {
namespace {

// value / 1000^n or value / 1024^n with one decimal, moving to the next unit
// where rounding would print a full unit ("1024.0KiB" becomes "1.0MiB").
template <size_t N>
std::string scaled(uint64_t value, double base, const std::array<const char*, N>& units) {
    if (value < base) return std::to_string(value) + units[0];
    double v = static_cast<double>(value);
    size_t unit = 0;
    while (unit + 1 < N && v >= base - 0.05) {
        v /= base;
        ++unit;
    }
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f%s", v, units[unit]);
    return buf;
}

void pad(std::string& line, const std::string& cell, size_t width, Align align) {
    size_t fill = width > cell.size() ? width - cell.size() : 0;
    if (align == Align::right) line.append(fill, ' ');
    line += cell;
    if (align == Align::left) line.append(fill, ' ');
}

}  // namespace

Table::Table(std::vector<Column> columns) : columns_(std::move(columns)) {}

void Table::add_row(std::vector<std::string> cells) {
    cells.resize(columns_.size());
    rows_.push_back(std::move(cells));
}

std::string Table::render() const {
    std::vector<size_t> widths;
    for (const auto& c : columns_) widths.push_back(c.header.size());
    for (const auto& row : rows_)
        for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());

    std::string out;
    auto emit = [&](auto cell_of) {
        std::string line;
        for (size_t i = 0; i < columns_.size(); ++i) {
            if (i > 0) line += "  ";
            pad(line, cell_of(i), widths[i], columns_[i].align);
        }
        line.erase(line.find_last_not_of(' ') + 1);
        out += line;
        out += '\n';
    };
    emit([&](size_t i) -> const std::string& { return columns_[i].header; });
    for (const auto& row : rows_) emit([&](size_t i) -> const std::string& { return row[i]; });
    return out;
}

std::string format_bytes(uint64_t bytes) {
    static constexpr std::array<const char*, 7> units{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    return scaled(bytes, 1024.0, units);
}

std::string format_count(uint64_t count) {
    static constexpr std::array<const char*, 7> units{"", "k", "M", "G", "T", "P", "E"};
    return scaled(count, 1000.0, units);
}

std::string format_percent(uint64_t part, uint64_t total) {
    if (total == 0) return "-";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f%%", 100.0 * static_cast<double>(part) / static_cast<double>(total));
    return buf;
}

std::string format_age_ms(uint64_t ms) {
    char buf[48];
    uint64_t tenths = (ms + 50) / 100;
    if (tenths < 600) {
        std::snprintf(buf, sizeof buf, "%llu.%llus", static_cast<unsigned long long>(tenths / 10),
                      static_cast<unsigned long long>(tenths % 10));
        return buf;
    }
    auto s = static_cast<unsigned long long>((ms + 500) / 1000);
    if (s < 3600) std::snprintf(buf, sizeof buf, "%llum%02llus", s / 60, s % 60);
    else if (s < 86400) std::snprintf(buf, sizeof buf, "%lluh%02llum", s / 3600, s % 3600 / 60);
    else std::snprintf(buf, sizeof buf, "%llud%02lluh", s / 86400, s % 86400 / 3600);
    return buf;
}

}  // namespace pfs::ctl
