// Structured logging: one line per event on stderr (journald captures it),
//   2026-11-22T10:47:01.123Z INFO pfs-mgmtd: node registered node_id=3 alias="s1"
#pragma once

#include <concepts>
#include <initializer_list>
#include <string>
#include <string_view>

namespace pfs::log {

enum class Level { debug = 0, info = 1, warn = 2, error = 3 };

struct Field {
    std::string_view key;
    std::string value;

    Field(std::string_view k, std::string_view v) : key(k), value(v) {}
    Field(std::string_view k, const char* v) : key(k), value(v) {}
    Field(std::string_view k, const std::string& v) : key(k), value(v) {}
    Field(std::string_view k, std::integral auto v) : key(k), value(std::to_string(v)) {}
};

void set_component(std::string_view name);
void set_level(Level level);
bool parse_level(std::string_view text, Level& level);
bool enabled(Level level);
void write(Level level, std::string_view message, std::initializer_list<Field> fields = {});

inline void debug(std::string_view m, std::initializer_list<Field> f = {}) { write(Level::debug, m, f); }
inline void info(std::string_view m, std::initializer_list<Field> f = {}) { write(Level::info, m, f); }
inline void warn(std::string_view m, std::initializer_list<Field> f = {}) { write(Level::warn, m, f); }
inline void error(std::string_view m, std::initializer_list<Field> f = {}) { write(Level::error, m, f); }

}  // namespace pfs::log
