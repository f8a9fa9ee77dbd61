// What a client knows of the cluster: which storage server serves each
// target. Loaded from pfs-mgmtd and kept current by its MAP_CHANGED pushes;
// requests for a target go to a connection pool of the server holding it.
#pragma once

#include <map>
#include <memory>

#include "node_paths.hpp"
#include "rpc_client.hpp"

namespace pfs::client {

struct TargetRoute {
    uint32_t target_id = 0;
    uint32_t node_id = 0;
    uint8_t reachability = PFS_REACH_OFFLINE;
};

class Cluster {
public:
    Cluster(asio::any_io_executor ex, Endpoint mgmtd, auth::Secret secret, ClientConfig config = {},
            size_t connections_per_server = 2);
    ~Cluster();

    // Loads the map and subscribes to its changes.
    awaitable<Status> start();
    // The map fetched again for a caller that may be behind a change it has
    // not been told of yet (the push still on its way): returns the outcome
    // of a refresh begun after the call. Joins the refreshes under way
    // instead of starting its own.
    awaitable<Status> refresh_now();
    Result<TargetRoute> route(uint32_t target_id) const;
    // The storage targets as pfs-mgmtd knows them now (their capacity as of
    // their servers' last heartbeats), the map left as it is: a push tells
    // of a target's capacity only when its class changes.
    awaitable<Result<std::vector<pfs_target_info>>> fetch_targets();
    // bulk: data sent beside the payload, and where the reply's goes.
    awaitable<Result<Reply>> call_target(uint32_t target_id, uint16_t type, Bytes payload, Bulk bulk = {});
    // To the metadata server that owns an entry (pfs_entry_id::owner_node),
    // on behalf of a client session (0: none) and of a user (as). When the
    // server answers, *session_epoch gets the epoch of the client's session
    // its reply carries (whatever the status; 0 when none).
    awaitable<Result<Bytes>> call_meta_ok(uint32_t meta_node, uint16_t type, Result<Bytes> payload,
                                          uint64_t client_id = 0, const Credentials* as = nullptr,
                                          uint64_t* session_epoch = nullptr);
    // The same with bulk data (where the reply's goes); the whole reply.
    awaitable<Result<Reply>> call_meta(uint32_t meta_node, uint16_t type, Result<Bytes> payload, uint64_t client_id,
                                       const Credentials* as, uint64_t* session_epoch, Bulk bulk);
    // The metadata server holding the root directory: the first one registered.
    Result<uint32_t> root_meta() const;
    // Like call_target, a failed reply status becomes an Error.
    awaitable<Result<Bytes>> call_target_ok(uint32_t target_id, uint16_t type, Result<Bytes> payload);
    // A request about file's chunk on a target of its layout: as
    // call_target, and PFS_INLINE_TARGET is the file's metadata server.
    awaitable<Result<Reply>> call_chunk(const pfs_entry_id& file, uint32_t target_id, uint16_t type, Bytes payload,
                                        Bulk bulk = {});
    awaitable<Result<Bytes>> call_chunk_ok(const pfs_entry_id& file, uint32_t target_id, uint16_t type,
                                           Result<Bytes> payload);

    RpcClient& mgmtd() { return *mgmtd_; }
    // The client identities whose ids this cluster's connections may bind.
    ClientIdentities& identities() { return *identities_; }
    // The storage targets as of the last refresh.
    const std::vector<pfs_target_info>& targets() const { return targets_; }
    // The metadata servers as of the last refresh, by node id.
    const std::vector<pfs_node_info>& meta_nodes() const { return meta_info_; }
    // After each refresh of the map.
    void on_refresh(std::function<void()> fn) { on_refresh_ = std::move(fn); }
    uint64_t map_version() const { return map_version_; }
    uint64_t refreshes() const { return refreshes_; }
    asio::any_io_executor executor() const { return ex_; }
    // INVALIDATE notices from the metadata servers for one client id (the
    // server names the client in the notice's header); INVALIDATE_ALL
    // arrives as a notice with count 0.
    using NoticeFn = std::function<void(const pfs_invalidate&)>;
    void on_notice(uint64_t client_id, NoticeFn fn) { notices_[client_id] = std::move(fn); }
    void drop_notices(uint64_t client_id) { notices_.erase(client_id); }
    // close() ends what users of the cluster keep running (session renewals).
    void on_close(std::function<void()> fn) { on_close_.push_back(std::move(fn)); }
    // A connection to a server (by node id) was lost: what the server kept
    // for a client may be gone with it (a metadata server that restarted).
    void on_disconnect(std::function<void(uint32_t)> fn) { on_disconnect_.push_back(std::move(fn)); }
    void close();

private:
    awaitable<Status> refresh();
    awaitable<Status> fetch_map();
    awaitable<Status> subscribe();
    void schedule_refresh();

    asio::any_io_executor ex_;
    auth::Secret secret_;
    std::shared_ptr<ClientIdentities> identities_ = std::make_shared<ClientIdentities>();
    ClientConfig config_;
    size_t connections_per_server_;
    std::shared_ptr<RpcClient> mgmtd_;
    // The ways to a node in the map (created on first use).
    Result<std::shared_ptr<NodePaths>> paths_to(uint32_t node_id);
    // One request to a node by the path its NodePaths chooses: a request
    // that could not be sent through an RDMA path goes by another; a chunk
    // read or write whose RDMA connection was lost, or that timed out
    // while another way is open, is sent again (at most twice).
    awaitable<Result<Reply>> call_node(uint32_t node_id, uint16_t type, Bytes payload, uint64_t client_id,
                                       const Credentials* as, Bulk bulk);
    void deliver(const Frame& frame);

    std::map<uint32_t, TargetRoute> routes_;
    std::vector<pfs_target_info> targets_;
    std::vector<pfs_node_info> meta_info_;  // metadata servers, by node id
    std::function<void()> on_refresh_;
    std::vector<std::function<void()>> on_close_;
    std::vector<std::function<void(uint32_t)>> on_disconnect_;
    std::map<uint64_t, NoticeFn> notices_;
    std::map<uint32_t, pfs_node_info> nodes_;                // by node id, as of the last refresh
    std::map<uint32_t, std::shared_ptr<NodePaths>> paths_;  // by node id
    uint64_t map_version_ = 0;
    uint64_t refreshes_ = 0;
    bool refreshing_ = false;
    bool stale_ = false;
    // For refresh_now: refreshes begun, the begin number of the last one
    // to end and how it ended; its callers wait on the timer, cancelled
    // (never expiring) whenever a refresh ends.
    uint64_t refreshes_begun_ = 0;
    uint64_t last_ended_ = 0;
    Status last_status_ = ok_status();
    asio::steady_timer refresh_ended_;
    // False once closed (and before the cluster goes away): calls under way
    // stop there instead of resending through it.
    std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace pfs::client
