// pfs-storage's request handlers: the chunk messages (PFS_MSG_CHUNK_*),
// each addressed to one of this node's storage targets by its
// mgmtd-assigned id. The ids become known only once the node registered,
// so a request's target is looked up when it arrives. CHUNK_LIST (fsck)
// lists directories, which io_uring cannot do: it runs on a helper thread
// so the event loop never waits for the disk; so does CHUNK_COPY's
// copy_file_range.
//
// Its handlers run on every loop of the server (WorkerLoops): each loop has
// an io_uring of its own, the registered buffers split among them.
#pragma once

#include <memory>
#include <vector>

#include "chunk_store.hpp"
#include "node_agent.hpp"
#include "rpc_server.hpp"

namespace pfs {

struct StorageServiceOptions {
    UringConfig ring;
    // Registered buffers for I/O up to buffer_size; 0 buffers: none. Without
    // CAP_IPC_LOCK they count against RLIMIT_MEMLOCK (often 8 MiB); if they
    // cannot be registered the server runs without them and says so.
    size_t fixed_buffers = 16;
    size_t fixed_buffer_size = 1u << 20;
    ChunkStoreOptions chunks;
    // Worker loops the server runs besides its main loop (WorkerLoops):
    // one ring each, and one for the main loop.
    unsigned worker_loops = 0;
};

// What a chunk request is about to do to one file's chunk, for a guard
// (set_guard) to allow or refuse first.
struct ChunkAccess {
    uint16_t type = 0;  // PFS_MSG_CHUNK_*
    pfs_entry_id file{};
    uint64_t end = 0;  // how far into the chunk file it writes or sizes it; 0: it does not
};

// Allows a request (what it returns is kept until the reply is decided) or
// refuses it with the error its reply carries.
using ChunkHold = std::shared_ptr<void>;
using ChunkGuard = std::function<awaitable<Result<ChunkHold>>(const ChunkAccess&)>;
// Called once a write or copy into a file's chunk is in the store, before
// the reply: pfs-meta's inline store records the size it reaches and the
// file's mtime there and gives the file's attributes, which a CHUNK_WRITE's
// reply then carries (pfs_inline_written). A failure is the request's.
using ChunkRecorder = std::function<Result<pfs_attr>(const Request&, const pfs_entry_id& file, uint64_t end)>;

class StorageService : public std::enable_shared_from_this<StorageService> {
public:
    // targets: the node's targets, in the agent's order; the vector must
    // outlive the service and its ids may change as registration proceeds
    // (on the main loop, which then calls refresh_ids). Fails when io_uring
    // is not available or a target cannot be opened.
    static Result<std::shared_ptr<StorageService>> create(const std::vector<AgentTarget>& targets,
                                                          StorageServiceOptions options = {});
    ~StorageService();

    // Registers the chunk handlers; they keep the service alive.
    void install(RpcServer& server);
    // And SYNC_ALL's, where the targets are the server's own (pfs-storage:
    // pfs-meta answers SYNC_ALL itself, its inline store's sync_all with it).
    void install_sync_all(RpcServer& server);
    // Every request for a file's chunk (not UNLINK_MANY and LIST: the
    // servers' and fsck's) asks guard first. Before install.
    void set_guard(ChunkGuard guard) { guard_ = std::move(guard); }
    // Every CHUNK_WRITE and CHUNK_COPY that succeeds tells recorder. Before
    // install.
    void set_recorder(ChunkRecorder recorder) { recorder_ = std::move(recorder); }
    // The store of the target with this id, or null.
    ChunkStore* store(uint32_t target_id);
    // Takes the targets' ids as they are now (main loop; the handlers on
    // other loops read the copy).
    void refresh_ids();
    // SIGTERM: every target's data to disk, its write verifier kept for
    // the next start (write_verifier.hpp).
    awaitable<void> stop_cleanly();
    // Every target's data to disk (syncfs, on the helper thread): a
    // client's syncfs(2), which follows the writes it waits for.
    awaitable<Status> sync_all();
    // Waits for the helper thread's work (listings, copies) to end: before
    // the loops it hands results back to are shut down.
    void join_helpers();

    awaitable<Reply> write(Request& req);
    awaitable<Reply> read(Request& req);
    awaitable<Reply> truncate(Request& req);
    awaitable<Reply> sync(Request& req);
    awaitable<Reply> unlink(Request& req);
    awaitable<Reply> unlink_many(Request& req);
    awaitable<Reply> stat(Request& req);
    awaitable<Reply> list(Request& req);
    awaitable<Reply> fallocate(Request& req);
    awaitable<Reply> seek(Request& req);
    awaitable<Reply> copy(Request& req);
    awaitable<Reply> sync_all_request(Request& req);

private:
    struct Target;

    explicit StorageService(const std::vector<AgentTarget>& targets);
    // The target with this id, or null (PFS_E_UNKNOWN_TARGET).
    Target* find(uint32_t target_id);
    Reply failed(Target& target, const Error& e);
    awaitable<Result<ChunkHold>> admit(const ChunkAccess& access);

    const std::vector<AgentTarget>& agent_targets_;
    std::vector<std::unique_ptr<Uring>> rings_;     // one per loop; declared before the stores, which use them
    std::vector<std::unique_ptr<Target>> targets_;  // same order as agent_targets_
    // Blocking work off the event loop: CHUNK_LIST's directory reads,
    // CHUNK_COPY's copy_file_range, SYNC_ALL's syncfs.
    std::unique_ptr<asio::thread_pool> lister_;
    ChunkGuard guard_;
    ChunkRecorder recorder_;
};

}  // namespace pfs
