#include "state_file.hpp"
#include "fd.hpp"

#include <openssl/evp.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <string_view>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace pfs::state_file {
namespace {

constexpr std::string_view kFormat = "pfs-state";
constexpr int kVersion = 1;

std::optional<std::string> sha256_hex(std::string_view data) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (EVP_Digest(data.data(), data.size(), md, &len, EVP_sha256(), nullptr) != 1) {
        return std::nullopt;
    }
    static constexpr char kHex[] = "0123456789abcdef";
    std::string hex;
    hex.reserve(2 * len);
    for (unsigned int i = 0; i < len; ++i) {
        hex += kHex[md[i] >> 4];
        hex += kHex[md[i] & 0xf];
    }
    return hex;
}

Error sys_error(int err, const std::string& what) {
    return Error{-err, what + ": " + std::strerror(err)};
}

int write_all(int fd, std::string_view data) {
    while (!data.empty()) {
        ssize_t n = ::write(fd, data.data(), data.size());
        if (n < 0) {
            if (errno == EINTR) continue;
            return errno;
        }
        data.remove_prefix(static_cast<size_t>(n));
    }
    return 0;
}

// Writes, syncs and closes the temporary file. The returned error names both paths because
// the operator's question on a full disk is "did I lose my state?".
Status write_tmp(const std::string& tmp, const std::string& target, std::string_view body) {
    UniqueFd fd(::open(tmp.c_str(), O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0600));
    if (fd.get() < 0) {
        return Error{-errno, "cannot create " + tmp + ": " + std::strerror(errno) + "; " + target +
                                 " was left unchanged"};
    }
    auto fail = [&](int err, const char* step) -> Status {
        ::unlink(tmp.c_str());
        return Error{-err, std::string("cannot ") + step + " " + tmp + ": " + std::strerror(err) +
                               "; " + target + " was left unchanged"};
    };
    if (int err = write_all(fd.get(), body); err != 0) return fail(err, "write");
    if (::fsync(fd.get()) < 0) return fail(errno, "sync");
    if (int err = fd.close(); err != 0) return fail(err, "close");
    return ok_status();
}

std::string corrupt_message(const std::string& path, const std::string& reason) {
    return "state file " + path + " is corrupt (" + reason +
           "); refusing to start: restore it from backup or remove it to start empty";
}

Loaded corrupt(const std::string& path, const std::string& reason) {
    return Loaded{LoadStatus::corrupt, nullptr, corrupt_message(path, reason)};
}

int read_all(const std::string& path, std::string& out) {
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY));
    if (fd.get() < 0) return errno;
    struct stat st {};
    if (::fstat(fd.get(), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
        out.reserve(static_cast<size_t>(st.st_size));
    }
    char buf[65536];
    for (;;) {
        ssize_t n = ::read(fd.get(), buf, sizeof buf);
        if (n < 0) {
            if (errno == EINTR) continue;
            return errno;
        }
        if (n == 0) return 0;
        out.append(buf, static_cast<size_t>(n));
    }
}

}  // namespace

Loaded load(const std::filesystem::path& path) {
    const std::string p = path.string();
    std::string text;
    if (int err = read_all(p, text); err != 0) {
        if (err == ENOENT) return Loaded{LoadStatus::missing, nullptr, {}};
        return Loaded{LoadStatus::io_error, nullptr,
                      "cannot read state file " + p + ": " + std::strerror(err)};
    }
    if (text.empty()) return corrupt(p, "empty file");

    nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (doc.is_discarded()) return corrupt(p, "not valid JSON, probably truncated");
    if (!doc.is_object()) return corrupt(p, "not a PFS state file");

    auto format = doc.find("format");
    if (format == doc.end() || !format->is_string() || *format != kFormat) {
        return corrupt(p, "not a PFS state file: \"format\" is not \"pfs-state\"");
    }
    auto version = doc.find("version");
    if (version == doc.end() || !version->is_number_integer()) {
        return corrupt(p, "\"version\" is missing");
    }
    if (*version != kVersion) {
        return corrupt(p, "unsupported version " + version->dump() + ", expected " +
                              std::to_string(kVersion));
    }
    auto sum = doc.find("sha256");
    if (sum == doc.end() || !sum->is_string()) return corrupt(p, "\"sha256\" is missing");
    auto value = doc.find("value");
    if (value == doc.end()) return corrupt(p, "\"value\" is missing");

    std::optional<std::string> actual;
    try {
        actual = sha256_hex(value->dump());
    } catch (const std::exception& e) {
        return corrupt(p, e.what());
    }
    if (!actual) return Loaded{LoadStatus::io_error, nullptr, "cannot compute SHA-256 of " + p};
    if (*actual != sum->get_ref<const std::string&>()) return corrupt(p, "checksum mismatch");

    return Loaded{LoadStatus::ok, std::move(*value), {}};
}

Status save(const std::filesystem::path& path, const nlohmann::json& value) {
    const std::string p = path.string();
    std::string body;
    try {
        std::optional<std::string> sum = sha256_hex(value.dump());
        if (!sum) return Error{-EIO, "cannot compute SHA-256 for state file " + p};
        nlohmann::json doc = {
            {"format", kFormat}, {"version", kVersion}, {"sha256", *sum}, {"value", value}};
        body = doc.dump(2);
        body += '\n';
    } catch (const std::exception& e) {
        // dump() throws on strings that are not UTF-8.
        return Error{-EINVAL, "cannot encode state file " + p + ": " + e.what()};
    }

    const std::string tmp = p + ".tmp";
    if (Status st = write_tmp(tmp, p, body); !st) return st;

    if (::rename(tmp.c_str(), p.c_str()) < 0) {
        int err = errno;
        ::unlink(tmp.c_str());
        return Error{-err, "cannot rename " + tmp + " to " + p + ": " + std::strerror(err) +
                               "; " + p + " was left unchanged"};
    }

    // The rename is durable only once the directory entry is on disk.
    std::filesystem::path dir = path.parent_path();
    if (dir.empty()) dir = ".";
    UniqueFd dfd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (dfd.get() < 0) return sys_error(errno, "cannot open directory " + dir.string());
    if (::fsync(dfd.get()) < 0) return sys_error(errno, "cannot sync directory " + dir.string());
    return ok_status();
}

}  // namespace pfs::state_file
