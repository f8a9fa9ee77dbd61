// The project's only way to include Boost.Asio. Boost 1.74's awaitable.hpp
// uses std::exchange without including <utility>, and Asio is compiled once
// (BOOST_ASIO_SEPARATE_COMPILATION, see asio_impl.cpp) to keep builds fast
// on small machines: include this only in .cpp files that need it.
#pragma once

#include <utility>

#include <boost/asio.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/redirect_error.hpp>

namespace pfs {
namespace asio = boost::asio;
using asio::awaitable;
using asio::ip::tcp;

// A daemon's event loop. Once run() returns, shutdown() destroys the handlers
// still pending (suspended coroutine frames among them) while the objects
// they point into are alive; those objects, which hold the loop's sockets and
// timers, must then go before the loop itself does.
class EventLoop : public asio::io_context {
public:
    using asio::io_context::shutdown;
};
}  // namespace pfs
