// Coroutines driven to completion from plain, synchronous code on a private
// io_context: pfs-ctl's clients and libpfs's C interface. Includes Asio.
#pragma once

#include <exception>
#include <memory>
#include <optional>
#include <stdexcept>
#include <vector>

#include "asio.hpp"

namespace pfs {

// One coroutine under way, and what it gave.
template <class T>
struct Pending {
    std::optional<T> result;
    std::exception_ptr failure;
    bool finished = false;
};

namespace detail {
template <class T>
awaitable<void> store(awaitable<T> task, std::optional<T>& out) {
    out.emplace(co_await std::move(task));
}
}  // namespace detail

// Starts task on io; `p` must stay where it is until wait() returns.
template <class T>
void start(asio::io_context& io, awaitable<T> task, Pending<T>& p) {
    asio::co_spawn(io, detail::store(std::move(task), p.result), [&p](std::exception_ptr e) {
        p.failure = e;
        p.finished = true;
    });
}

// Runs the loop until p's coroutine is done; rethrows what it threw.
template <class T>
T wait(asio::io_context& io, Pending<T>& p) {
    // Not io.run(): connections' readers stay parked on their sockets.
    io.restart();
    while (!p.finished)
        if (io.run_one() == 0) throw std::logic_error("the event loop ran out of work before a request finished");
    if (p.failure) std::rethrow_exception(p.failure);
    return std::move(*p.result);
}

template <class T>
T run_sync(asio::io_context& io, awaitable<T> task) {
    Pending<T> p;
    start(io, std::move(task), p);
    return wait(io, p);
}

// A pipeline of coroutines: start_step(i) gives step i (nullopt: no more
// steps), finish_step(i, result) takes the results in order of i; at most
// `depth` steps are under way at once. Launching stops at the first false
// from finish_step; every step started is waited for before returning, so
// the buffers they use may live on the caller's stack.
template <class T, class StartStep, class FinishStep>
void pipeline(asio::io_context& io, size_t depth, StartStep start_step, FinishStep finish_step) {
    std::vector<std::unique_ptr<Pending<T>>> ring(depth);
    size_t launched = 0, finished = 0;
    bool more = true, stopped = false;
    std::exception_ptr failure;
    for (;;) {
        while (more && !stopped && !failure && launched - finished < depth) {
            auto step = [&]() -> std::optional<awaitable<T>> {
                try {
                    return start_step(launched);
                } catch (...) {
                    failure = std::current_exception();
                    return std::nullopt;
                }
            }();
            if (!step) {
                if (!failure) more = false;
                break;
            }
            auto& slot = ring[launched % depth];
            slot = std::make_unique<Pending<T>>();
            start(io, std::move(*step), *slot);
            ++launched;
        }
        if (finished == launched) break;
        try {
            T result = wait(io, *ring[finished % depth]);
            if (!stopped && !failure && !finish_step(finished, std::move(result))) stopped = true;
        } catch (...) {
            if (!failure) failure = std::current_exception();
        }
        ++finished;
    }
    if (failure) std::rethrow_exception(failure);
}

}  // namespace pfs
