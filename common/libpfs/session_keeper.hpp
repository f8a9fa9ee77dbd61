// Keeps a client's sessions on the metadata servers alive while it holds
// something there (open files and their locks): SESSION_RENEW to every
// server it has talked to, all at once, a third of the servers' timeout
// apart. Every request renews as well; the timer covers the idle times.
// Destroying the keeper (or closing the cluster) stops the renewals and the
// servers end the sessions after their timeout; end() ends them at once.
//
// It also knows which session it has on each server: every reply of a
// metadata server carries the epoch of the client's session there, fixed
// when the server created it. Another epoch than the one seen before means
// that the session before is gone (it expired, or the server restarted)
// and with it every open and lock the client held there: what was taken
// under an epoch is lost once the server's epoch is another (lost()). A
// lost connection to a server, or a session timeout without an answered
// renewal, makes the next use check the session first (verify()), so a
// restart or an expiry is noticed before data is read, not a renewal
// later.
#pragma once

#include <chrono>
#include <map>
#include <memory>

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

    // The epoch of our session on a server as last seen (0: none yet).
    uint64_t epoch(uint32_t meta_node) const;
    // A reply of meta_node to a request sent while epoch() was `sent`
    // carried `epoch` (0: none). A new one is taken unless the epoch
    // changed while the request was under way (then the reply is older
    // news than what changed it).
    void seen(uint32_t meta_node, uint64_t sent, uint64_t epoch);
    // Whether what was granted under epoch `held` on meta_node is gone.
    bool lost(uint32_t meta_node, uint64_t held) const;
    // After a lost connection to meta_node, or when no renewal there was
    // answered for a whole session timeout, renews there before it
    // returns: the epoch is current. Errors are left for the next use.
    awaitable<void> verify(uint32_t meta_node);
    // Sessions found gone so far (changes of epoch).
    uint64_t losses() const;

private:
    struct State;
    static awaitable<void> renew_loop(std::shared_ptr<State> state, Cluster& cluster);
    // One SESSION_RENEW; false when it got no answer.
    static awaitable<bool> renew(std::shared_ptr<State> state, Cluster& cluster, uint32_t node);

    Cluster& cluster_;
    std::shared_ptr<State> state_;
};

}  // namespace pfs::client
