#include "fs_views.hpp"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <ctime>

#include "exit_status.hpp"

extern "C" {
#include "pfs_stripe.h"
}

namespace pfs::ctl {

const char* entry_type_name(uint32_t mode) {
    switch (mode & S_IFMT) {
        case S_IFREG: return "file";
        case S_IFDIR: return "directory";
        case S_IFLNK: return "symlink";
        case S_IFIFO: return "fifo";
        case S_IFSOCK: return "socket";
        case S_IFCHR: return "char-device";
        case S_IFBLK: return "block-device";
    }
    return "unknown";
}

const char* dirent_type_name(uint8_t type) { return entry_type_name(DTTOIF(type)); }

std::string mode_string(uint32_t mode) {
    const char* type = "?";
    switch (mode & S_IFMT) {
        case S_IFREG: type = "-"; break;
        case S_IFDIR: type = "d"; break;
        case S_IFLNK: type = "l"; break;
        case S_IFIFO: type = "p"; break;
        case S_IFSOCK: type = "s"; break;
        case S_IFCHR: type = "c"; break;
        case S_IFBLK: type = "b"; break;
    }
    std::string s = type;
    const char* rwx = "rwxrwxrwx";
    for (int i = 0; i < 9; ++i) s += (mode & (0400u >> i)) ? rwx[i] : '-';
    // set-user-ID, set-group-ID and sticky take the x of their triple.
    auto special = [&](uint32_t bit, size_t at, char with_x, char without_x) {
        if (mode & bit) s[at] = s[at] == '-' ? without_x : with_x;
    };
    special(S_ISUID, 3, 's', 'S');
    special(S_ISGID, 6, 's', 'S');
    special(S_ISVTX, 9, 't', 'T');
    return s;
}

std::string entry_id_string(const pfs_entry_id& id) {
    return std::to_string(id.ino) + ":" + std::to_string(id.owner_node) + ":" + std::to_string(id.generation);
}

std::string format_time(const pfs_timespec& t) {
    time_t sec = static_cast<time_t>(t.sec);
    struct tm tm {};
    if (!localtime_r(&sec, &tm)) return std::to_string(t.sec);
    char buf[64];
    std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
    return buf;
}

namespace {

double epoch_seconds(const pfs_timespec& t) { return static_cast<double>(t.sec) + t.nsec / 1e9; }

std::string octal(uint32_t mode) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%04o", mode & 07777);
    return buf;
}

}  // namespace

json entry_id_json(const pfs_entry_id& id) {
    return {{"ino", id.ino}, {"owner_node", id.owner_node}, {"generation", id.generation}};
}

static bool is_device(const pfs_attr& a) { return S_ISCHR(a.mode) || S_ISBLK(a.mode); }

std::string size_or_device(const pfs_attr& a) {
    if (!is_device(a)) return std::to_string(a.size);
    return std::to_string(pfs_dev_major(a.rdev)) + ", " + std::to_string(pfs_dev_minor(a.rdev));
}

void add_attr_json(json& out, const pfs_attr& a) {
    out["type"] = entry_type_name(a.mode);
    out["entry_id"] = entry_id_json(a.id);
    out["size"] = a.size;
    if (is_device(a)) out["rdev"] = {{"major", pfs_dev_major(a.rdev)}, {"minor", pfs_dev_minor(a.rdev)}};
    out["btime"] = epoch_seconds(a.btime);
    out["mode"] = a.mode;
    out["mode_string"] = mode_string(a.mode);
    out["uid"] = a.uid;
    out["gid"] = a.gid;
    out["nlink"] = a.nlink;
    out["atime"] = epoch_seconds(a.atime);
    out["mtime"] = epoch_seconds(a.mtime);
    out["ctime"] = epoch_seconds(a.ctime);
}

json attr_json(const std::string& path, const pfs_attr& attr) {
    json out = {{"path", path}};
    add_attr_json(out, attr);
    return out;
}

std::string render_fields(const std::vector<std::pair<std::string, std::string>>& fields, const std::string& indent) {
    size_t width = 0;
    for (const auto& [label, value] : fields) width = std::max(width, label.size());
    std::string out;
    for (const auto& [label, value] : fields)
        out += indent + label + ":" + std::string(width - label.size() + 2, ' ') + value + "\n";
    return out;
}

std::vector<std::pair<std::string, std::string>> attr_fields(const std::string& path, const pfs_attr& a) {
    std::string size = std::to_string(a.size);
    if (a.size >= 1024) size += " (" + format_bytes(a.size) + ")";
    return {{"Path", path},
            {"Type", entry_type_name(a.mode)},
            {"Entry ID", entry_id_string(a.id)},
            is_device(a) ? std::pair<std::string, std::string>{"Device", size_or_device(a)}
                         : std::pair<std::string, std::string>{"Size", size},
            {"Mode", mode_string(a.mode) + " (" + octal(a.mode) + ")"},
            {"Owner", "uid " + std::to_string(a.uid) + ", gid " + std::to_string(a.gid)},
            {"Links", std::to_string(a.nlink)},
            {"Accessed", format_time(a.atime)},
            {"Modified", format_time(a.mtime)},
            {"Changed", format_time(a.ctime)},
            {"Born", format_time(a.btime)}};
}

std::string format_chunk_size(uint32_t bytes) {
    static constexpr std::pair<uint32_t, const char*> units[] = {{1u << 30, "G"}, {1u << 20, "M"}, {1u << 10, "K"}};
    for (auto [unit, suffix] : units)
        if (bytes >= unit && bytes % unit == 0) return std::to_string(bytes / unit) + suffix;
    return std::to_string(bytes);
}

Result<uint64_t> parse_size(std::string_view text, std::string_view what) {
    uint64_t value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    std::string_view unit(end, static_cast<size_t>(text.data() + text.size() - end));
    uint64_t scale = 0;
    if (unit.empty() || unit == "B") scale = 1;
    else if (std::string_view("kKmMgG").find(unit[0]) != std::string_view::npos &&
             (unit.size() == 1 || unit.substr(1) == "iB" || unit.substr(1) == "B")) {
        char u = static_cast<char>(std::toupper(static_cast<unsigned char>(unit[0])));
        scale = u == 'K' ? 1ull << 10 : u == 'M' ? 1ull << 20 : 1ull << 30;
    }
    if (text.empty() || ec != std::errc() || scale == 0 || value > UINT64_MAX / scale)
        return usage_error("invalid " + std::string(what) + " '" + std::string(text) +
                           "': expected bytes or a number with K, M or G (512K, 1M, 4M)");
    return value * scale;
}

json pattern_json(const pfs_pattern& p, const Snapshot& snap) {
    return {{"chunk_size", p.chunk_size},
            {"num_targets", p.num_targets},
            {"pool_id", p.pool_id},
            {"pool_name", snap.pool_name(p.pool_id)},
            {"inline_max", p.inline_max},
            {"dir_stripes", p.dir_stripes}};
}

namespace {

// No server answered, or none could be asked: not the file system's answer.
bool no_answer(int code) {
    switch (code) {
        case -ECONNREFUSED:
        case -ECONNRESET:
        case -ECONNABORTED:
        case -ETIMEDOUT:
        case -EHOSTUNREACH:
        case -ENETUNREACH:
        case -EPIPE:
        case -ENOTCONN:
        case -EAGAIN:  // "metadata server is starting"
        case PFS_E_AUTH:
        case PFS_E_VERSION:
        case PFS_E_UNKNOWN_NODE:
            return true;
    }
    return false;
}

}  // namespace

Error fs_error(const std::string& path, const Error& e) {
    if (no_answer(e.code)) return unreachable(path + ": " + e.message);
    if (e.code < 0 && e.code > -1000) {
        // The errno's own words; the server's detail only where the errno alone is vague.
        std::string text = std::strerror(-e.code);
        if (e.code == -EINVAL && !e.message.empty() && e.message != text) {
            std::string detail = e.message.starts_with(text + ": ") ? e.message.substr(text.size() + 2) : e.message;
            text += " (" + detail + ")";
        }
        return refused(path + ": " + text);
    }
    return refused(path + ": " + e.message);
}

Error local_error(const std::string& path, int negative_errno) {
    return refused(path + ": " + std::strerror(-negative_errno));
}

Status check_fs_path(const std::string& path) {
    if (path.empty() || path[0] != '/')
        return usage_error("'" + path + "': paths inside PFS are absolute (start with /)");
    return ok_status();
}

std::string join_path(const std::string& dir, const std::string& name) {
    if (!dir.empty() && dir.back() == '/') return dir + name;
    return dir + "/" + name;
}

std::string base_name(const std::string& path) {
    size_t end = path.find_last_not_of('/');
    if (end == std::string::npos) return "";
    size_t start = path.find_last_of('/', end);
    start = start == std::string::npos ? 0 : start + 1;
    return path.substr(start, end + 1 - start);
}

bool is_dir(const pfs_attr& attr) { return (attr.mode & S_IFMT) == S_IFDIR; }

Result<FsClient*> Context::fs() {
    if (!fs_client) {
        auto connected = FsClient::connect(options);
        if (!connected) return connected.error();
        fs_client = std::move(*connected);
    }
    return fs_client.get();
}

}  // namespace pfs::ctl
