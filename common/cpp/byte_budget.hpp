// A budget of bytes shared by the connections of one server: a request's
// payload is charged before it is read, and returned once its reply is on
// its way, so what peers can make a server hold is bounded however many
// connect and whatever lengths they claim. Waiters are served in order
// (no large request starves behind small ones). Safe from several event
// loops at once: a waiter is woken on its own executor.
#pragma once

#include <chrono>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>

#include "asio.hpp"

namespace pfs {

class ByteBudget {
public:
    explicit ByteBudget(size_t limit);

    // Bytes charged until it dies (or is released).
    class Lease {
    public:
        Lease() = default;
        Lease(Lease&& other) noexcept : budget_(std::move(other.budget_)), bytes_(other.bytes_) { other.bytes_ = 0; }
        Lease& operator=(Lease&& other) noexcept;
        ~Lease() { release(); }
        void release();
        size_t bytes() const { return bytes_; }

    private:
        friend class ByteBudget;
        Lease(std::shared_ptr<ByteBudget> budget, size_t bytes) : budget_(std::move(budget)), bytes_(bytes) {}
        std::shared_ptr<ByteBudget> budget_;
        size_t bytes_ = 0;
    };

    // Waits until n bytes fit (n above the limit waits for an empty budget
    // and takes all of it); nullopt when they did not by the deadline.
    static awaitable<std::optional<Lease>> acquire(std::shared_ptr<ByteBudget> budget, size_t n,
                                                   std::chrono::steady_clock::time_point deadline =
                                                       std::chrono::steady_clock::time_point::max());

    size_t limit() const { return limit_; }
    size_t used() const;
    size_t waiting() const;

private:
    struct Waiter;
    void give_back(size_t n);
    void grant();  // with mu_ held

    const size_t limit_;
    mutable std::mutex mu_;  // used_, waiters_, each waiter's granted
    size_t used_ = 0;
    std::deque<std::shared_ptr<Waiter>> waiters_;
};

}  // namespace pfs
