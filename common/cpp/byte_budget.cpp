#include "byte_budget.hpp"

#include <algorithm>
#include <chrono>

namespace pfs {

struct ByteBudget::Waiter {
    explicit Waiter(asio::any_io_executor ex, size_t n) : ready(ex), bytes(n) {}
    asio::steady_timer ready;  // cancelled when granted
    size_t bytes;
    bool granted = false;
};

ByteBudget::ByteBudget(asio::any_io_executor ex, size_t limit) : ex_(ex), limit_(std::max<size_t>(limit, 1)) {}

ByteBudget::Lease& ByteBudget::Lease::operator=(Lease&& other) noexcept {
    if (this != &other) {
        release();
        budget_ = std::move(other.budget_);
        bytes_ = other.bytes_;
        other.bytes_ = 0;
    }
    return *this;
}

void ByteBudget::Lease::release() {
    if (budget_ && bytes_) budget_->give_back(bytes_);
    bytes_ = 0;
    budget_.reset();
}

awaitable<std::optional<ByteBudget::Lease>> ByteBudget::acquire(std::shared_ptr<ByteBudget> budget, size_t n,
                                                                std::chrono::steady_clock::time_point deadline) {
    n = std::min(n, budget->limit_);
    if (n == 0) co_return Lease{};
    if (budget->waiters_.empty() && budget->used_ + n <= budget->limit_) {
        budget->used_ += n;
        co_return Lease(budget, n);
    }
    auto w = std::make_shared<Waiter>(budget->ex_, n);
    w->ready.expires_at(deadline);
    budget->waiters_.push_back(w);
    // Whoever wakes us has charged the bytes already (granted). A wait that
    // ends otherwise (the coroutine destroyed) leaves the queue, or gives
    // back what was granted and never handed over.
    struct Leave {
        std::shared_ptr<ByteBudget> b;
        std::shared_ptr<Waiter> w;
        bool handed = false;
        ~Leave() {
            if (handed) return;
            if (w->granted) {
                b->give_back(w->bytes);
                return;
            }
            auto it = std::find(b->waiters_.begin(), b->waiters_.end(), w);
            if (it != b->waiters_.end()) b->waiters_.erase(it);
            b->grant();
        }
    };
    Leave leave{budget, w};
    while (!w->granted) {
        boost::system::error_code ec;
        co_await w->ready.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        // Not cancelled by a grant: the deadline passed (Leave dequeues us).
        if (!ec && !w->granted) co_return std::nullopt;
    }
    leave.handed = true;
    co_return Lease(budget, n);
}

void ByteBudget::give_back(size_t n) {
    used_ -= std::min(n, used_);
    grant();
}

void ByteBudget::grant() {
    while (!waiters_.empty() && used_ + waiters_.front()->bytes <= limit_) {
        auto w = waiters_.front();
        waiters_.pop_front();
        used_ += w->bytes;
        w->granted = true;
        w->ready.cancel();
    }
}

}  // namespace pfs
