#include "log.hpp"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>

namespace pfs::log {
namespace {

std::atomic<int> g_level{static_cast<int>(Level::info)};
std::string g_component = "pfs";
std::mutex g_mutex;

const char* level_name(Level level) {
    switch (level) {
        case Level::debug: return "DEBUG";
        case Level::info: return "INFO";
        case Level::warn: return "WARN";
        case Level::error: return "ERROR";
    }
    return "?";
}

bool needs_quotes(std::string_view v) {
    if (v.empty()) return true;
    for (char c : v)
        if (c == ' ' || c == '"' || c == '=' || static_cast<unsigned char>(c) < 0x20) return true;
    return false;
}

void append_value(std::string& out, std::string_view v) {
    if (!needs_quotes(v)) {
        out += v;
        return;
    }
    out += '"';
    for (char c : v) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (static_cast<unsigned char>(c) < 0x20) {
            char esc[8];
            std::snprintf(esc, sizeof esc, "\\x%02x", static_cast<unsigned char>(c));
            out += esc;
        } else {
            out += c;
        }
    }
    out += '"';
}

std::string timestamp() {
    using namespace std::chrono;
    auto now = system_clock::now();
    std::time_t secs = system_clock::to_time_t(now);
    auto millis = duration_cast<milliseconds>(now.time_since_epoch()).count() % 1000;
    std::tm tm{};
    gmtime_r(&secs, &tm);
    char buf[96];
    std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                  tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(millis));
    return buf;
}

}  // namespace

void set_component(std::string_view name) {
    std::lock_guard lock(g_mutex);
    g_component = name;
}

void set_level(Level level) { g_level = static_cast<int>(level); }

bool parse_level(std::string_view text, Level& level) {
    for (Level l : {Level::debug, Level::info, Level::warn, Level::error}) {
        std::string_view name = level_name(l);
        if (text.size() == name.size()) {
            bool same = true;
            for (size_t i = 0; i < text.size(); ++i)
                if ((text[i] | 0x20) != (name[i] | 0x20)) same = false;
            if (same) {
                level = l;
                return true;
            }
        }
    }
    return false;
}

bool enabled(Level level) { return static_cast<int>(level) >= g_level.load(std::memory_order_relaxed); }

void write(Level level, std::string_view message, std::initializer_list<Field> fields) {
    if (!enabled(level)) return;
    std::lock_guard lock(g_mutex);
    std::string line = timestamp();
    line += ' ';
    line += level_name(level);
    line += ' ';
    line += g_component;
    line += ": ";
    line += message;
    for (const Field& f : fields) {
        line += ' ';
        line += f.key;
        line += '=';
        append_value(line, f.value);
    }
    line += '\n';
    std::fwrite(line.data(), 1, line.size(), stderr);
    std::fflush(stderr);
}

}  // namespace pfs::log
