#include "write_verifier.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>

#include "fd.hpp"

namespace pfs {
namespace {

constexpr const char* kNote = ".pfs-clean-stop";
constexpr const char* kNoteTmp = ".pfs-clean-stop.tmp";
constexpr size_t kNoteSize = 16;  // "PFSV" + reserved + the verifier, LE

std::string text(int err) { return std::strerror(err); }

}  // namespace

Result<uint64_t> WriteVerifier::take(int dir_fd, const std::string& dir_name) {
    UniqueFd fd(::openat(dir_fd, kNote, O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (fd.valid()) {
        uint8_t buf[kNoteSize + 1];
        ssize_t n = ::read(fd.get(), buf, sizeof buf);
        fd = UniqueFd();
        // The note goes first: from now on a crash must change the verifier.
        if (::unlinkat(dir_fd, kNote, 0) != 0 || ::fsync(dir_fd) != 0)
            return Error{-errno, "cannot remove " + dir_name + "/" + kNote + ": " + text(errno)};
        if (n == static_cast<ssize_t>(kNoteSize) && std::memcmp(buf, "PFSV", 4) == 0) {
            uint64_t v = 0;
            for (int i = 7; i >= 0; --i) v = v << 8 | buf[8 + i];
            if (v != 0) return v;
        }
    } else if (errno != ENOENT) {
        return Error{-errno, "cannot read " + dir_name + "/" + kNote + ": " + text(errno)};
    }
    std::random_device rd;
    uint64_t v = 0;
    while (v == 0) v = (uint64_t{rd()} << 32) ^ rd();
    return v;
}

Status WriteVerifier::leave(int dir_fd, const std::string& dir_name, uint64_t verifier) {
    uint8_t buf[kNoteSize] = {'P', 'F', 'S', 'V'};
    for (int i = 0; i < 8; ++i) buf[8 + i] = static_cast<uint8_t>(verifier >> (8 * i));
    UniqueFd fd(::openat(dir_fd, kNoteTmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600));
    bool ok = fd.valid() && ::write(fd.get(), buf, sizeof buf) == static_cast<ssize_t>(sizeof buf) &&
              ::fsync(fd.get()) == 0;
    ok = ok && ::renameat(dir_fd, kNoteTmp, dir_fd, kNote) == 0 && ::fsync(dir_fd) == 0;
    if (!ok) return Error{-errno, "cannot leave " + dir_name + "/" + kNote + ": " + text(errno)};
    return ok_status();
}

}  // namespace pfs
