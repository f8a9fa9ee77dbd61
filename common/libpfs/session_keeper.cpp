#include "session_keeper.hpp"

#include <algorithm>

namespace pfs::client {

using namespace std::chrono_literals;

// Shared with the renewal coroutine, which may outlive the keeper by one
// wake-up: it touches the cluster only while `stopped` is false.
struct SessionKeeper::State {
    explicit State(asio::any_io_executor ex) : timer(ex) {}
    asio::steady_timer timer;
    uint64_t client_id = 0;
    std::chrono::milliseconds interval{};  // 0: no server has told its timeout yet
    std::chrono::milliseconds max_interval{};
    std::set<uint32_t> nodes;
    size_t holds = 0;
    uint64_t renewals = 0;
    bool running = false;
    bool stopped = false;

    void stop() {
        stopped = true;
        timer.cancel();
    }
};

SessionKeeper::SessionKeeper(Cluster& cluster, uint64_t client_id, std::chrono::milliseconds max_interval)
    : cluster_(cluster), state_(std::make_shared<State>(cluster.executor())) {
    state_->client_id = client_id;
    state_->max_interval = std::max(max_interval, std::chrono::milliseconds(50));
    cluster.on_close([weak = std::weak_ptr<State>(state_)] {
        if (auto state = weak.lock()) state->stop();
    });
}

SessionKeeper::~SessionKeeper() { state_->stop(); }

uint64_t SessionKeeper::client_id() const { return state_->client_id; }

uint64_t SessionKeeper::renewals() const { return state_->renewals; }

void SessionKeeper::used(uint32_t meta_node) { state_->nodes.insert(meta_node); }

void SessionKeeper::hold() {
    ++state_->holds;
    if (state_->running || state_->stopped) return;
    state_->running = true;
    asio::co_spawn(cluster_.executor(), renew_loop(state_, cluster_), asio::detached);
}

void SessionKeeper::release() {
    if (state_->holds > 0) --state_->holds;
}

awaitable<Status> SessionKeeper::end() {
    auto state = state_;
    state->stop();
    auto nodes = std::move(state->nodes);
    state->nodes.clear();
    Status result = ok_status();
    for (uint32_t node : nodes) {
        auto r = co_await cluster_.call_meta_ok(node, PFS_MSG_SESSION_END, Bytes{}, state->client_id);
        if (!r && result) result = r.error();
    }
    co_return result;
}

awaitable<void> SessionKeeper::renew_loop(std::shared_ptr<State> state, Cluster& cluster) {
    // The request that took the hold renewed already: wait first, unless
    // no server has said yet how long its sessions last.
    bool renew_now = state->interval.count() == 0;
    while (!state->stopped && state->holds > 0) {
        if (renew_now) {
            auto nodes = state->nodes;
            for (uint32_t node : nodes) {
                auto body = co_await cluster.call_meta_ok(node, PFS_MSG_SESSION_RENEW, Bytes{}, state->client_id);
                if (state->stopped) break;
                if (!body) continue;  // that server is away: the next round (or request) renews
                ++state->renewals;
                auto session = decode(*body, pfs_x_session);
                if (!session) continue;
                auto third = std::chrono::milliseconds(session->timeout_ms / 3);
                auto interval = std::clamp(third, std::chrono::milliseconds(50), state->max_interval);
                if (state->interval.count() == 0 || interval < state->interval) state->interval = interval;
            }
            if (state->stopped) break;
        }
        renew_now = true;
        state->timer.expires_after(state->interval.count() ? state->interval : state->max_interval);
        boost::system::error_code ec;
        co_await state->timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
    state->running = false;
}

}  // namespace pfs::client
