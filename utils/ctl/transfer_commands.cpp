// cp and cat: file contents into and out of PFS, streamed in pieces (see
// FsClient::upload/download), never a whole file in memory.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <optional>

#include "commands.hpp"
#include "exit_status.hpp"
#include "fd.hpp"
#include "fs_views.hpp"

namespace pfs::ctl {
namespace {

constexpr std::string_view kPfsPrefix = "pfs:";

// Fills buf unless the file ends first; errors as negative errnos.
Result<size_t> read_full(int fd, std::span<uint8_t> buf) {
    size_t got = 0;
    while (got < buf.size()) {
        ssize_t n = ::read(fd, buf.data() + got, buf.size() - got);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return Error{-errno, ""};
        if (n == 0) break;
        got += static_cast<size_t>(n);
    }
    return got;
}

Status write_all(int fd, std::span<const uint8_t> data) {
    while (!data.empty()) {
        ssize_t n = ::write(fd, data.data(), data.size());
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return Error{-errno, ""};
        data = data.subspan(static_cast<size_t>(n));
    }
    return ok_status();
}

// Copies files and trees between a local path and a PFS path, counting.
class Copier {
public:
    Copier(FsClient& fs, bool recursive) : fs_(fs), recursive_(recursive) {}

    // Into DST when DST is an existing directory, as cp does.
    Status copy_in(const std::string& local, const std::string& remote);
    Status copy_out(const std::string& remote, const std::string& local);

    uint64_t files = 0, bytes = 0, skipped = 0;

private:
    Status file_in(const std::string& local, const std::string& remote, uint32_t mode);
    Status tree_in(const std::string& local, const std::string& remote);
    Status file_out(const std::string& remote, const std::string& local, uint32_t mode);
    Status tree_out(const std::string& remote, const std::string& local);
    void skip(const std::string& path) {
        std::fprintf(stderr, "pfs-ctl: %s: skipped: neither a regular file nor a directory\n", path.c_str());
        ++skipped;
    }

    FsClient& fs_;
    bool recursive_;
};

Error tree_needs_r(const std::string& path) { return refused(path + ": Is a directory (cp -r copies trees)"); }

Status Copier::copy_in(const std::string& local, const std::string& remote) {
    struct stat st {};
    if (::stat(local.c_str(), &st) < 0) return local_error(local, -errno);
    std::string to = remote;
    auto existing = fs_.stat(remote);
    if (existing && is_dir(*existing)) to = join_path(remote, base_name(local));
    else if (!existing && existing.error().code != -ENOENT) return fs_error(remote, existing.error());
    if (S_ISDIR(st.st_mode)) return recursive_ ? tree_in(local, to) : tree_needs_r(local);
    if (!S_ISREG(st.st_mode)) return refused(local + ": not a regular file");
    return file_in(local, to, st.st_mode & 07777);
}

Status Copier::file_in(const std::string& local, const std::string& remote, uint32_t mode) {
    UniqueFd fd(::open(local.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.valid()) return local_error(local, -errno);
    (void)::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
    std::optional<Error> local_failure;
    auto n = fs_.upload(remote, mode, [&](std::span<uint8_t> buf) {
        auto got = read_full(fd.get(), buf);
        if (!got) local_failure = local_error(local, got.error().code);
        return got;
    });
    if (!n) return local_failure ? *local_failure : fs_error(remote, n.error());
    ++files;
    bytes += *n;
    return ok_status();
}

Status Copier::tree_in(const std::string& local, const std::string& remote) {
    auto made = fs_.mkdir(remote, 0755);
    if (!made && made.error().code != -EEXIST) return fs_error(remote, made.error());
    if (!made) {
        auto existing = fs_.stat(remote);
        if (!existing) return fs_error(remote, existing.error());
        if (!is_dir(*existing)) return fs_error(remote, Error{-ENOTDIR, ""});
    }
    std::error_code ec;
    std::filesystem::directory_iterator it(local, ec);
    for (; !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
        std::string path = it->path().string(), name = it->path().filename().string();
        struct stat st {};
        if (::lstat(path.c_str(), &st) < 0) return local_error(path, -errno);
        Status st_copy = ok_status();
        if (S_ISDIR(st.st_mode)) st_copy = tree_in(path, join_path(remote, name));
        else if (S_ISREG(st.st_mode)) st_copy = file_in(path, join_path(remote, name), st.st_mode & 07777);
        else skip(path);
        if (!st_copy) return st_copy;
    }
    if (ec) return local_error(local, -ec.value());
    return ok_status();
}

Status Copier::copy_out(const std::string& remote, const std::string& local) {
    auto attr = fs_.stat(remote);
    if (!attr) return fs_error(remote, attr.error());
    std::string to = local;
    struct stat st {};
    if (::stat(local.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) to = join_path(local, base_name(remote));
    if (is_dir(*attr)) return recursive_ ? tree_out(remote, to) : tree_needs_r(remote);
    if ((attr->mode & S_IFMT) != S_IFREG) return refused(remote + ": not a regular file");
    return file_out(remote, to, attr->mode & 07777);
}

Status Copier::file_out(const std::string& remote, const std::string& local, uint32_t mode) {
    UniqueFd fd(::open(local.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode));
    if (!fd.valid()) return local_error(local, -errno);
    std::optional<Error> local_failure;
    auto n = fs_.download(remote, [&](std::span<const uint8_t> data) {
        auto st = write_all(fd.get(), data);
        if (!st) local_failure = local_error(local, st.error().code);
        return st;
    });
    if (!n) return local_failure ? *local_failure : fs_error(remote, n.error());
    if (int err = fd.close(); err != 0) return local_error(local, -err);
    ++files;
    bytes += *n;
    return ok_status();
}

Status Copier::tree_out(const std::string& remote, const std::string& local) {
    struct stat st {};
    if (::mkdir(local.c_str(), 0755) < 0 && errno != EEXIST) return local_error(local, -errno);
    if (::stat(local.c_str(), &st) < 0) return local_error(local, -errno);
    if (!S_ISDIR(st.st_mode)) return local_error(local, -ENOTDIR);
    auto entries = fs_.readdir(remote);
    if (!entries) return fs_error(remote, entries.error());
    for (const auto& e : *entries) {
        std::string from = join_path(remote, e.name), to = join_path(local, e.name);
        Status copied = ok_status();
        if (e.type == DT_DIR) {
            copied = tree_out(from, to);
        } else if (e.type == DT_REG) {
            auto attr = fs_.stat(from);
            if (!attr) return fs_error(from, attr.error());
            copied = file_out(from, to, attr->mode & 07777);
        } else {
            skip(from);
        }
        if (!copied) return copied;
    }
    return ok_status();
}

// "pfs:/PATH" names a path inside PFS; anything else is local.
struct Side {
    bool in_pfs = false;
    std::string path;
};

Side side(const std::string& arg) {
    if (arg.starts_with(kPfsPrefix)) return {true, arg.substr(kPfsPrefix.size())};
    return {false, arg};
}

std::string summary(const Copier& c, double seconds) {
    char rate[64];
    std::snprintf(rate, sizeof rate, "%.3f s, %.1f MB/s", seconds, seconds > 0 ? c.bytes / seconds / 1e6 : 0.0);
    std::string out = "copied " + std::to_string(c.files) + (c.files == 1 ? " file, " : " files, ") +
                      std::to_string(c.bytes) + " bytes in " + rate;
    if (c.skipped) out += " (" + std::to_string(c.skipped) + " skipped)";
    return out + "\n";
}

}  // namespace

Result<std::string> copy(Context& ctx) {
    Side src = side(ctx.args[0]), dst = side(ctx.args[1]);
    if (src.in_pfs == dst.in_pfs)
        return usage_error("cp copies into or out of PFS: exactly one of SRC and DST is pfs:/PATH\nusage: " +
                           usage_line(*find_command("cp", "")));
    const Side& remote = src.in_pfs ? src : dst;
    if (auto st = check_fs_path(remote.path); !st) return st.error();
    auto fs = ctx.fs();
    if (!fs) return fs.error();

    Copier copier(**fs, ctx.options.get<bool>("recursive"));
    auto started = std::chrono::steady_clock::now();
    Status done = src.in_pfs ? copier.copy_out(src.path, dst.path) : copier.copy_in(src.path, dst.path);
    if (!done) return done.error();
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();

    if (!ctx.json) return summary(copier, seconds);
    return render_json({{"source", ctx.args[0]},
                        {"destination", ctx.args[1]},
                        {"files", copier.files},
                        {"bytes", copier.bytes},
                        {"skipped", copier.skipped},
                        {"seconds", seconds},
                        {"mb_per_s", seconds > 0 ? copier.bytes / seconds / 1e6 : 0.0}});
}

Result<std::string> cat(Context& ctx) {
    const std::string& path = ctx.args[0];
    if (ctx.json) return usage_error("--json does not apply to 'cat': it writes the file's bytes\nusage: pfs-ctl cat PATH");
    if (auto st = check_fs_path(path); !st) return st.error();
    auto fs = ctx.fs();
    if (!fs) return fs.error();
    std::optional<Error> local_failure;
    auto n = (*fs)->download(path, [&](std::span<const uint8_t> data) {
        auto st = write_all(STDOUT_FILENO, data);
        if (!st) local_failure = local_error("stdout", st.error().code);
        return st;
    });
    if (!n) return local_failure ? *local_failure : fs_error(path, n.error());
    return std::string();
}

}  // namespace pfs::ctl
