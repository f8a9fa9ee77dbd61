// Keeps a client's sessions on the metadata servers alive while it holds
// something there (open files and their locks): SESSION_RENEW to every
// server it has talked to, a third of the servers' timeout apart. Every
// request renews as well; the timer covers the idle times. Destroying the
// keeper (or closing the cluster) stops the renewals and the servers end
// the sessions after their timeout; end() ends them at once.
#pragma once

#include <chrono>
#include <memory>
#include <set>

#include "cluster.hpp"

namespace pfs::client {

class SessionKeeper {
public:
    SessionKeeper(Cluster& cluster, uint64_t client_id, std::chrono::milliseconds max_interval);
    ~SessionKeeper();
    SessionKeeper(const SessionKeeper&) = delete;
    SessionKeeper& operator=(const SessionKeeper&) = delete;

    uint64_t client_id() const;
    // A metadata server that now has a session of this client.
    void used(uint32_t meta_node);
    // Something that needs the sessions was taken (an open file) or given back.
    void hold();
    void release();
    // SESSION_END to every server used; renewals stop for good.
    awaitable<Status> end();
    // SESSION_RENEWs answered so far.
    uint64_t renewals() const;

private:
    struct State;
    static awaitable<void> renew_loop(std::shared_ptr<State> state, Cluster& cluster);

    Cluster& cluster_;
    std::shared_ptr<State> state_;
};

}  // namespace pfs::client
