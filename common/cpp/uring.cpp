#include "uring.hpp"

#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/uio.h>

#include "log.hpp"
#include "wire.hpp"

#if __has_include(<valgrind/memcheck.h>)
#include <valgrind/memcheck.h>
#define PFS_MARK_DEFINED(p, n) VALGRIND_MAKE_MEM_DEFINED(p, n)
#else
#define PFS_MARK_DEFINED(p, n) ((void)(p), (void)(n))
#endif

namespace pfs {
namespace {

// Bytes a read completed: defined for valgrind's memcheck, which sees no
// io_uring and would take them for the buffer's uninitialised contents (a
// no-op when not run under it).
void mark_filled(uint8_t* p, size_t n) { PFS_MARK_DEFINED(p, n); }

constexpr size_t kPageSize = 4096;
// Kernel limits: one SQE moves at most INT_MAX bytes; a registered buffer is
// at most 1 GiB and a ring takes at most 16384 of them.
constexpr size_t kMaxPiece = 1u << 30;
constexpr size_t kMaxBuffers = 16384;

Error errno_error(int res, const std::string& what) { return Error{res, what + ": " + errno_text(res)}; }

}  // namespace

// ---- BufferPool --------------------------------------------------------------

Result<std::shared_ptr<BufferPool>> BufferPool::create(size_t count, size_t size) {
    if (count == 0 || count > kMaxBuffers || size == 0 || size > kMaxPiece)
        return Error{-EINVAL, "buffer pool of " + std::to_string(count) + " x " + std::to_string(size) +
                                  " bytes is out of range"};
    size = (size + kPageSize - 1) / kPageSize * kPageSize;
    // mmap: page-aligned memory, as O_DIRECT and registration prefer.
    void* base = ::mmap(nullptr, count * size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) return errno_error(-errno, "cannot allocate I/O buffers");
    return std::shared_ptr<BufferPool>(new BufferPool(static_cast<uint8_t*>(base), count, size));
}

BufferPool::BufferPool(uint8_t* base, size_t count, size_t size) : base_(base), count_(count), size_(size) {
    // Handed out from the back: lowest indexes first, which keeps tests predictable.
    for (size_t i = count; i-- > 0;) free_.push_back(static_cast<uint16_t>(i));
}

BufferPool::~BufferPool() { ::munmap(base_, count_ * size_); }

std::optional<BufferPool::Lease> BufferPool::try_acquire() {
    if (free_.empty()) return std::nullopt;
    uint16_t index = free_.back();
    free_.pop_back();
    return Lease(shared_from_this(), index);
}

std::vector<struct iovec> BufferPool::iovecs() const {
    std::vector<struct iovec> out(count_);
    for (size_t i = 0; i < count_; ++i) out[i] = {base_ + i * size_, size_};
    return out;
}

BufferPool::Lease::Lease(std::shared_ptr<BufferPool> pool, uint16_t index)
    : pool_(std::move(pool)),
      index_(index),
      data_(pool_->base_ + index * pool_->size_),
      size_(pool_->size_) {}

BufferPool::Lease::Lease(Lease&& other) noexcept
    : pool_(std::move(other.pool_)), index_(other.index_), data_(other.data_), size_(other.size_) {}

BufferPool::Lease& BufferPool::Lease::operator=(Lease&& other) noexcept {
    if (this != &other) {
        release();
        pool_ = std::move(other.pool_);
        index_ = other.index_;
        data_ = other.data_;
        size_ = other.size_;
    }
    return *this;
}

BufferPool::Lease::~Lease() { release(); }

void BufferPool::Lease::release() {
    if (pool_) pool_->free_.push_back(index_);
    pool_.reset();
}

// ---- completions -------------------------------------------------------------

// A coroutine waiting for a CQE (or for a submission slot). Owned by the ring
// while the kernel has the operation, so it outlives any buffer the kernel
// may still write into.
struct Uring::Completion {
    virtual ~Completion() = default;
    // Resumes the waiter with res, later, from its own executor: never
    // inline, so the reaper's loop is not re-entered by the waiter.
    virtual void complete(int res) = 0;
};

template <class Handler>
struct Uring::HandlerCompletion final : Uring::Completion {
    explicit HandlerCompletion(Handler h) : handler(std::move(h)) {}
    void complete(int res) override {
        auto ex = asio::get_associated_executor(handler);
        asio::post(ex, [h = std::move(handler), res]() mutable { h(res); });
    }
    Handler handler;
};

// ---- the ring ----------------------------------------------------------------

Result<std::unique_ptr<Uring>> Uring::create(UringConfig config) {
    if (config.entries == 0 || config.entries > 32768)
        return Error{-EINVAL,
                     "io_uring size must be 1..32768 entries, not " + std::to_string(config.entries)};
    UniqueFd efd(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
    if (!efd.valid()) return errno_error(-errno, "cannot create an eventfd for io_uring");
    std::unique_ptr<Uring> ring(new Uring(std::move(efd), config.entries));
    io_uring_params params{};
    int rc = io_uring_queue_init_params(config.entries, &ring->ring_, &params);
    if (rc < 0) {
        ring->ring_.ring_fd = -1;  // nothing for the destructor to tear down
        std::string hint = rc == -EPERM || rc == -ENOSYS || rc == -EACCES
                               ? " (disabled by sysctl kernel.io_uring_disabled, seccomp or the kernel build)"
                               : "";
        return Error{rc, "io_uring is not available: " + errno_text(rc) + hint};
    }
    ring->capacity_ = ring->ring_.sq.ring_entries;
    rc = io_uring_register_eventfd(&ring->ring_, ring->eventfd_.get());
    if (rc < 0) return errno_error(rc, "io_uring is not available: cannot register its eventfd");
    return ring;
}

Uring::Uring(UniqueFd eventfd, unsigned capacity) : eventfd_(std::move(eventfd)), capacity_(capacity) {}

Uring::~Uring() {
    *alive_ = false;
    if (ring_.ring_fd < 0) return;
    // The kernel may still write into buffers of operations in flight (they
    // live in their coroutines' frames): wait for each before any can go.
    while (in_kernel_ > 0) {
        if (io_uring_sq_ready(&ring_) > 0) io_uring_submit(&ring_);
        io_uring_cqe* cqe = nullptr;
        int rc = io_uring_wait_cqe(&ring_, &cqe);
        if (rc == -EINTR) continue;
        if (rc < 0) break;
        delete static_cast<Completion*>(io_uring_cqe_get_data(cqe));
        io_uring_cqe_seen(&ring_, cqe);
        --in_kernel_;
    }
    slot_waiters_.clear();
    if (event_stream_) {
        boost::system::error_code ec;
        event_stream_->cancel(ec);
        event_stream_->release();  // eventfd_ closes it
    }
    io_uring_queue_exit(&ring_);
}

void Uring::attach(const asio::any_io_executor& ex) {
    if (executor_) return;
    executor_ = ex;
    event_stream_.emplace(ex, eventfd_.get());
}

// Runs while operations are in the kernel and ends when none are, so the
// ring holds the event loop (io_context::run) only while it has work.
void Uring::start_reaper() {
    if (reaping_) return;
    reaping_ = true;
    asio::co_spawn(*executor_, reap_loop(alive_), asio::detached);
}

awaitable<void> Uring::reap_loop(std::shared_ptr<bool> alive) {
    uint64_t count = 0;
    while (true) {
        boost::system::error_code ec;
        co_await event_stream_->async_read_some(asio::buffer(&count, sizeof count),
                                                asio::redirect_error(asio::use_awaitable, ec));
        if (!*alive || ec == asio::error::operation_aborted) co_return;  // the ring is gone
        if (ec) {
            // Cannot happen with an eventfd; say so loudly rather than hang quietly.
            log::error("io_uring completion signal failed; disk I/O stops", {{"error", ec.message()}});
            co_return;
        }
        reap();
        if (in_kernel_ == 0) break;
    }
    reaping_ = false;
}

void Uring::reap() {
    unsigned head = 0;
    unsigned seen = 0;
    io_uring_cqe* cqe = nullptr;
    io_uring_for_each_cqe(&ring_, head, cqe) {
        std::unique_ptr<Completion> done(static_cast<Completion*>(io_uring_cqe_get_data(cqe)));
        done->complete(cqe->res);
        ++seen;
    }
    io_uring_cq_advance(&ring_, seen);
    in_kernel_ -= seen;
    for (unsigned i = 0; i < seen; ++i) release_slot();
}

// At most capacity_ operations hold a slot, so the submission queue never
// overflows and the completion queue (twice as large) never drops a CQE.
awaitable<void> Uring::acquire_slot() {
    if (outstanding_ < capacity_ && slot_waiters_.empty()) {
        ++outstanding_;
        co_return;
    }
    // release_slot() hands its slot over to the first waiter, in order.
    co_await asio::async_initiate<decltype(asio::use_awaitable), void(int)>(
        [this](auto handler) {
            using Waiter = HandlerCompletion<decltype(handler)>;
            slot_waiters_.push_back(std::make_unique<Waiter>(std::move(handler)));
        },
        asio::use_awaitable);
}

void Uring::release_slot() {
    if (slot_waiters_.empty()) {
        --outstanding_;
        return;
    }
    auto next = std::move(slot_waiters_.front());
    slot_waiters_.pop_front();
    next->complete(0);
}

// One io_uring_enter per turn of the event loop for all operations prepared
// in that turn: pipelined requests share the system call.
void Uring::schedule_submit() {
    if (submit_scheduled_) return;
    submit_scheduled_ = true;
    asio::post(*executor_, [this, alive = alive_] {
        if (*alive) submit_now();
    });
}

void Uring::submit_now() {
    submit_scheduled_ = false;
    int rc = io_uring_submit(&ring_);
    if (rc >= 0 || io_uring_sq_ready(&ring_) == 0) return;
    if (rc != -EINTR && rc != -EAGAIN && rc != -EBUSY)
        log::warn("io_uring submit failed; retrying", {{"error", errno_text(rc)}});
    schedule_submit();
}

awaitable<int> Uring::perform(Prep prep) {
    attach(co_await asio::this_coro::executor);
    co_await acquire_slot();
    co_return co_await asio::async_initiate<decltype(asio::use_awaitable), void(int)>(
        [this, &prep](auto handler) {
            auto done = std::make_unique<HandlerCompletion<decltype(handler)>>(std::move(handler));
            io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
            if (sqe == nullptr) {  // cannot happen while slots bound the queue
                done->complete(-EBUSY);
                release_slot();
                return;
            }
            prep(sqe);
            Completion* owned = done.release();  // the CQE's user_data; reap() takes it back
            io_uring_sqe_set_data(sqe, owned);
            ++in_kernel_;
            start_reaper();
            schedule_submit();
        },
        asio::use_awaitable);
}

awaitable<Result<size_t>> Uring::transfer(bool is_write, int fd, uint8_t* data, size_t len, uint64_t offset,
                                          int buf_index, int rw_flags) {
    size_t done = 0;
    while (done < len) {
        auto piece = static_cast<unsigned>(std::min(len - done, kMaxPiece));
        uint8_t* p = data + done;
        uint64_t at = offset + done;
        int res = co_await perform([=](io_uring_sqe* sqe) {
            if (buf_index >= 0 && is_write)
                io_uring_prep_write_fixed(sqe, fd, p, piece, at, buf_index);
            else if (buf_index >= 0)
                io_uring_prep_read_fixed(sqe, fd, p, piece, at, buf_index);
            else if (is_write)
                io_uring_prep_write(sqe, fd, p, piece, at);
            else
                io_uring_prep_read(sqe, fd, p, piece, at);
            sqe->rw_flags = rw_flags;
        });
        if (res == -EINTR) continue;
        if (res < 0) co_return errno_error(res, is_write ? "write" : "read");
        if (res == 0) {
            if (is_write) co_return Error{-EIO, "write: no progress"};
            break;  // end of file
        }
        // The kernel filled it behind memcheck's back (it cannot see io_uring).
        if (!is_write) mark_filled(p, static_cast<size_t>(res));
        done += static_cast<size_t>(res);
    }
    co_return done;
}

awaitable<Result<size_t>> Uring::read(int fd, std::span<uint8_t> buf, uint64_t offset) {
    return transfer(false, fd, buf.data(), buf.size(), offset, -1);
}

awaitable<Result<size_t>> Uring::write(int fd, std::span<const uint8_t> buf, uint64_t offset) {
    // The kernel only reads from the buffer; io_uring's prep takes it non-const.
    return transfer(true, fd, const_cast<uint8_t*>(buf.data()), buf.size(), offset, -1);
}

awaitable<Result<size_t>> Uring::write_dsync(int fd, std::span<const uint8_t> buf, uint64_t offset) {
    return transfer(true, fd, const_cast<uint8_t*>(buf.data()), buf.size(), offset, -1, RWF_DSYNC);
}

awaitable<Result<size_t>> Uring::read_fixed(int fd, const BufferPool::Lease& buf, size_t len,
                                            uint64_t offset) {
    if (buf.pool() != pool_.get() || len > buf.size())
        co_return Error{-EINVAL, "read_fixed: not a registered buffer of this ring, or too short"};
    co_return co_await transfer(false, fd, buf.data(), len, offset, buf.index());
}

awaitable<Result<size_t>> Uring::write_fixed(int fd, const BufferPool::Lease& buf, size_t len,
                                             uint64_t offset) {
    if (buf.pool() != pool_.get() || len > buf.size())
        co_return Error{-EINVAL, "write_fixed: not a registered buffer of this ring, or too short"};
    co_return co_await transfer(true, fd, buf.data(), len, offset, buf.index());
}

awaitable<Status> Uring::fsync(int fd, bool datasync) {
    int res = co_await perform([=](io_uring_sqe* sqe) {
        io_uring_prep_fsync(sqe, fd, datasync ? IORING_FSYNC_DATASYNC : 0);
    });
    if (res < 0) co_return errno_error(res, datasync ? "fdatasync" : "fsync");
    co_return ok_status();
}

awaitable<Status> Uring::fallocate(int fd, int mode, uint64_t offset, uint64_t length) {
    int res = co_await perform([=](io_uring_sqe* sqe) {
        io_uring_prep_fallocate(sqe, fd, mode, static_cast<off_t>(offset), static_cast<off_t>(length));
    });
    if (res < 0) co_return errno_error(res, "fallocate");
    co_return ok_status();
}

awaitable<Result<UniqueFd>> Uring::openat(int dirfd, std::string path, int flags, mode_t mode) {
    int res = co_await perform([&](io_uring_sqe* sqe) {
        io_uring_prep_openat(sqe, dirfd, path.c_str(), flags | O_CLOEXEC, mode);
    });
    if (res < 0) co_return errno_error(res, "open " + path);
    co_return UniqueFd(res);
}

awaitable<Status> Uring::statx(int dirfd, std::string path, int flags, unsigned mask, struct statx* out) {
    int res = co_await perform([&](io_uring_sqe* sqe) {
        io_uring_prep_statx(sqe, dirfd, path.c_str(), flags, mask, out);
    });
    if (res < 0) co_return errno_error(res, "statx " + path);
    co_return ok_status();
}

awaitable<Status> Uring::unlinkat(int dirfd, std::string path, int flags) {
    int res = co_await perform([&](io_uring_sqe* sqe) {
        io_uring_prep_unlinkat(sqe, dirfd, path.c_str(), flags);
    });
    if (res < 0) co_return errno_error(res, "unlink " + path);
    co_return ok_status();
}

awaitable<Status> Uring::mkdirat(int dirfd, std::string path, mode_t mode) {
    int res = co_await perform([&](io_uring_sqe* sqe) {
        io_uring_prep_mkdirat(sqe, dirfd, path.c_str(), mode);
    });
    if (res < 0) co_return errno_error(res, "mkdir " + path);
    co_return ok_status();
}

Status Uring::register_buffers(std::shared_ptr<BufferPool> pool) {
    if (pool_) return Error{-EBUSY, "this io_uring already has registered buffers"};
    auto iov = pool->iovecs();
    int rc = io_uring_register_buffers(&ring_, iov.data(), static_cast<unsigned>(iov.size()));
    if (rc < 0)
        return errno_error(rc, "cannot register " + std::to_string(pool->count()) +
                                   " I/O buffers with io_uring" +
                                   (rc == -ENOMEM ? " (RLIMIT_MEMLOCK too small?)" : ""));
    pool_ = std::move(pool);
    return ok_status();
}

}  // namespace pfs
