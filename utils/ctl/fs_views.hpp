// What the file commands share: names and forms of attributes, stripe
// patterns and layouts, sizes, paths inside PFS, and file system errors in
// pfs-ctl's terms.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "commands.hpp"
#include "fs_client.hpp"
#include "views.hpp"

namespace pfs::ctl {

// "file", "directory", "symlink", "fifo", "socket", "char-device", "block-device"
const char* entry_type_name(uint32_t mode);
// The same names for a directory entry's DT_* type.
const char* dirent_type_name(uint8_t type);
// "-rw-r--r--", "drwxr-sr-x", "lrwxrwxrwx"
std::string mode_string(uint32_t mode);
// ls -l's size column: a device's "major, minor", else the size.
std::string size_or_device(const pfs_attr& attr);
// "ino:owner_node:generation"
std::string entry_id_string(const pfs_entry_id& id);
// Local time, "2024-05-01 12:34:56".
std::string format_time(const pfs_timespec& t);

// type, entry_id, size, mode, mode_string, uid, gid, nlink, atime, mtime,
// ctime (seconds since the epoch, with the fraction), added to `out`.
void add_attr_json(json& out, const pfs_attr& attr);
// {"path": path, ...add_attr_json}
json attr_json(const std::string& path, const pfs_attr& attr);
json entry_id_json(const pfs_entry_id& id);

// "Label:  value" lines, the values aligned, each line starting with `indent`.
std::string render_fields(const std::vector<std::pair<std::string, std::string>>& fields,
                          const std::string& indent = "");
// Path, type, entry id, size, mode, owner, links and times.
std::vector<std::pair<std::string, std::string>> attr_fields(const std::string& path, const pfs_attr& attr);

// "512K", "1M", "2G" where exact, else the bytes.
std::string format_chunk_size(uint32_t bytes);
// 65536, 512K, 512k, 1M, 1MiB, 4m, 1G: bytes, a usage error naming `what` otherwise.
Result<uint64_t> parse_size(std::string_view text, std::string_view what);
// {"chunk_size", "num_targets", "pool_id", "pool_name"}
json pattern_json(const pfs_pattern& p, const Snapshot& snap);

// A libpfs error about `path` in pfs-ctl's terms: "PATH: No such file or
// directory" with exit status 1, or status 3 where no server answered.
Error fs_error(const std::string& path, const Error& e);
// An error for a local path (a negative errno), exit status 1.
Error local_error(const std::string& path, int negative_errno);

// Paths inside PFS are absolute: a usage error otherwise.
Status check_fs_path(const std::string& path);
std::string join_path(const std::string& dir, const std::string& name);
// The last component ("" for "/").
std::string base_name(const std::string& path);
bool is_dir(const pfs_attr& attr);

}  // namespace pfs::ctl
