#include "session_keeper.hpp"

#include <algorithm>
#include <vector>

#include "log.hpp"

namespace pfs::client {

using namespace std::chrono_literals;

// Shared with the renewal coroutines, which may outlive the keeper by one
// wake-up: they touch the cluster only while `stopped` is false.
struct SessionKeeper::State {
    explicit State(asio::any_io_executor ex) : timer(ex) {}
    using Clock = std::chrono::steady_clock;
    struct Server {
        uint64_t epoch = 0;         // of our session there, 0: not known yet
        uint64_t disconnects = 0;   // connections to it lost
        uint64_t verified = 0;      // disconnects before the last renewal answered
        // When the last answered renewal started, and the session timeout
        // it told (0: none answered yet).
        Clock::time_point renewed_at{};
        std::chrono::milliseconds timeout{};
        // Our session there may be gone without our knowing: a connection
        // was lost, or no renewal was answered for a whole timeout (they
        // failed, or this process was frozen) so the server may have ended
        // it over a live connection.
        bool suspect(Clock::time_point now) const {
            return verified != disconnects || (timeout.count() > 0 && now - renewed_at >= timeout);
        }
    };
    asio::steady_timer timer;
    uint64_t client_id = 0;
    std::chrono::milliseconds interval{};  // 0: no server has told its timeout yet
    std::chrono::milliseconds max_interval{};
    std::map<uint32_t, Server> servers;
    size_t holds = 0;
    uint64_t renewals = 0;
    uint64_t losses = 0;
    bool running = false;
    bool stopped = false;

    void stop() {
        stopped = true;
        timer.cancel();
    }
    // SessionKeeper::seen(), on the state alone (a renewal may outlive
    // the keeper).
    void seen(uint32_t node, uint64_t sent, uint64_t epoch) {
        if (epoch == 0) return;
        auto& server = servers[node];
        if (epoch == server.epoch || server.epoch != sent) return;
        if (server.epoch != 0) {
            ++losses;
            log::warn("our session on a metadata server was lost (it expired, or the server restarted): "
                      "the opens and locks held there are gone",
                      {{"node", node}});
        }
        server.epoch = epoch;
    }
};

SessionKeeper::SessionKeeper(Cluster& cluster, uint64_t client_id, std::chrono::milliseconds max_interval)
    : cluster_(cluster), state_(std::make_shared<State>(cluster.executor())) {
    state_->client_id = client_id;
    state_->max_interval = std::max(max_interval, std::chrono::milliseconds(50));
    cluster.on_close([weak = std::weak_ptr<State>(state_)] {
        if (auto state = weak.lock()) state->stop();
    });
    cluster.on_disconnect([weak = std::weak_ptr<State>(state_)](uint32_t node) {
        auto state = weak.lock();
        if (!state) return;
        if (auto it = state->servers.find(node); it != state->servers.end()) ++it->second.disconnects;
    });
}

SessionKeeper::~SessionKeeper() { state_->stop(); }

uint64_t SessionKeeper::client_id() const { return state_->client_id; }

uint64_t SessionKeeper::renewals() const { return state_->renewals; }

uint64_t SessionKeeper::losses() const { return state_->losses; }

void SessionKeeper::used(uint32_t meta_node) { state_->servers.try_emplace(meta_node); }

void SessionKeeper::hold() {
    ++state_->holds;
    if (state_->running || state_->stopped) return;
    state_->running = true;
    asio::co_spawn(cluster_.executor(), renew_loop(state_, cluster_), asio::detached);
}

void SessionKeeper::release() {
    if (state_->holds > 0) --state_->holds;
}

uint64_t SessionKeeper::epoch(uint32_t meta_node) const {
    auto it = state_->servers.find(meta_node);
    return it == state_->servers.end() ? 0 : it->second.epoch;
}

void SessionKeeper::seen(uint32_t meta_node, uint64_t sent, uint64_t epoch) { state_->seen(meta_node, sent, epoch); }

bool SessionKeeper::lost(uint32_t meta_node, uint64_t held) const {
    uint64_t now = epoch(meta_node);
    return held != 0 && now != 0 && held != now;
}

awaitable<void> SessionKeeper::verify(uint32_t meta_node) {
    auto it = state_->servers.find(meta_node);
    if (it == state_->servers.end() || state_->stopped) co_return;
    if (!it->second.suspect(State::Clock::now())) co_return;
    (void)co_await renew(state_, cluster_, meta_node);  // an answer clears the suspicion
}

awaitable<Status> SessionKeeper::end() {
    auto state = state_;
    state->stop();
    auto servers = std::move(state->servers);
    state->servers.clear();
    Status result = ok_status();
    for (const auto& [node, server] : servers) {
        auto r = co_await cluster_.call_meta_ok(node, PFS_MSG_SESSION_END, Bytes{}, state->client_id);
        if (!r && result) result = r.error();
    }
    co_return result;
}

awaitable<bool> SessionKeeper::renew(std::shared_ptr<State> state, Cluster& cluster, uint32_t node) {
    auto& server = state->servers[node];  // std::map: stays where it is
    uint64_t sent = server.epoch, epoch = 0;
    uint64_t disconnects = server.disconnects;
    const auto start = State::Clock::now();
    auto body = co_await cluster.call_meta_ok(node, PFS_MSG_SESSION_RENEW, Bytes{}, state->client_id, nullptr, &epoch);
    if (state->stopped) co_return false;
    state->seen(node, sent, epoch);
    if (!body) co_return false;
    // The epoch is current as of the request's start.
    server.verified = std::max(server.verified, disconnects);
    ++state->renewals;
    auto session = decode(*body, pfs_x_session);
    if (!session) co_return true;
    server.renewed_at = std::max(server.renewed_at, start);
    server.timeout = std::chrono::milliseconds(session->timeout_ms);
    auto third = std::chrono::milliseconds(session->timeout_ms / 3);
    auto interval = std::clamp(third, std::chrono::milliseconds(50), state->max_interval);
    if (state->interval.count() == 0 || interval < state->interval) state->interval = interval;
    co_return true;
}

awaitable<void> SessionKeeper::renew_loop(std::shared_ptr<State> state, Cluster& cluster) {
    // The request that took the hold renewed already: wait first, unless
    // no server has said yet how long its sessions last.
    bool renew_now = state->interval.count() == 0;
    while (!state->stopped && state->holds > 0) {
        if (renew_now && state->interval.count() == 0) {
            // The first round tells how long sessions last: wait for it.
            std::vector<uint32_t> nodes;
            for (const auto& [node, server] : state->servers) nodes.push_back(node);
            for (uint32_t node : nodes) {
                if (state->stopped) break;
                co_await renew(state, cluster, node);
            }
        } else if (renew_now) {
            // All at once: a server that does not answer delays no other.
            for (const auto& [node, server] : state->servers)
                asio::co_spawn(cluster.executor(), renew(state, cluster, node), asio::detached);
        }
        if (state->stopped) break;
        renew_now = true;
        state->timer.expires_after(state->interval.count() ? state->interval : state->max_interval);
        boost::system::error_code ec;
        co_await state->timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
    state->running = false;
}

}  // namespace pfs::client
