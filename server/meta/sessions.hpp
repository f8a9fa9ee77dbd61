// Client sessions on a metadata server: when each client (header.client_id)
// was last heard from, and which files it holds open. A session that is not
// renewed within the timeout expires; the caller then closes its opens and
// releases its locks. Pure logic: time is passed in.
//
// Each session has an epoch: a random number fixed when the session is
// created, which every reply to the client carries. A client that sees the
// epoch change knows that whatever it held here (opens, locks) was lost
// with the session before (it expired, or the server restarted).
//
// Not persisted: after a restart nothing is open (the namespace purges the
// unlinked files a crash left) and clients start new sessions.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <unordered_map>
#include <vector>

#include "entry_key.hpp"
#include "result.hpp"

namespace pfs::meta {

// What an ended session held open: each file with its number of opens.
struct EndedSession {
    uint64_t client = 0;
    std::vector<std::pair<pfs_entry_id, uint32_t>> opens;
};

class Sessions {
public:
    using Clock = std::chrono::steady_clock;
    // Every authenticated peer can invent client ids: bound the table.
    static constexpr size_t kDefaultMaxSessions = 1u << 18;

    explicit Sessions(std::chrono::milliseconds timeout, size_t max_sessions = kDefaultMaxSessions)
        : timeout_(timeout), max_sessions_(max_sessions) {}

    std::chrono::milliseconds timeout() const { return timeout_; }

    // Starts or renews a session and returns its epoch (never 0); -EUSERS
    // when a new one does not fit.
    Result<uint64_t> touch(uint64_t client, Clock::time_point now);
    // The epoch of the client's session; 0 when it has none.
    uint64_t epoch(uint64_t client) const;
    // The client (whose session exists: touch first) opened the file.
    void add_open(uint64_t client, const pfs_entry_id& file);
    // false when the client has no open of the file on record.
    bool remove_open(uint64_t client, const pfs_entry_id& file);
    uint32_t opens(uint64_t client, const pfs_entry_id& file) const;

    // Removes and returns the sessions last heard from more than the
    // timeout before now.
    std::vector<EndedSession> expire(Clock::time_point now);
    // Removes the client's session now (SESSION_END); nullopt if none.
    std::optional<EndedSession> end(uint64_t client);

    bool has(uint64_t client) const { return sessions_.contains(client); }
    size_t size() const { return sessions_.size(); }

private:
    struct Session {
        Clock::time_point last_seen;
        uint64_t epoch = 0;
        std::map<EntryKey, uint32_t> opens;
    };
    uint64_t new_epoch();

    static EndedSession ended(uint64_t client, Session& s);

    std::chrono::milliseconds timeout_;
    size_t max_sessions_;
    std::unordered_map<uint64_t, Session> sessions_;
    std::mt19937_64 random_{std::random_device{}()};
};

}  // namespace pfs::meta
