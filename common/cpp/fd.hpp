// Owns a file descriptor: closed when the owner goes away.
#pragma once

#include <unistd.h>

#include <cerrno>
#include <utility>

namespace pfs {

class UniqueFd {
public:
    explicit UniqueFd(int fd = -1) : fd_(fd) {}
    ~UniqueFd() {
        if (fd_ >= 0) ::close(fd_);
    }
    UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
    UniqueFd& operator=(UniqueFd&& other) noexcept {
        if (this != &other) {
            if (fd_ >= 0) ::close(fd_);
            fd_ = std::exchange(other.fd_, -1);
        }
        return *this;
    }
    UniqueFd(const UniqueFd&) = delete;
    UniqueFd& operator=(const UniqueFd&) = delete;

    int get() const { return fd_; }
    bool valid() const { return fd_ >= 0; }
    // Closes now and returns 0 or the errno, for callers that must see the
    // error: some file systems (NFS) report failed write-back at close().
    int close() {
        int rc = ::close(fd_);
        fd_ = -1;
        return rc < 0 ? errno : 0;
    }

private:
    int fd_;
};

}  // namespace pfs
