// Event loops on threads of their own beside a daemon's main loop, so a
// server uses every core: RpcServer hands each new connection to the next
// loop in turn, and that connection's framing, decoding, handlers and
// replies all run there; a storage server gives each loop an io_uring of
// its own (StorageService). What the loops share is locked where it lives.
#pragma once

#include <memory>
#include <thread>
#include <vector>

#include "asio.hpp"

namespace pfs {

class WorkerLoops {
public:
    // count threads, each running a loop of its own (0: none, the main
    // loop does everything). They start at once and idle until given work.
    explicit WorkerLoops(unsigned count);
    // Halts and shuts down whatever is still running.
    ~WorkerLoops();
    WorkerLoops(const WorkerLoops&) = delete;
    WorkerLoops& operator=(const WorkerLoops&) = delete;

    unsigned size() const { return static_cast<unsigned>(loops_.size()); }
    asio::any_io_executor executor(unsigned i) const;
    // Stops every loop and joins its thread; what the loops had pending stays
    // suspended (nothing is destroyed, no I/O buffer freed under the kernel).
    void halt();
    // After halt: destroys what the loops had pending, while the objects
    // their handlers point into are alive (EventLoop::shutdown).
    void shutdown();

    // The loop this thread runs: 1 + the index of a worker, 0 on any other
    // thread (the main loop, helper pools, tests).
    static unsigned current();

private:
    struct Loop;
    std::vector<std::unique_ptr<Loop>> loops_;
};

}  // namespace pfs
