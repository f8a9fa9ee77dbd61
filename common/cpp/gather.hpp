// Runs coroutines concurrently and waits for all of them: the fan-out of one
// striped read or write to many storage targets.
#pragma once

#include <functional>
#include <optional>
#include <memory>
#include <vector>

#include "asio.hpp"
#include "result.hpp"

namespace pfs {

template <class T>
using Task = std::function<awaitable<Result<T>>()>;

// Results in task order. A task that throws yields an Error.
template <class T>
awaitable<std::vector<Result<T>>> gather(std::vector<Task<T>> tasks) {
    auto ex = co_await asio::this_coro::executor;
    struct State {
        explicit State(asio::any_io_executor e, size_t n) : done(e), remaining(n) {}
        asio::steady_timer done;
        size_t remaining;
        std::vector<std::optional<Result<T>>> results;
    };
    auto state = std::make_shared<State>(ex, tasks.size());
    state->results.resize(tasks.size());
    state->done.expires_at(std::chrono::steady_clock::time_point::max());
    for (size_t i = 0; i < tasks.size(); ++i) {
        auto run = [state, i, task = std::move(tasks[i])]() -> awaitable<void> {
            try {
                state->results[i] = co_await task();
            } catch (const std::exception& e) {
                state->results[i] = Result<T>(Error{-EIO, e.what()});
            }
            if (--state->remaining == 0) state->done.cancel();
        };
        asio::co_spawn(ex, std::move(run), asio::detached);
    }
    if (state->remaining > 0) {
        boost::system::error_code ec;
        co_await state->done.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
    std::vector<Result<T>> out;
    out.reserve(tasks.size());
    for (auto& r : state->results) out.push_back(std::move(*r));
    co_return out;
}

}  // namespace pfs
