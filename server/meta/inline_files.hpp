// Inline files (Lustre's Data-on-MDT): a file made in a directory whose
// pattern has an inline_max keeps its data here, in a chunk store of this
// metadata server's own under its state directory, while it fits in that
// many bytes. Clients see a one-target layout (PFS_INLINE_TARGET) and send
// their chunk requests for it here, where a guard admits them: a request
// that would grow the data past inline_max first moves it out (copied to
// the storage targets chosen at create, synced there, the change journaled
// and made durable, the local copy deleted), then is answered PFS_E_MOVED,
// so the client fetches the layout again and sends it there. Requests under
// way finish before a move begins, and those that arrive during one wait
// for it: nothing acknowledged here is missing from the copy.
//
// Clients that do not follow inline layouts (no PFS_FLAG_INLINE_LAYOUTS on
// their requests) never see one: a file is moved out before its layout is
// given to them.
//
// On the namespace's loop, as the service that owns it.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "entry_key.hpp"
#include "namespace.hpp"
#include "storage_service.hpp"
#include "striped_io.hpp"

namespace pfs::meta {

class InlineFiles {
public:
    using Durable = std::function<awaitable<Status>()>;

    InlineFiles(asio::any_io_executor ex, client::StripedIo& files) : ex_(std::move(ex)), files_(files) {}

    // The store under dir (made if missing) and its chunk handlers on
    // server; recorder is told of each write and copy into a file.
    Status open(const std::filesystem::path& dir, RpcServer& server, ChunkRecorder recorder,
                const ChunkStoreOptions& chunks);
    void attach(Namespace& ns, Durable durable);
    // SIGTERM: the store's data to disk, its write verifier kept.
    awaitable<void> stop_cleanly();
    // The store's data to disk (SYNC_ALL).
    awaitable<Status> sync_all();

    // The layout a client is given for a file: the inline one if its data
    // is inline and the client follows inline layouts; else (after moving
    // the data out, for one that does not) the file's own.
    awaitable<Result<StripeLayout>> layout_for(const pfs_entry_id& file, bool client_follows);
    // The layout for this server's own chunk requests reaching `end` bytes
    // into the file (0: none): inline while the data stays so.
    awaitable<Result<StripeLayout>> data_layout(const pfs_entry_id& file, uint64_t end);
    // All `size` bytes of an inline file (zeros where nothing was
    // written); nothing when the file is not inline.
    awaitable<std::optional<SharedBytes>> content(const pfs_entry_id& file, uint64_t size);
    // Bytes an inline file's data takes on disk here (admitted as a
    // CHUNK_STAT: not while the data moves).
    awaitable<Result<uint64_t>> allocated(const pfs_entry_id& file);
    // A file just made inline here: until a chunk request for it comes,
    // it has no data in the store, and its removal deletes nothing there.
    void made(const pfs_entry_id& file);
    // A freed file's inline data, deleted (best effort: after a crash in
    // between, the next start sweeps it).
    void forget(const FreedFile& freed);
    // At start: deletes the data of files that are gone, or whose data
    // moved out, which a crash (or a write that landed after forget) left
    // here. Returns how many files' data it deleted.
    awaitable<size_t> sweep();

private:
    struct Moving;
    awaitable<Result<ChunkHold>> admit(const ChunkAccess& access);
    // Moves a file's data to its storage targets (or waits for the move
    // under way).
    awaitable<Status> move_out(const pfs_entry_id& file);
    awaitable<Status> copy_out(const pfs_entry_id& file, const StripeLayout& layout);
    awaitable<void> wait(const pfs_entry_id& file);
    ChunkStore& store() const;

    asio::any_io_executor ex_;
    client::StripedIo& files_;
    Namespace* ns_ = nullptr;
    Durable durable_;
    std::vector<AgentTarget> targets_;  // the one inline target, for the service
    std::shared_ptr<StorageService> service_;
    // Per file with chunk requests under way or a move: the requests'
    // count, and the move's timer that wakes who waits for it.
    struct State {
        uint32_t in_flight = 0;
        std::shared_ptr<asio::steady_timer> moving;  // set while a move runs
        std::shared_ptr<asio::steady_timer> drained;  // a move waits for in_flight 0
    };
    std::map<EntryKey, State> state_;
    // Files made since this start that no chunk request has reached: no
    // chunk file of theirs in the store. An unlink of one saves a trip
    // through io_uring's workers (the path lookup of a file that is not
    // there), which cost a shared-directory unlink in the TCG guest 7-17%.
    // Bounded: when full it starts again empty, and the files it forgot
    // are deleted the usual way. In memory only: a restart forgets all.
    static constexpr size_t kUnwrittenMax = 1u << 16;
    std::set<EntryKey> unwritten_;
};

}  // namespace pfs::meta
