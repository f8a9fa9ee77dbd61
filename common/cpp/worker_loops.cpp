#include "worker_loops.hpp"

#include "log.hpp"

namespace pfs {
namespace {
thread_local unsigned t_current_loop = 0;
}

struct WorkerLoops::Loop {
    EventLoop io;
    asio::executor_work_guard<asio::io_context::executor_type> busy = asio::make_work_guard(io);
    std::thread thread;
    bool shut_down = false;
};

WorkerLoops::WorkerLoops(unsigned count) {
    for (unsigned i = 0; i < count; ++i) {
        auto loop = std::make_unique<Loop>();
        loop->thread = std::thread([io = &loop->io, index = i + 1] {
            t_current_loop = index;
            // Handlers turn their own errors into replies; whatever else
            // throws is said, and the loop goes on with its other work.
            for (;;) {
                try {
                    io->run();
                    return;
                } catch (const std::exception& e) {
                    log::error("worker loop: unexpected exception", {{"loop", index}, {"error", e.what()}});
                }
            }
        });
        loops_.push_back(std::move(loop));
    }
}

WorkerLoops::~WorkerLoops() {
    halt();
    shutdown();
}

asio::any_io_executor WorkerLoops::executor(unsigned i) const { return loops_.at(i)->io.get_executor(); }

void WorkerLoops::halt() {
    for (auto& l : loops_) {
        l->busy.reset();
        l->io.stop();
    }
    for (auto& l : loops_)
        if (l->thread.joinable()) l->thread.join();
}

void WorkerLoops::shutdown() {
    for (auto& l : loops_) {
        if (l->shut_down) continue;
        l->io.shutdown();
        l->shut_down = true;
    }
}

unsigned WorkerLoops::current() { return t_current_loop; }

}  // namespace pfs
