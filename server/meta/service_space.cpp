// pfs-meta's handlers for the space of files: FALLOCATE (allocate, punch,
// zero on the chunk files, then the size) and GET_LAYOUT.
#include <sys/stat.h>

#include "service.hpp"
#include "service_helpers.hpp"

namespace pfs::meta {

awaitable<Reply> Service::on_fallocate(Request& req) {
    auto m = body(req, pfs_x_fallocate);
    if (!m) co_return malformed(PFS_MSG_FALLOCATE);
    auto attr = ns_->getattr(m->id);
    if (!attr) co_return Reply::from(attr.error());
    if (S_ISDIR(attr->mode)) co_return Reply::fail(EISDIR, "fallocate of a directory");
    if (!S_ISREG(attr->mode)) co_return Reply::fail(ENODEV, "fallocate of a file that is not regular");
    // Changes the data like a write does: whoever may write may do it.
    if (auto st = allowed(req, m->id, W_OK); !st) co_return Reply::from(st.error());
    // The chunks first, durably: the size committed below never covers
    // space that a crash left unallocated, nor data a punch left behind.
    const uint64_t reach = (m->mode & PFS_FALLOC_PUNCH_HOLE) ? 0 : m->offset + m->length;
    if (auto st = co_await with_data_layout(m->id, reach, [&](const StripeLayout& layout) {
            return files_.fallocate(layout, m->id, m->mode, m->offset, m->length);
        });
        !st)
        co_return Reply::from(st.error());
    const Timespec stamp = now();
    AttrChanges changes;
    changes.mtime = stamp;
    const uint64_t end = m->offset + m->length;
    if (!(m->mode & PFS_FALLOC_KEEP_SIZE) && end > attr->size) changes.size = end;
    auto out = ns_->setattr(m->id, changes, stamp);
    if (!out) co_return Reply::from(out.error());
    changed(req, std::span<const pfs_entry_id>(&m->id, 1));
    co_return co_await finish(ok_with(pfs_x_attr, to_wire(out->attr)));
}

Status Service::open_inline(const std::filesystem::path& dir, const ChunkStoreOptions& chunks) {
    return inline_.open(
        dir, server_,
        [this](const Request& req, const pfs_entry_id& file, uint64_t end) { return inline_written(req, file, end); },
        chunks);
}

// The inline store took a write or copy into file: what a size report
// would tell, recorded now, so the writer sends none (journaled lazily:
// close(2) promises no durability, and the file's CHUNK_SYNC waits for
// the journal).
Result<pfs_attr> Service::inline_written(const Request& req, const pfs_entry_id& file, uint64_t end) {
    if (stopped_) return Error{-EIO, "metadata server stopped: its journal failed: " + stopped_->message};
    auto current = ns_->getattr(file);
    if (!current) return current.error();
    const Timespec stamp = now();
    AttrChanges changes;
    changes.mtime = stamp;
    if (end > current->size) changes.size = end;
    auto out = ns_->setattr_lazily(file, changes, stamp);
    if (!out) return out.error();
    changed(req, std::span<const pfs_entry_id>(&file, 1));
    durable_later();
    return to_wire(out->attr);
}

awaitable<void> Service::stop_cleanly() {
    // Unlinks answered early free their files once durable: those first,
    // so that what they free reaches the reaper before its last flush.
    if (durable_) co_await durable_();
    while (early_in_flight_) co_await asio::post(ex_, asio::use_awaitable);
    co_await reaper_.flush();
    co_await inline_.stop_cleanly();
    // Lazy records too.
    if (durable_) co_await durable_();
}

awaitable<Status> Service::truncate_chunks(const pfs_entry_id& file, uint64_t size) {
    const bool regular = ns_->inline_max(file).ok();
    if (!regular) co_return ok_status();  // no chunks
    co_return co_await with_data_layout(
        file, size, [&](const StripeLayout& layout) { return files_.truncate(layout, file, size); });
}

template <class Io>
awaitable<Status> Service::with_data_layout(const pfs_entry_id& file, uint64_t end, Io io) {
    // Twice at most: an inline file may move out between the layout and
    // the request (PFS_E_MOVED), and never moves back.
    for (int attempt = 0;; ++attempt) {
        auto layout = co_await inline_.data_layout(file, end);
        if (!layout) co_return layout.error();
        auto st = co_await io(*layout);
        if (st || st.error().code != PFS_E_MOVED || attempt == 1) co_return st;
    }
}

awaitable<Result<StripeLayout>> Service::layout_for(const Request& req, const pfs_entry_id& file) {
    // Not a regular file: the namespace's error.
    return inline_.layout_for(file, follows_inline(req));
}

awaitable<Reply> Service::on_get_layout(Request& req) {
    auto m = body(req, pfs_x_entry_id);
    if (!m) co_return malformed(PFS_MSG_GET_LAYOUT);
    auto layout = co_await layout_for(req, *m);
    if (!layout) co_return Reply::from(layout.error());
    auto reply = ok_with(pfs_x_layout, to_wire(*layout));
    co_return reply ? std::move(*reply) : Reply::from(reply.error());
}

}  // namespace pfs::meta
