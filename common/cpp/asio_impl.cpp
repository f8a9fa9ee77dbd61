// Compiles Boost.Asio's implementation once for the whole project.
#include <utility>

#include <boost/asio/impl/src.hpp>
