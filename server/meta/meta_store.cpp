#include "meta_store.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <cstring>
#include <set>

#include "crc32c.hpp"
#include "log.hpp"
#include "wire.hpp"

extern "C" {
#include "pfs_xdr.h"
}

namespace pfs::meta {
namespace {

namespace fs = std::filesystem;

// ---- file names ----------------------------------------------------------------

constexpr std::string_view kSnapshotPrefix = "snapshot-";
constexpr std::string_view kSnapshotSuffix = ".bin";
constexpr std::string_view kJournalPrefix = "journal-";
constexpr std::string_view kJournalSuffix = ".log";
constexpr std::string_view kTempSuffix = ".tmp";

std::string file_name(std::string_view prefix, uint64_t seq, std::string_view suffix) {
    char digits[24];
    std::snprintf(digits, sizeof digits, "%020llu", static_cast<unsigned long long>(seq));
    return std::string(prefix) + digits + std::string(suffix);
}

std::string snapshot_name(uint64_t seq) { return file_name(kSnapshotPrefix, seq, kSnapshotSuffix); }
std::string journal_name(uint64_t seq) { return file_name(kJournalPrefix, seq, kJournalSuffix); }

// The seq of a name prefix<digits>suffix.
std::optional<uint64_t> parse_name(std::string_view name, std::string_view prefix, std::string_view suffix) {
    if (!name.starts_with(prefix) || !name.ends_with(suffix)) return std::nullopt;
    std::string_view digits = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
    uint64_t seq = 0;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), seq);
    if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
    return seq;
}

struct Layout {
    std::set<uint64_t> snapshots;
    std::set<uint64_t> journals;
    std::vector<std::string> temporaries;  // snapshot writes a crash interrupted
};

Error io_error(int negative_errno, const std::string& what) {
    return Error{negative_errno, what + ": " + errno_text(negative_errno)};
}

Error fs_error(const std::error_code& ec, const std::string& what) {
    return Error{-ec.value(), what + ": " + ec.message()};
}

Result<Layout> list_dir(const fs::path& dir) {
    Layout layout;
    std::error_code ec;
    for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (auto s = parse_name(name, kSnapshotPrefix, kSnapshotSuffix)) layout.snapshots.insert(*s);
        else if (auto j = parse_name(name, kJournalPrefix, kJournalSuffix)) layout.journals.insert(*j);
        else if (name.ends_with(kTempSuffix)) layout.temporaries.push_back(name);
    }
    if (ec) return fs_error(ec, "list " + dir.string());
    return layout;
}

// Creates dir (and makes its name durable) when missing; returns it open.
Result<UniqueFd> prepare_dir(const fs::path& dir) {
    std::error_code ec;
    if (fs::create_directories(dir, ec)) {
        UniqueFd parent(::open(dir.parent_path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
        if (!parent.valid() || ::fsync(parent.get()) != 0)
            return io_error(-errno, "sync " + dir.parent_path().string());
    }
    if (ec) return fs_error(ec, "create " + dir.string());
    UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd.valid()) return io_error(-errno, "open " + dir.string());
    return fd;
}

// ---- logging (plain functions: GCC 12 cannot keep initializer lists in coroutine frames)

void log_refused_snapshot(const fs::path& path, const std::string& reason) {
    log::warn("metadata snapshot not usable", {{"path", path.string()}, {"reason", reason}});
}

void log_removed(const fs::path& path, std::string_view why) {
    log::info("metadata store: removed a file", {{"path", path.string()}, {"why", why}});
}

void log_remove_failed(const fs::path& path, const Error& e) {
    log::warn("metadata store: cannot remove an old file", {{"path", path.string()}, {"error", e.message}});
}

void log_opened(const fs::path& dir, uint64_t snapshot, uint64_t last, uint64_t journal) {
    log::info("metadata store opened",
              {{"dir", dir.string()},
               {"snapshot_seq", snapshot},
               {"last_seq", last},
               {"journal_seq", journal}});
}

void log_checkpoint(uint64_t seq, size_t bytes) {
    log::info("metadata checkpoint written", {{"seq", seq}, {"snapshot_bytes", bytes}});
}

void log_stopped(const Error& e) {
    log::error("metadata store stopped: it cannot journal; restart the server", {{"error", e.message}});
}

// ---- snapshot files ------------------------------------------------------------
//
// Namespace::snapshot() bytes, then a 32-byte trailer (a trailer rather than
// a header, so that a writer could stream the body and checksum it as it goes):
//   u32 magic  u32 version  u64 seq  u64 body length  u32 body crc32c  u32 crc32c of the 28 bytes before

constexpr uint32_t kTrailerMagic = 0x53534650;  // "PFSS"
constexpr uint32_t kTrailerVersion = 1;
constexpr size_t kTrailerSize = 32;

struct Trailer {
    __u32 magic = kTrailerMagic;
    __u32 version = kTrailerVersion;
    __u64 seq = 0;
    __u64 body_len = 0;
    __u32 body_crc = 0;
    __u32 crc = 0;
};

void xfer_trailer(pfs_xdr* x, Trailer& t) {
    pfs_x_u32(x, &t.magic);
    pfs_x_u32(x, &t.version);
    pfs_x_u64(x, &t.seq);
    pfs_x_u64(x, &t.body_len);
    pfs_x_u32(x, &t.body_crc);
    pfs_x_u32(x, &t.crc);
}

std::vector<uint8_t> snapshot_image(std::vector<uint8_t> body, uint64_t seq) {
    Trailer t;
    t.seq = seq;
    t.body_len = body.size();
    t.body_crc = crc32c(body);
    const size_t at = body.size();
    body.resize(at + kTrailerSize);
    pfs_xdr x;
    pfs_xdr_init_encode(&x, body.data() + at, kTrailerSize);
    xfer_trailer(&x, t);
    t.crc = crc32c(std::span<const uint8_t>(body).subspan(at, kTrailerSize - 4));
    pfs_xdr_init_encode(&x, body.data() + at, kTrailerSize);
    xfer_trailer(&x, t);
    return body;
}

Result<std::vector<uint8_t>> read_file(const fs::path& path) {
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    struct stat st {};
    if (!fd.valid() || ::fstat(fd.get(), &st) != 0) return io_error(-errno, "read " + path.string());
    std::vector<uint8_t> bytes(static_cast<size_t>(st.st_size));
    size_t done = 0;
    while (done < bytes.size()) {
        ssize_t got = ::read(fd.get(), bytes.data() + done, bytes.size() - done);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) return io_error(-errno, "read " + path.string());
        if (got == 0) break;
        done += static_cast<size_t>(got);
    }
    bytes.resize(done);
    return bytes;
}

// Why a snapshot image is not the namespace after op `seq`, or empty.
std::string check_image(std::span<const uint8_t> image, uint64_t seq) {
    if (image.size() < kTrailerSize) return "shorter than its trailer";
    auto tail = image.subspan(image.size() - kTrailerSize);
    Trailer t;
    pfs_xdr x;
    pfs_xdr_init_decode(&x, tail.data(), kTrailerSize);
    xfer_trailer(&x, t);
    if (crc32c(tail.first(kTrailerSize - 4)) != t.crc) return "trailer checksum mismatch (torn or damaged)";
    if (t.magic != kTrailerMagic) return "not a PFS snapshot";
    if (t.version != kTrailerVersion) return "unknown snapshot version " + std::to_string(t.version);
    if (t.seq != seq) return "holds seq " + std::to_string(t.seq) + ", not the seq in its name";
    if (t.body_len != image.size() - kTrailerSize) return "length does not match its trailer";
    if (crc32c(image.first(image.size() - kTrailerSize)) != t.body_crc) return "body checksum mismatch";
    return {};
}

Result<Namespace> load_snapshot(const fs::path& path, uint64_t seq) {
    auto image = read_file(path);
    if (!image) return image.error();
    if (std::string why = check_image(*image, seq); !why.empty()) return Error{-EUCLEAN, why};
    auto ns = Namespace::restore(std::span<const uint8_t>(*image).first(image->size() - kTrailerSize));
    if (!ns) return Error{-EUCLEAN, "does not restore: " + ns.error().message};
    return ns;
}

// Writes image as snapshot-<seq>.bin so that the name only ever holds a
// complete, durable image: temp file, write, fdatasync, rename, fsync dir.
awaitable<Status> write_snapshot(Uring& ring, int dir_fd, fs::path dir, uint64_t seq,
                                 std::vector<uint8_t> image) {
    const std::string name = snapshot_name(seq);
    const std::string temp = name + std::string(kTempSuffix);
    auto fd = co_await ring.openat(dir_fd, temp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (!fd) co_return fd.error();
    Status st = ok_status();
    auto written = co_await ring.write(fd->get(), image, 0);
    if (!written) st = written.error();
    if (st) st = co_await ring.fsync(fd->get(), true);
    if (int rc = fd->close(); st && rc != 0) st = io_error(-rc, "close " + temp);
    if (st && ::renameat(dir_fd, temp.c_str(), dir_fd, name.c_str()) != 0)
        st = io_error(-errno, "rename " + temp);
    if (!st) {
        co_await ring.unlinkat(dir_fd, temp, 0);  // best effort; the next open removes it anyway
        const std::string where = "write snapshot " + (dir / name).string() + ": ";
        co_return Error{st.error().code, where + st.error().message};
    }
    co_return co_await ring.fsync(dir_fd, false);
}

// ---- recovery ------------------------------------------------------------------

struct Base {
    uint64_t seq;
    Namespace ns;
};

// The newest snapshot that verifies and still has its journal.
Result<Base> load_base(const fs::path& dir, const Layout& layout, uint32_t owner) {
    std::string refused;
    for (auto it = layout.snapshots.rbegin(); it != layout.snapshots.rend(); ++it) {
        const fs::path path = dir / snapshot_name(*it);
        Result<Namespace> ns = Error{-ENOENT, "its journal " + journal_name(*it) + " is missing"};
        if (layout.journals.contains(*it)) ns = load_snapshot(path, *it);
        if (ns && ns->owner_node() != owner)
            return Error{-EINVAL, dir.string() + " holds the metadata of node " +
                                      std::to_string(ns->owner_node()) + ", not of this node (" +
                                      std::to_string(owner) + "); refusing to start"};
        if (ns) return Base{*it, std::move(*ns)};
        log_refused_snapshot(path, ns.error().message);
        refused += "; " + path.filename().string() + ": " + ns.error().message;
    }
    return Error{-EUCLEAN, "no usable metadata snapshot in " + dir.string() + refused +
                               ". Refusing to start: restore the directory from a backup"};
}

Journal::ReplayFn replay_into(Namespace& ns) {
    return [&ns](uint64_t, std::span<const uint8_t> payload) -> Status {
        auto op = decode_op(payload);
        if (!op) return Error{-EUCLEAN, "undecodable op: " + op.error().message};
        auto done = ns.apply(*op);
        if (!done) return Error{-EUCLEAN, "op does not apply: " + done.error().message};
        return ok_status();
    };
}

// Whether the file holds zeros only (or nothing): all a journal whose
// first records a crash lost keeps, the zeros written ahead of them.
Result<bool> holds_only_zeros(const fs::path& path) {
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.valid()) return Error{-errno, "open " + path.string() + ": " + std::strerror(errno)};
    std::vector<uint8_t> buf(1u << 16);
    for (;;) {
        const ssize_t got = ::read(fd.get(), buf.data(), buf.size());
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) return Error{-errno, "read " + path.string() + ": " + std::strerror(errno)};
        if (got == 0) return true;
        if (!only_zeros(std::span<const uint8_t>(buf).first(static_cast<size_t>(got)))) return false;
    }
}

// An empty journal with no place in the chain: a rotation or a first start
// that a crash interrupted before any record. Anything else is refused.
Status remove_stray_journal(const fs::path& path, std::string_view why) {
    std::error_code ec;
    const auto size = fs::file_size(path, ec);
    if (ec) return fs_error(ec, "stat " + path.string());
    auto empty = holds_only_zeros(path);
    if (!empty) return empty.error();
    if (!*empty)
        return Error{-EUCLEAN, path.string() + " (" + std::to_string(size) + " bytes) " + std::string(why)};
    if (!fs::remove(path, ec)) return fs_error(ec, "remove " + path.string());
    log_removed(path, "an empty journal left by an interrupted checkpoint or first start");
    return ok_status();
}

struct Recovered {
    Namespace ns;
    std::unique_ptr<Journal> journal;
    uint64_t journal_base = 0;
    uint64_t snapshot_seq = 0;
};

// Replays journal-<base>.log and the files that continue it, and leaves the
// last one open for appends.
Result<Recovered> recover(const fs::path& dir, const Layout& layout, uint32_t owner, Uring& ring,
                          const asio::any_io_executor& ex) {
    auto base = load_base(dir, layout, owner);
    if (!base) return base.error();
    if (base->seq != *layout.snapshots.rbegin())
        log::warn("metadata store: falling back to an older snapshot", {{"seq", base->seq}});
    Recovered out{std::move(base->ns), nullptr, base->seq, base->seq};
    std::set<uint64_t> visited;
    for (;;) {
        visited.insert(out.journal_base);
        auto journal = Journal::open(dir / journal_name(out.journal_base), out.journal_base + 1, ring, ex,
                                     replay_into(out.ns));
        if (!journal) return journal.error();
        out.journal = std::move(*journal);
        const uint64_t last = out.journal->last_seq();
        if (last == out.journal_base || !layout.journals.contains(last)) break;
        out.journal_base = last;
    }
    const uint64_t end = out.journal->last_seq();
    const std::string missing =
        " and the ops in between are missing. Refusing to start: restore from a backup";
    // A newer snapshot, even a damaged one, saw ops up to its seq: the journals must reach that far.
    if (const uint64_t newest = *layout.snapshots.rbegin(); newest > end)
        return Error{-EUCLEAN, snapshot_name(newest) + " holds ops up to seq " + std::to_string(newest) +
                                   ", but the journals from snapshot " + std::to_string(out.snapshot_seq) +
                                   " reach only seq " + std::to_string(end) + missing};
    const std::string why = "cannot be reached from snapshot " + std::to_string(out.snapshot_seq) +
                            ": the journal chain ends at seq " + std::to_string(end) + missing;
    for (uint64_t seq : layout.journals) {
        if (seq < out.snapshot_seq || visited.contains(seq)) continue;
        if (Status st = remove_stray_journal(dir / journal_name(seq), why); !st) return st.error();
    }
    return out;
}

// A first start: an empty namespace, journal-0 and snapshot-0 (written in
// that order: a snapshot's journal exists whenever the snapshot does).
awaitable<Result<Recovered>> initialize(fs::path dir, int dir_fd, Layout layout, uint32_t owner, Timespec now,
                                        Uring& ring, asio::any_io_executor ex) {
    for (uint64_t seq : layout.journals)
        if (Status st = remove_stray_journal(dir / journal_name(seq), "exists without any snapshot"); !st)
            co_return Error{st.error().code, st.error().message + "; refusing to start"};
    Recovered out{Namespace(owner, now), nullptr, 0, 0};
    auto journal = Journal::create(dir / journal_name(0), 1, ring, ex);
    if (!journal) co_return journal.error();
    out.journal = std::move(*journal);
    auto body = out.ns.snapshot();
    if (!body) co_return body.error();
    Status st = co_await write_snapshot(ring, dir_fd, dir, 0, snapshot_image(std::move(*body), 0));
    if (!st) co_return st.error();
    co_return std::move(out);
}

}  // namespace

// ---- the store -----------------------------------------------------------------

struct MetaStore::Loaded {
    fs::path dir;
    UniqueFd dir_fd;
    Recovered state;
};

awaitable<Result<std::unique_ptr<MetaStore>>> MetaStore::open(fs::path state_dir, uint32_t owner_node,
                                                              Timespec now, Uring& ring,
                                                              MetaStoreOptions options) {
    auto ex = co_await asio::this_coro::executor;
    const fs::path dir = state_dir / "meta";
    auto dir_fd = prepare_dir(dir);
    if (!dir_fd) co_return dir_fd.error();
    auto layout = list_dir(dir);
    if (!layout) co_return layout.error();
    for (const auto& name : layout->temporaries) {
        std::error_code ec;
        if (fs::remove(dir / name, ec)) log_removed(dir / name, "an interrupted snapshot write");
    }
    Result<Recovered> state = Error{-EINVAL, "unset"};
    if (layout->snapshots.empty())
        state = co_await initialize(dir, dir_fd->get(), *layout, owner_node, now, ring, ex);
    else
        state = recover(dir, *layout, owner_node, ring, ex);
    if (!state) co_return Error{state.error().code, "metadata store: " + state.error().message};
    log_opened(dir, state->snapshot_seq, state->journal->last_seq(), state->journal_base);
    Loaded loaded{dir, std::move(*dir_fd), std::move(*state)};
    co_return std::unique_ptr<MetaStore>(new MetaStore(std::move(loaded), ring, options));
}

MetaStore::MetaStore(Loaded loaded, Uring& ring, MetaStoreOptions options)
    : dir_(std::move(loaded.dir)),
      dir_fd_(std::move(loaded.dir_fd)),
      ring_(ring),
      options_(options),
      ns_(std::move(loaded.state.ns)),
      journal_(std::move(loaded.state.journal)),
      journal_base_(loaded.state.journal_base),
      snapshot_seq_(loaded.state.snapshot_seq) {
    ns_.set_observer([this](const Op& op) { record(op); });
}

MetaStore::~MetaStore() { ns_.set_observer(nullptr); }

std::optional<Error> MetaStore::failure() const { return failed_ ? failed_ : journal_->failure(); }

// Runs inside Namespace::apply: the op gets its seq before anything else
// can run, so the namespace and the journal agree op for op.
void MetaStore::record(const Op& op) {
    if (failed_) return;
    auto bytes = encode_op(op);
    if (!bytes) {
        stop(bytes.error());
        return;
    }
    if (auto seq = journal_->submit(*bytes, ns_.applying_lazily()); !seq) stop(seq.error());
}

void MetaStore::stop(const Error& error) {
    failed_ = Error{error.code, "the metadata store has stopped (restart to recover): " + error.message};
    log_stopped(*failed_);
}

awaitable<Status> MetaStore::sync() {
    if (auto f = failure()) co_return *f;
    co_return co_await journal_->sync();  // touches nothing of ours after it: we may be gone
}

bool MetaStore::write_out() { return !failure() && journal_->write_out(); }

awaitable<Result<Outcome>> MetaStore::commit(Op op) {
    auto done = ns_.apply(op);
    if (!done) co_return done.error();
    Status st = co_await sync();
    if (!st) co_return st.error();
    co_return done;
}

bool MetaStore::wants_checkpoint() const {
    return !checkpointing_ && !failure() && journal_->file_bytes() >= options_.checkpoint_bytes;
}

awaitable<Status> MetaStore::checkpoint() {
    if (auto f = failure()) co_return *f;
    if (checkpointing_) co_return Error{-EBUSY, "a metadata checkpoint is already running"};
    const uint64_t seq = journal_->last_seq();
    if (seq == snapshot_seq_) co_return ok_status();  // nothing new since the last one
    auto body = ns_.snapshot();
    if (!body) co_return body.error();
    // Ops after seq go to journal-<seq>.log from now on; the journal writes
    // them only once the old file is complete.
    if (seq != journal_base_) {
        if (Status st = journal_->rotate(dir_ / journal_name(seq)); !st) co_return st;
        journal_base_ = seq;
    }
    checkpointing_ = true;
    const size_t bytes = body->size();
    std::vector<uint8_t> image = snapshot_image(std::move(*body), seq);
    Status written = co_await write_snapshot(ring_, dir_fd_.get(), dir_, seq, std::move(image));
    checkpointing_ = false;
    if (!written) co_return written;
    log_checkpoint(seq, bytes);
    const uint64_t previous = std::exchange(snapshot_seq_, seq);
    co_await remove_older_than(previous);
    co_return ok_status();
}

// The previous snapshot and the journals from it on stay: they are the
// fallback should the new snapshot turn out damaged. Failures only log.
awaitable<void> MetaStore::remove_older_than(uint64_t seq) {
    auto layout = list_dir(dir_);
    if (!layout) co_return;
    std::vector<std::string> names;
    for (uint64_t s : layout->snapshots)
        if (s < seq) names.push_back(snapshot_name(s));
    for (uint64_t j : layout->journals)
        if (j < seq) names.push_back(journal_name(j));
    for (const auto& name : names) {
        Status st = co_await ring_.unlinkat(dir_fd_.get(), name, 0);
        if (st) log_removed(dir_ / name, "older than the previous snapshot");
        else log_remove_failed(dir_ / name, st.error());
    }
}

}  // namespace pfs::meta
