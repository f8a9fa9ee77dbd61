// Disk I/O through io_uring, bridged into an Asio event loop: the ring
// signals completions on an eventfd that one reaper coroutine waits on (while
// any operation is in flight); it drains the completion queue and resumes
// the coroutine waiting for each.
//
// A Uring is single-threaded: all operations must come from coroutines on
// one executor (the ring attaches to the executor of its first user). Every
// operation returns its outcome as a Result with a negative errno; there is
// no fallback to blocking system calls.
#pragma once

#include <liburing.h>
#include <sys/stat.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "asio.hpp"
#include "fd.hpp"
#include "result.hpp"

namespace pfs {

// Fixed-size, page-aligned buffers that a ring registers with the kernel
// (io_uring_register_buffers), so I/O through them skips per-request page
// pinning. Leases keep the memory alive, so a lease may outlive the pool's
// owner.
class BufferPool : public std::enable_shared_from_this<BufferPool> {
public:
    // A borrowed buffer, returned to the pool when the lease goes away.
    class Lease {
    public:
        Lease(Lease&& other) noexcept;
        Lease& operator=(Lease&& other) noexcept;
        Lease(const Lease&) = delete;
        Lease& operator=(const Lease&) = delete;
        ~Lease();

        std::span<uint8_t> span() const { return {data_, size_}; }
        uint8_t* data() const { return data_; }
        size_t size() const { return size_; }
        uint16_t index() const { return index_; }
        const BufferPool* pool() const { return pool_.get(); }

    private:
        friend class BufferPool;
        Lease(std::shared_ptr<BufferPool> pool, uint16_t index);
        void release();

        std::shared_ptr<BufferPool> pool_;
        uint16_t index_ = 0;
        uint8_t* data_ = nullptr;
        size_t size_ = 0;
    };

    // count buffers of size bytes each (size rounded up to whole pages).
    static Result<std::shared_ptr<BufferPool>> create(size_t count, size_t size);
    ~BufferPool();
    BufferPool(const BufferPool&) = delete;
    BufferPool& operator=(const BufferPool&) = delete;

    // A free buffer, or nothing when all are lent: callers then do plain
    // I/O rather than wait, so a burst never queues behind the pool.
    std::optional<Lease> try_acquire();
    size_t buffer_size() const { return size_; }
    size_t count() const { return count_; }
    size_t available() const { return free_.size(); }

private:
    friend class Uring;
    BufferPool(uint8_t* base, size_t count, size_t size);
    std::vector<struct iovec> iovecs() const;

    uint8_t* base_;
    size_t count_;
    size_t size_;
    std::vector<uint16_t> free_;
};

struct UringConfig {
    unsigned entries = 256;  // submission queue size; also the bound on operations in flight
};

class Uring {
public:
    // Creates the ring. Where io_uring is disabled (sysctl kernel.io_uring_disabled,
    // seccomp, old kernels) this fails with "io_uring is not available: ...".
    static Result<std::unique_ptr<Uring>> create(UringConfig config = {});
    ~Uring();
    Uring(const Uring&) = delete;
    Uring& operator=(const Uring&) = delete;

    // Reads until buf is full or end of file; returns the bytes read.
    awaitable<Result<size_t>> read(int fd, std::span<uint8_t> buf, uint64_t offset);
    // Writes all of buf (short writes are continued); returns buf.size().
    awaitable<Result<size_t>> write(int fd, std::span<const uint8_t> buf, uint64_t offset);
    // As write, and durable once it returns, as after fdatasync of those
    // bytes (RWF_DSYNC): one operation instead of a write and a sync.
    awaitable<Result<size_t>> write_dsync(int fd, std::span<const uint8_t> buf, uint64_t offset);
    awaitable<Status> fsync(int fd, bool datasync);
    // fallocate(2): mode as Linux's FALLOC_FL_* bits.
    awaitable<Status> fallocate(int fd, int mode, uint64_t offset, uint64_t length);
    // Paths are taken by value: the coroutine keeps its own copy for the
    // kernel, whatever happens to the caller's temporaries.
    awaitable<Result<UniqueFd>> openat(int dirfd, std::string path, int flags, mode_t mode);
    awaitable<Status> statx(int dirfd, std::string path, int flags, unsigned mask, struct statx* out);
    awaitable<Status> unlinkat(int dirfd, std::string path, int flags);
    awaitable<Status> mkdirat(int dirfd, std::string path, mode_t mode);

    // Registers pool's buffers with this ring (once per ring). Fails with
    // -ENOMEM where RLIMIT_MEMLOCK is too small for them.
    Status register_buffers(std::shared_ptr<BufferPool> pool);
    // The registered pool, or null.
    BufferPool* buffers() const { return pool_.get(); }
    // As read/write, through the first len bytes of a registered buffer.
    awaitable<Result<size_t>> read_fixed(int fd, const BufferPool::Lease& buf, size_t len, uint64_t offset);
    awaitable<Result<size_t>> write_fixed(int fd, const BufferPool::Lease& buf, size_t len, uint64_t offset);

    unsigned capacity() const { return capacity_; }
    // Operations submitted or waiting for a submission slot (for tests).
    size_t outstanding() const { return outstanding_; }

private:
    struct Completion;
    template <class Handler>
    struct HandlerCompletion;
    using Prep = std::function<void(io_uring_sqe*)>;

    Uring(UniqueFd eventfd, unsigned capacity);
    // Runs one operation: prep fills the SQE; returns the CQE's res.
    awaitable<int> perform(Prep prep);
    // Moves bytes in pieces until len is done, EOF (reads) or an error.
    awaitable<Result<size_t>> transfer(bool is_write, int fd, uint8_t* data, size_t len, uint64_t offset,
                                       int buf_index, int rw_flags = 0);
    void attach(const asio::any_io_executor& ex);
    void start_reaper();
    awaitable<void> reap_loop(std::shared_ptr<bool> alive);
    void reap();
    awaitable<void> acquire_slot();
    void release_slot();
    void schedule_submit();
    void submit_now();

    io_uring ring_{};
    UniqueFd eventfd_;
    unsigned capacity_;
    std::optional<asio::posix::stream_descriptor> event_stream_;
    std::optional<asio::any_io_executor> executor_;
    std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
    size_t outstanding_ = 0;  // holders of a slot: prepared, submitted, or handed one
    size_t in_kernel_ = 0;    // SQEs prepared whose CQE has not been reaped
    bool submit_scheduled_ = false;
    bool reaping_ = false;
    std::deque<std::unique_ptr<Completion>> slot_waiters_;
    std::shared_ptr<BufferPool> pool_;
};

}  // namespace pfs
