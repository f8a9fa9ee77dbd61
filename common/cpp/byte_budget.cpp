#include "byte_budget.hpp"

#include <algorithm>
#include <chrono>

namespace pfs {

struct ByteBudget::Waiter {
    explicit Waiter(asio::any_io_executor ex, size_t n) : ready(ex), bytes(n) {}
    asio::steady_timer ready;  // on the waiter's executor: cancelled there when granted
    size_t bytes;
    bool granted = false;
};

ByteBudget::ByteBudget(size_t limit) : limit_(std::max<size_t>(limit, 1)) {}

size_t ByteBudget::used() const {
    std::lock_guard lock(mu_);
    return used_;
}

size_t ByteBudget::waiting() const {
    std::lock_guard lock(mu_);
    return waiters_.size();
}

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
    auto w = std::make_shared<Waiter>(co_await asio::this_coro::executor, n);
    w->ready.expires_at(deadline);
    {
        std::lock_guard lock(budget->mu_);
        if (budget->waiters_.empty() && budget->used_ + n <= budget->limit_) {
            budget->used_ += n;
            co_return Lease(budget, n);
        }
        budget->waiters_.push_back(w);
    }
    // Whoever wakes us has charged the bytes already (granted). A wait that
    // ends otherwise (the coroutine destroyed) leaves the queue, or gives
    // back what was granted and never handed over.
    struct Leave {
        std::shared_ptr<ByteBudget> b;
        std::shared_ptr<Waiter> w;
        bool handed = false;
        ~Leave() {
            if (handed) return;
            std::lock_guard lock(b->mu_);
            if (w->granted) {
                b->used_ -= std::min(w->bytes, b->used_);
            } else {
                auto it = std::find(b->waiters_.begin(), b->waiters_.end(), w);
                if (it != b->waiters_.end()) b->waiters_.erase(it);
            }
            b->grant();
        }
    };
    Leave leave{budget, w};
    auto granted = [&] {
        std::lock_guard lock(budget->mu_);
        return w->granted;
    };
    while (!granted()) {
        boost::system::error_code ec;
        co_await w->ready.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        // Not cancelled by a grant: the deadline passed (Leave dequeues us,
        // or gives back what a grant that raced with it charged).
        if (!ec && !granted()) co_return std::nullopt;
    }
    leave.handed = true;
    co_return Lease(budget, n);
}

void ByteBudget::give_back(size_t n) {
    std::lock_guard lock(mu_);
    used_ -= std::min(n, used_);
    grant();
}

void ByteBudget::grant() {
    while (!waiters_.empty() && used_ + waiters_.front()->bytes <= limit_) {
        auto w = waiters_.front();
        waiters_.pop_front();
        used_ += w->bytes;
        w->granted = true;
        // The timer belongs to the waiter's loop, which may be another.
        asio::post(w->ready.get_executor(), [w] { w->ready.cancel(); });
    }
}

}  // namespace pfs
