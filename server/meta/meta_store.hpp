// The metadata server's persistence: the namespace in memory, a journal of
// every op applied to it, and periodic snapshots. Recovery = the newest valid
// snapshot + the journal ops after it.
//
// In <state-dir>/meta/:
//   snapshot-<seq>.bin  the namespace after op seq (Namespace::snapshot bytes
//                       followed by a checksummed trailer)
//   journal-<seq>.log   the ops from seq + 1 on (see journal.hpp)
// <seq> is written with 20 digits, so that names sort by seq.
//
// A journal file ends where the next one starts: journal-<a>.log holds ops
// a+1 .. b and, when a checkpoint at b rotated the journal, journal-<b>.log
// goes on from b+1. Recovery follows that chain from the snapshot it
// loaded, so it can fall back to the previous snapshot when the newest one
// is damaged.
//
// Ordering. The service mutates the namespace through ns() (plan + apply);
// the store's observer encodes each applied op and submits it to the journal
// at once, before anything else runs, so the namespace after op N is exactly
// snapshot + journal up to N. The service replies only after sync():
//
//   ns().mkdir(...)  ->  op applied, seq N submitted  ->  co_await sync()  ->  reply
//
// Applying before the op is durable is safe because no reply (and so no
// acknowledged state) leaves before it is. A crash loses only unacknowledged
// ops; those may or may not survive, as with any file system. Other clients
// may read the effect of an op in the short window before it is durable.
// The exceptions are the service's (finish_early, finish_written: ops
// POSIX makes durable only at an fsync); write_out() is what lets a create
// be answered before its sync yet survive a crash of the process.
//
// Fail-stop: once an op cannot be journaled (a failed write or sync, see
// Journal), the namespace in memory is ahead of the disk for good; every
// later sync(), commit() and checkpoint() fails and the server must restart,
// which recovers what was durable.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>

#include "asio.hpp"
#include "journal.hpp"
#include "namespace.hpp"
#include "result.hpp"
#include "uring.hpp"

namespace pfs::meta {

struct MetaStoreOptions {
    // Journal size past which wants_checkpoint() says a new snapshot is due.
    uint64_t checkpoint_bytes = 64ull << 20;
};

class MetaStore {
public:
    // Loads <state_dir>/meta: the newest snapshot whose checksum and content
    // verify and whose journal is present (falling back to older ones, with
    // a warning), then every journaled op after it. A first start (no files)
    // creates an empty namespace owned by owner_node, with root times `now`.
    // Fails, with a sentence for the operator, when no snapshot is usable,
    // the journal chain has a hole, an op does not apply, or the directory
    // belongs to another node. Runs on the executor the ring serves.
    static awaitable<Result<std::unique_ptr<MetaStore>>> open(std::filesystem::path state_dir,
                                                              uint32_t owner_node, Timespec now, Uring& ring,
                                                              MetaStoreOptions options = {});
    ~MetaStore();
    MetaStore(const MetaStore&) = delete;
    MetaStore& operator=(const MetaStore&) = delete;

    // Mutations through here are journaled (see above); queries too.
    Namespace& ns() { return ns_; }
    const Namespace& ns() const { return ns_; }

    // Returns once every op applied so far is durable.
    awaitable<Status> sync();
    // Every op applied so far written into the journal's file (in the page
    // cache, not yet durable: Journal::write_out); false if not all could be.
    bool write_out();
    // Applies a planned op and returns once it is durable. (Pass a named
    // Op: GCC 12 destroys an aggregate temporary in a co_await expression
    // twice, as in co_await commit(MkdirOp{...}).)
    awaitable<Result<Outcome>> commit(Op op);

    // The journal has grown past options.checkpoint_bytes (and no
    // checkpoint is running).
    bool wants_checkpoint() const;
    // Writes snapshot-<last_seq>.bin (temp file, fdatasync, rename, fsync of
    // the directory), sends later ops to journal-<last_seq>.log, and deletes
    // the files older than the previous snapshot, which stays as a fallback.
    // Ops may go on while it runs. A failed checkpoint leaves the store
    // working with its old files.
    awaitable<Status> checkpoint();

    uint64_t last_seq() const { return journal_->last_seq(); }  // the last op applied
    uint64_t durable_seq() const { return journal_->durable_seq(); }
    uint64_t snapshot_seq() const { return snapshot_seq_; }  // the newest snapshot in use
    const JournalStats& journal_stats() const { return journal_->stats(); }
    const std::filesystem::path& dir() const { return dir_; }
    // Set once the store has stopped (see "Fail-stop").
    std::optional<Error> failure() const;

private:
    struct Loaded;

    MetaStore(Loaded loaded, Uring& ring, MetaStoreOptions options);
    void record(const Op& op);
    void stop(const Error& error);
    awaitable<void> remove_older_than(uint64_t seq);

    std::filesystem::path dir_;
    UniqueFd dir_fd_;
    Uring& ring_;
    MetaStoreOptions options_;
    Namespace ns_;
    std::unique_ptr<Journal> journal_;
    uint64_t journal_base_;  // the current journal file is journal-<journal_base_>.log
    uint64_t snapshot_seq_;
    bool checkpointing_ = false;
    std::optional<Error> failed_;
};

}  // namespace pfs::meta
