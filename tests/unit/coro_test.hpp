// Running coroutines in unit tests.
#pragma once

#include <catch2/catch.hpp>

#include <chrono>

#include "asio.hpp"

namespace pfs::test {

// Runs body() as a coroutine on io until it finishes; fails after timeout.
// Exceptions (a failed REQUIRE) propagate out of io.run_for to Catch.
template <class F>
void run_coro(asio::io_context& io, F&& body, std::chrono::seconds timeout = std::chrono::seconds(60)) {
    bool done = false;
    asio::co_spawn(
        io,
        [&]() -> awaitable<void> {
            co_await body();
            done = true;
        },
        [](std::exception_ptr e) {
            if (e) std::rethrow_exception(e);
        });
    io.run_for(timeout);
    io.restart();
    REQUIRE(done);
}

}  // namespace pfs::test

// Requires a Result or Status to be ok, printing its error otherwise. Use it
// instead of REQUIRE(co_await ...): GCC 12 also runs a co_await that sits in
// the never-taken `false && (expr)` branch of Catch's macros, so the awaited
// operation would run twice (and a mkdir or unlink fail the second time).
#define CO_REQUIRE_OK(expr)                                        \
    do {                                                           \
        auto co_require_ok_ = (expr);                              \
        if (!co_require_ok_) FAIL(co_require_ok_.error().message); \
    } while (0)
