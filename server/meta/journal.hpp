// An append-only journal of records with consecutive sequence numbers,
// written through io_uring with group commit: records submitted while one
// batch is being written and synced go out together in the next one, so
// many appends share one sync. A batch that only overwrites zeros (below)
// is one RWF_DSYNC write: a write, then an fdatasync, cost the TCG test
// guest a second trip through io_uring's workers (about 1 ms a batch).
//
// On disk, records back to back, little-endian, no file header (the file's
// name tells its owner which seq it starts at):
//
//   offset 0   u32 crc       CRC-32C of bytes 4 .. 16+len (tag_len, seq, payload)
//          4   u32 tag_len   kJournalTag in the top byte, payload length in the low 24 bits
//          8   u64 seq       previous record's seq + 1
//         16   len bytes     payload
//
// Appends overwrite zeros written ahead of them (kJournalZeroAhead at a
// time, in the same write + fdatasync as the records that reach them):
// an fdatasync of bytes inside the file's size and written extents syncs
// the data alone, not also the file system's metadata (ext4 in the test
// guest: 0.8 ms instead of 3.8 ms a sync). Zeros are never a record.
//
// Recovery reads the records in order and stops at the first one that is
// truncated, has a wrong tag or a wrong checksum: a write torn by a crash.
// That record and everything after it is cut off (never replayed), since a
// torn batch may have reached the disk out of order. A record that is intact
// but out of sequence is not a torn write: it is refused as corruption.
//
// Single-threaded, as the Uring it writes through: all calls from coroutines
// on one executor. The Uring must outlive the journal.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "asio.hpp"
#include "result.hpp"
#include "uring.hpp"

namespace pfs::meta {

inline constexpr size_t kJournalHeaderSize = 16;
inline constexpr uint32_t kJournalTag = 0xC5;  // not 0: zero-filled space is never a record
inline constexpr uint32_t kJournalMaxPayload = (1u << 24) - 1;
inline constexpr uint64_t kJournalZeroAhead = 1u << 20;

// Whether bytes are zeros only: the space written ahead of a journal's
// records, never a record itself.
inline bool only_zeros(std::span<const uint8_t> bytes) {
    return std::all_of(bytes.begin(), bytes.end(), [](uint8_t b) { return b == 0; });
}

// Appends one framed record to out (for the journal itself, tools and tests).
void append_journal_record(std::vector<uint8_t>& out, uint64_t seq, std::span<const uint8_t> payload);

struct JournalStats {
    uint64_t records = 0;  // records made durable since open
    uint64_t batches = 0;  // write + fdatasync rounds that succeeded
    uint64_t syncs = 0;    // fdatasync calls on journal files
};

// What open() found in the file.
struct JournalRecovery {
    uint64_t records = 0;      // intact records replayed
    uint64_t valid_bytes = 0;  // where they end, and appends continue
    uint64_t cut_bytes = 0;    // bytes of torn tail cut off (0: the file ended cleanly)
    uint64_t zero_bytes = 0;   // zeros written ahead past the records: kept, and appended over
    std::string cut_reason;    // why the first bad record was bad
};

class Journal {
public:
    using ReplayFn = std::function<Status(uint64_t seq, std::span<const uint8_t> payload)>;

    // A new, empty journal whose first record will be first_seq; fails if
    // path exists. Its name becomes durable with the first batch.
    static Result<std::unique_ptr<Journal>> create(const std::filesystem::path& path, uint64_t first_seq,
                                                   Uring& ring, asio::any_io_executor executor);
    // Recovers an existing journal at startup (blocking system calls):
    // hands each intact record to replay in order (its error aborts the
    // open), cuts a torn tail (ftruncate + fsync, logged), and leaves the
    // file synced, ready for appends after the last record. The first record
    // must be first_seq and each next one the previous + 1: anything else is
    // corruption and an error.
    static Result<std::unique_ptr<Journal>> open(const std::filesystem::path& path, uint64_t first_seq,
                                                 Uring& ring, asio::any_io_executor executor,
                                                 const ReplayFn& replay);
    // Records still in flight fail with -ECANCELED.
    ~Journal();
    Journal(const Journal&) = delete;
    Journal& operator=(const Journal&) = delete;

    // Adds a record to the next batch and returns its seq, at once (no
    // suspension, so callers can tie the seq to the state they just
    // changed); the flush starts on its own. wait() tells when it is durable.
    // A lazy record starts no flush: it waits in the batch for the next
    // record that does, or for a wait() on it or a later one, so that a
    // change nobody waits for costs no write and sync of its own.
    Result<uint64_t> submit(std::span<const uint8_t> payload, bool lazy = false);
    // Returns once record seq is durable, or with the error that lost it.
    awaitable<Status> wait(uint64_t seq);
    // Writes every record submitted so far into the file now (pwrite on
    // this thread, into the page cache), ahead of its batch's sync: a crash
    // of the process alone then loses none of them; a crash of the machine
    // may lose those not yet durable. False, having written what it could
    // in order, where a record lies past the zeros written ahead of its
    // file (that space is its batch's flush's to write: see flush()), or a
    // write fails (the flush reports it).
    bool write_out();
    // submit + wait.
    awaitable<Status> append(std::span<const uint8_t> payload);
    // Waits until every record submitted so far is durable.
    awaitable<Status> sync() { return wait(last_seq()); }

    // Sends records from now on to a new file at path (created as by
    // create()); they become durable only after everything before them, so
    // the old file is complete whenever a record of the new one is on disk.
    Status rotate(const std::filesystem::path& path);

    uint64_t last_seq() const { return next_seq_ - 1; }  // the last submitted
    uint64_t durable_seq() const { return durable_seq_; }
    // Size of the current file, records still in flight included.
    uint64_t file_bytes() const;
    const JournalStats& stats() const { return stats_; }
    const JournalRecovery& recovery() const { return recovery_; }
    // Set by the first failed write or sync, after which the journal is
    // stopped: see flush_loop().
    const std::optional<Error>& failure() const { return failed_; }

private:
    struct File;
    struct Batch;
    struct Flushed;

    Journal(std::shared_ptr<File> file, uint64_t next_seq, Uring& ring, asio::any_io_executor executor);
    static Result<std::shared_ptr<File>> create_file(const std::filesystem::path& path);
    std::shared_ptr<Batch> batch_of(uint64_t seq) const;
    void start_flusher();
    awaitable<void> flush_loop(std::shared_ptr<bool> alive);
    static awaitable<Flushed> flush(Uring& ring, std::shared_ptr<Batch> batch);
    static void finish(Batch& batch, const Status& outcome);

    Uring& ring_;
    asio::any_io_executor executor_;
    std::shared_ptr<File> file_;  // where new records go
    uint64_t next_seq_;
    uint64_t durable_seq_;
    std::deque<std::shared_ptr<Batch>> pending_;  // back() collects new records
    std::shared_ptr<Batch> flushing_;             // being written and synced
    bool flusher_running_ = false;
    std::optional<Error> failed_;
    JournalStats stats_;
    JournalRecovery recovery_;
    std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);  // for the flusher, which may outlive us
};

}  // namespace pfs::meta
