#include "journal.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>

#include "crc32c.hpp"
#include "log.hpp"
#include "wire.hpp"

extern "C" {
#include "pfs_xdr.h"
}

namespace pfs::meta {

// ---- the record format -------------------------------------------------------

namespace {

struct RecordHeader {
    __u32 crc = 0;
    __u32 tag_len = 0;
    __u64 seq = 0;
};

void xfer_header(pfs_xdr* x, RecordHeader& h) {
    pfs_x_u32(x, &h.crc);
    pfs_x_u32(x, &h.tag_len);
    pfs_x_u64(x, &h.seq);
}

RecordHeader parse_header(std::span<const uint8_t> bytes) {
    RecordHeader h;
    pfs_xdr x;
    pfs_xdr_init_decode(&x, bytes.data(), kJournalHeaderSize);
    xfer_header(&x, h);
    return h;
}

Error errno_error(int negative_errno, const std::string& what) {
    return Error{negative_errno, what + ": " + errno_text(negative_errno)};
}

Error corrupt(const std::filesystem::path& path, uint64_t offset, const std::string& what) {
    return Error{-EUCLEAN, "journal " + path.string() + " is corrupt at offset " + std::to_string(offset) +
                               ": " + what +
                               "; refusing to start (restore the metadata directory from a backup)"};
}

// Reads a file front to back in large pieces; a record is at most 16 MiB,
// so the window never holds much more than that.
class SequentialReader {
public:
    SequentialReader(int fd, uint64_t size) : fd_(fd), size_(size) {}

    // Bytes [offset, offset + n), fewer where the file ends first. offset
    // never goes backwards.
    Result<std::span<const uint8_t>> fetch(uint64_t offset, size_t n) {
        n = static_cast<size_t>(std::min<uint64_t>(n, size_ - offset));
        if (offset < start_ || offset + n > start_ + buf_.size()) {
            buf_.resize(static_cast<size_t>(std::min<uint64_t>(std::max(n, kWindow), size_ - offset)));
            start_ = offset;
            size_t done = 0;
            while (done < buf_.size()) {
                const auto at = static_cast<off_t>(offset + done);
                ssize_t got = ::pread(fd_, buf_.data() + done, buf_.size() - done, at);
                if (got < 0 && errno == EINTR) continue;
                if (got < 0) return errno_error(-errno, "read");
                if (got == 0) break;  // shrank under us: treat as the end
                done += static_cast<size_t>(got);
            }
            buf_.resize(done);
            n = std::min(n, done);
        }
        return std::span<const uint8_t>(buf_).subspan(static_cast<size_t>(offset - start_), n);
    }

private:
    static constexpr size_t kWindow = 1u << 20;
    int fd_;
    uint64_t size_;
    uint64_t start_ = 0;
    std::vector<uint8_t> buf_;
};

// The intact records from the start of fd, replayed in order. Stops at the
// first bad one; recovery.cut_reason says why (empty: the file ended cleanly).
Result<JournalRecovery> scan(int fd, const std::filesystem::path& path, uint64_t first_seq,
                             const Journal::ReplayFn& replay) {
    struct stat st {};
    if (::fstat(fd, &st) != 0) return errno_error(-errno, "stat " + path.string());
    const auto size = static_cast<uint64_t>(st.st_size);
    SequentialReader reader(fd, size);
    JournalRecovery rec;
    uint64_t& off = rec.valid_bytes;
    for (uint64_t expect = first_seq; off < size; ++expect) {
        auto head = reader.fetch(off, kJournalHeaderSize);
        if (!head) return Error{head.error().code, path.string() + ": " + head.error().message};
        if (head->size() < kJournalHeaderSize) {
            rec.cut_reason = "record header truncated";
            break;
        }
        RecordHeader h = parse_header(*head);
        if ((h.tag_len >> 24) != kJournalTag) {
            rec.cut_reason = "no record tag";
            break;
        }
        const uint32_t len = h.tag_len & kJournalMaxPayload;
        auto whole = reader.fetch(off, kJournalHeaderSize + len);
        if (!whole) return Error{whole.error().code, path.string() + ": " + whole.error().message};
        if (whole->size() < kJournalHeaderSize + len) {
            rec.cut_reason = "record of " + std::to_string(len) + " bytes runs past the end of the file";
            break;
        }
        if (crc32c(whole->subspan(4)) != h.crc) {
            rec.cut_reason = "checksum mismatch";
            break;
        }
        if (h.seq != expect)
            return corrupt(path, off,
                           "an intact record has seq " + std::to_string(h.seq) + " where " +
                               std::to_string(expect) + " was expected (records missing or out of order)");
        Status applied = replay(h.seq, whole->subspan(kJournalHeaderSize));
        if (!applied)
            return corrupt(path, off, "record seq " + std::to_string(h.seq) + ": " + applied.error().message);
        ++rec.records;
        off += kJournalHeaderSize + len;
    }
    rec.cut_bytes = size - off;
    // Zeros written ahead of the appends end the file cleanly.
    for (uint64_t at = off; rec.cut_bytes > 0 && at < size;) {
        auto part = reader.fetch(at, static_cast<size_t>(std::min<uint64_t>(size - at, 1u << 20)));
        if (!part) return Error{part.error().code, path.string() + ": " + part.error().message};
        if (part->empty() || !only_zeros(*part)) break;
        at += part->size();
        if (at == size) {
            rec.zero_bytes = rec.cut_bytes;
            rec.cut_bytes = 0;
            rec.cut_reason.clear();
        }
    }
    return rec;
}

void log_cut(const std::filesystem::path& path, const JournalRecovery& rec) {
    log::warn("journal: cutting it at its first torn or damaged record",
              {{"path", path.string()},
               {"offset", rec.valid_bytes},
               {"bytes_cut", rec.cut_bytes},
               {"reason", rec.cut_reason}});
}

Status sync_fd(int fd, const std::string& what) {
    if (::fsync(fd) != 0) return errno_error(-errno, "fsync " + what);
    return ok_status();
}

Result<UniqueFd> open_parent(const std::filesystem::path& path) {
    auto dir = path.parent_path().empty() ? std::filesystem::path(".") : path.parent_path();
    UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd.valid()) return errno_error(-errno, "open " + dir.string());
    return fd;
}

}  // namespace

void append_journal_record(std::vector<uint8_t>& out, uint64_t seq, std::span<const uint8_t> payload) {
    const size_t at = out.size();
    out.resize(at + kJournalHeaderSize + payload.size());
    std::copy(payload.begin(), payload.end(), out.begin() + static_cast<ptrdiff_t>(at + kJournalHeaderSize));
    RecordHeader h{0, kJournalTag << 24 | static_cast<uint32_t>(payload.size()), seq};
    pfs_xdr x;
    pfs_xdr_init_encode(&x, out.data() + at, kJournalHeaderSize);
    xfer_header(&x, h);
    h.crc = crc32c(std::span<const uint8_t>(out).subspan(at + 4));
    pfs_xdr_init_encode(&x, out.data() + at, 4);
    pfs_x_u32(&x, &h.crc);
}

// ---- files and batches -------------------------------------------------------

struct Journal::File {
    std::filesystem::path path;
    UniqueFd fd;
    UniqueFd dir;               // its directory, synced once so that the name is durable too
    uint64_t end = 0;           // bytes written or waiting in batches
    uint64_t zeroed = 0;        // the file's size: zeros from end (or a batch's end) to here
    bool name_durable = false;  // a created file's name, until its first batch syncs the directory
};

struct Journal::Batch {
    Batch(std::shared_ptr<File> f, uint64_t first, const asio::any_io_executor& ex)
        : file(std::move(f)), offset(file->end), first_seq(first), last_seq(first), done(ex) {
        done.expires_at(asio::steady_timer::time_point::max());
    }

    std::shared_ptr<File> file;
    uint64_t offset;             // where bytes go in file
    std::vector<uint8_t> bytes;  // the records, back to back
    size_t written_out = 0;      // of bytes, how many write_out() put in the file
    uint64_t first_seq;
    uint64_t last_seq;
    std::optional<Status> outcome;
    asio::steady_timer done;  // cancelled once outcome is set: wakes every waiter
};

struct Journal::Flushed {
    Status status = ok_status();
    uint64_t syncs = 0;
};

Journal::Journal(std::shared_ptr<File> file, uint64_t next_seq, Uring& ring, asio::any_io_executor executor)
    : ring_(ring),
      executor_(std::move(executor)),
      file_(std::move(file)),
      next_seq_(next_seq),
      durable_seq_(next_seq - 1) {}

Journal::~Journal() {
    *alive_ = false;
    const Status closed = Error{-ECANCELED, "the journal was closed before the record was durable"};
    if (flushing_) finish(*flushing_, closed);
    for (auto& batch : pending_) finish(*batch, closed);
}

Result<std::shared_ptr<Journal::File>> Journal::create_file(const std::filesystem::path& path) {
    auto file = std::make_shared<File>();
    file->path = path;
    file->fd = UniqueFd(::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
    if (!file->fd.valid()) return errno_error(-errno, "create journal " + path.string());
    auto dir = open_parent(path);
    if (!dir) return dir.error();
    file->dir = std::move(*dir);
    return file;
}

Result<std::unique_ptr<Journal>> Journal::create(const std::filesystem::path& path, uint64_t first_seq,
                                                 Uring& ring, asio::any_io_executor executor) {
    if (first_seq == 0) return Error{-EINVAL, "journal sequence numbers start at 1"};
    auto file = create_file(path);
    if (!file) return file.error();
    return std::unique_ptr<Journal>(new Journal(std::move(*file), first_seq, ring, std::move(executor)));
}

Result<std::unique_ptr<Journal>> Journal::open(const std::filesystem::path& path, uint64_t first_seq,
                                               Uring& ring, asio::any_io_executor executor,
                                               const ReplayFn& replay) {
    if (first_seq == 0) return Error{-EINVAL, "journal sequence numbers start at 1"};
    auto file = std::make_shared<File>();
    file->path = path;
    file->fd = UniqueFd(::open(path.c_str(), O_RDWR | O_CLOEXEC));
    if (!file->fd.valid()) return errno_error(-errno, "open journal " + path.string());
    auto rec = scan(file->fd.get(), path, first_seq, replay);
    if (!rec) return rec.error();
    if (rec->cut_bytes > 0) {
        log_cut(path, *rec);
        if (::ftruncate(file->fd.get(), static_cast<off_t>(rec->valid_bytes)) != 0)
            return errno_error(-errno, "cut the torn tail of " + path.string());
    }
    // Synced now, even when nothing was cut: after a crash of the process
    // alone, the records just replayed may still be only in the page cache.
    auto dir = open_parent(path);
    if (!dir) return dir.error();
    file->dir = std::move(*dir);
    if (auto st = sync_fd(file->fd.get(), path.string()); !st) return st.error();
    if (auto st = sync_fd(file->dir.get(), path.parent_path().string()); !st) return st.error();
    file->name_durable = true;
    file->end = rec->valid_bytes;
    file->zeroed = rec->valid_bytes + rec->zero_bytes;
    const uint64_t next_seq = first_seq + rec->records;
    std::unique_ptr<Journal> journal(new Journal(std::move(file), next_seq, ring, std::move(executor)));
    journal->recovery_ = std::move(*rec);
    return journal;
}

// ---- appending ---------------------------------------------------------------

uint64_t Journal::file_bytes() const { return file_->end; }

Result<uint64_t> Journal::submit(std::span<const uint8_t> payload, bool lazy) {
    if (failed_) return *failed_;
    if (payload.size() > kJournalMaxPayload)
        return Error{-EMSGSIZE, "journal record of " + std::to_string(payload.size()) + " bytes is too big"};
    if (pending_.empty() || pending_.back()->file != file_)
        pending_.push_back(std::make_shared<Batch>(file_, next_seq_, executor_));
    Batch& batch = *pending_.back();
    const size_t before = batch.bytes.size();
    append_journal_record(batch.bytes, next_seq_, payload);
    file_->end += batch.bytes.size() - before;
    batch.last_seq = next_seq_;
    if (!lazy) start_flusher();
    return next_seq_++;
}

void Journal::start_flusher() {
    if (flusher_running_ || pending_.empty()) return;
    flusher_running_ = true;
    // co_spawn starts the flusher later, through the executor: records
    // submitted in the meantime join this first batch.
    asio::co_spawn(executor_, flush_loop(alive_), asio::detached);
}

std::shared_ptr<Journal::Batch> Journal::batch_of(uint64_t seq) const {
    if (flushing_ && seq >= flushing_->first_seq && seq <= flushing_->last_seq) return flushing_;
    for (const auto& batch : pending_)
        if (seq >= batch->first_seq && seq <= batch->last_seq) return batch;
    return nullptr;
}

awaitable<Status> Journal::wait(uint64_t seq) {
    if (seq <= durable_seq_) co_return ok_status();
    std::shared_ptr<Batch> batch = batch_of(seq);
    if (!batch) {
        if (failed_) co_return *failed_;
        co_return Error{-EINVAL, "journal seq " + std::to_string(seq) + " was never submitted"};
    }
    start_flusher();  // the batch may hold lazy records alone
    while (!batch->outcome) {
        boost::system::error_code ec;
        co_await batch->done.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
    co_return *batch->outcome;
}

bool Journal::write_out() {
    if (failed_) return false;
    // Records behind a hole would be cut off with it at recovery: each
    // batch in order, the one being flushed first (its write may not have
    // reached the file yet; the same bytes twice do no harm).
    auto out = [](Batch& batch) {
        const File& file = *batch.file;
        if (batch.offset + batch.bytes.size() > file.zeroed) return false;
        while (batch.written_out < batch.bytes.size()) {
            const size_t at = batch.written_out;
            ssize_t n = ::pwrite(file.fd.get(), batch.bytes.data() + at, batch.bytes.size() - at,
                                 static_cast<off_t>(batch.offset + at));
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) return false;
            batch.written_out += static_cast<size_t>(n);
        }
        return true;
    };
    if (flushing_ && !out(*flushing_)) return false;
    return std::all_of(pending_.begin(), pending_.end(), [&](const auto& batch) { return out(*batch); });
}

awaitable<Status> Journal::append(std::span<const uint8_t> payload) {
    auto seq = submit(payload);
    if (!seq) co_return seq.error();
    co_return co_await wait(*seq);
}

Status Journal::rotate(const std::filesystem::path& path) {
    if (failed_) return *failed_;
    auto file = create_file(path);
    if (!file) return file.error();
    file_ = std::move(*file);
    return ok_status();
}

void Journal::finish(Batch& batch, const Status& outcome) {
    if (batch.outcome) return;
    batch.outcome = outcome;
    batch.done.cancel();
}

// One batch at a time, in order: a batch is written only once every batch
// before it is durable, which is what keeps a torn write at the tail and
// makes a rotated-to file depend on a complete predecessor.
//
// Fail-stop: after a failed write or sync nothing more is written and every
// later record fails. Retrying is unsafe: the file's end is unknown after a
// partial write, and after a failed fdatasync Linux may have dropped the
// dirty pages and marked them clean, so a second fdatasync could "succeed"
// without the data ever reaching the disk. Records of the failed batch may
// or may not be on disk; none was acknowledged. A restart recovers (and cuts
// whatever torn tail the failure left).
awaitable<void> Journal::flush_loop(std::shared_ptr<bool> alive) {
    if (!*alive) co_return;  // destroyed before the executor got to us
    Uring& ring = ring_;
    while (!pending_.empty()) {
        std::shared_ptr<Batch> batch = pending_.front();
        pending_.pop_front();
        flushing_ = batch;
        Flushed done;
        if (failed_) done.status = *failed_;
        else done = co_await flush(ring, batch);
        if (!*alive) co_return;  // the destructor failed the waiters
        stats_.syncs += done.syncs;
        if (done.status) {
            durable_seq_ = batch->last_seq;
            stats_.records += batch->last_seq - batch->first_seq + 1;
            ++stats_.batches;
        } else if (!failed_) {
            failed_ = Error{done.status.error().code,
                            done.status.error().message + "; the journal has stopped, restart to recover"};
        }
        flushing_.reset();
        finish(*batch, done.status);
    }
    flusher_running_ = false;
}

// Touches only the batch (and its file), which it keeps alive, so that it
// can finish after the journal is gone.
awaitable<Journal::Flushed> Journal::flush(Uring& ring, std::shared_ptr<Batch> batch) {
    Flushed out;
    File& file = *batch->file;
    const std::string where = "journal " + file.path.string();
    const uint64_t end = batch->offset + batch->bytes.size();
    if (end <= file.zeroed && file.name_durable) {
        // The usual batch: it overwrites zeros of a file whose name is
        // durable, so a write that syncs itself is all it takes (one trip
        // through the ring instead of a write, then a sync).
        ++out.syncs;
        auto written = co_await ring.write_dsync(file.fd.get(), batch->bytes, batch->offset);
        if (!written) out.status = Error{written.error().code, where + ": " + written.error().message};
        co_return out;
    }
    auto written = co_await ring.write(file.fd.get(), batch->bytes, batch->offset);
    if (!written) {
        out.status = Error{written.error().code, where + ": " + written.error().message};
        co_return out;
    }
    uint64_t zeroed = file.zeroed;
    if (end > zeroed) {
        // The next appends' zeros, synced with these records. Without the
        // space for them (a full disk) appends only run slower.
        static const std::vector<uint8_t> zeros(kJournalZeroAhead);
        const uint64_t ahead = (end / kJournalZeroAhead + 1) * kJournalZeroAhead;
        auto zero = co_await ring.write(file.fd.get(), std::span<const uint8_t>(zeros).first(ahead - end), end);
        if (zero) zeroed = ahead;
    }
    ++out.syncs;
    auto synced = co_await ring.fsync(file.fd.get(), true);
    if (synced && !file.name_durable) {
        synced = co_await ring.fsync(file.dir.get(), false);
        file.name_durable = synced.ok();
    }
    if (!synced) out.status = Error{synced.error().code, where + ": " + synced.error().message};
    else file.zeroed = zeroed;
    co_return out;
}

}  // namespace pfs::meta
