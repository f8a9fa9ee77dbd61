// A budget of bytes shared by the connections of one server: a request's
// payload is charged before it is read, and returned once its reply is on
// its way, so what peers can make a server hold is bounded however many
// connect and whatever lengths they claim. Waiters are served in order
// (no large request starves behind small ones). One executor only.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <deque>
#include <memory>

#include "asio.hpp"

namespace pfs {

class ByteBudget {
public:
    ByteBudget(asio::any_io_executor ex, size_t limit);

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
    size_t used() const { return used_; }
    size_t waiting() const { return waiters_.size(); }

private:
    struct Waiter;
    void give_back(size_t n);
    void grant();

    asio::any_io_executor ex_;
    size_t limit_;
    size_t used_ = 0;
    std::deque<std::shared_ptr<Waiter>> waiters_;
};

}  // namespace pfs
