// Errors as explicit results: a value or an Error, never an exception across
// a module boundary.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace pfs {

struct Error {
    int code = 0;         // negative errno, or a wire status (pfs_status)
    std::string message;  // what went wrong, for a person
};

template <class T>
class Result {
public:
    Result(T value) : v_(std::move(value)) {}
    Result(Error error) : v_(std::move(error)) {}

    bool ok() const { return v_.index() == 0; }
    explicit operator bool() const { return ok(); }
    T& value() { return std::get<0>(v_); }
    const T& value() const { return std::get<0>(v_); }
    T& operator*() { return value(); }
    const T& operator*() const { return value(); }
    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }
    const Error& error() const { return std::get<1>(v_); }

private:
    std::variant<T, Error> v_;
};

struct Unit {};

// Result of an operation with nothing to return.
using Status = Result<Unit>;

inline Status ok_status() { return Unit{}; }

}  // namespace pfs
