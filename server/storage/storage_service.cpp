#include "storage_service.hpp"

#include <atomic>

#include "log.hpp"

namespace pfs {
namespace {

Reply malformed(const char* what) { return Reply::fail(PFS_E_PROTO, std::string("malformed ") + what); }

Reply unknown_target(uint32_t id) {
    return Reply::fail(PFS_E_UNKNOWN_TARGET, "target " + std::to_string(id) + " is not on this node");
}

// A CHUNK_WRITE: the pfs_chunk_io as its body, exactly io.length bytes of
// bulk data beside it (not copied: wherever the transport put them).
struct WriteRequest {
    pfs_chunk_io io{};
    std::span<const uint8_t> data;
};

Result<WriteRequest> decode_write(const Frame& frame) {
    WriteRequest w;
    auto io = decode(frame.payload, pfs_x_chunk_io);
    if (!io) return Error{PFS_E_PROTO, "malformed CHUNK_WRITE"};
    w.io = *io;
    if (!frame.bulk || frame.data.size() != w.io.length)
        return Error{PFS_E_PROTO, "CHUNK_WRITE carries " + std::to_string(frame.data.size()) +
                                      " data bytes, its header says " + std::to_string(w.io.length)};
    w.data = frame.data.span();
    return w;
}

template <class M>
Reply encoded(int (*xfer)(pfs_xdr*, M*), M msg) {
    auto body = encode(xfer, msg);
    return body ? Reply::ok(std::move(*body)) : Reply::from(body.error());
}

}  // namespace

struct StorageService::Target {
    std::unique_ptr<ChunkStore> store;
    std::atomic<uint32_t> id{0};             // the agent's, as of the last refresh_ids
    std::atomic<bool> reported_full{false};  // ENOSPC is logged once per episode, not per request

    // After a write or a freeing succeeded. Written only when it changes:
    // every loop's writes pass here, the cache line stays shared.
    void room_again() {
        if (reported_full.load(std::memory_order_relaxed)) reported_full.store(false, std::memory_order_relaxed);
    }
};

Result<std::shared_ptr<StorageService>> StorageService::create(const std::vector<AgentTarget>& targets,
                                                               StorageServiceOptions options) {
    std::shared_ptr<StorageService> service(new StorageService(targets));
    // The registered buffers are pinned memory: the loops share them out
    // rather than each pinning the whole amount.
    const size_t rings = size_t{options.worker_loops} + 1;
    std::vector<Uring*> ring_of_loop;
    for (size_t i = 0; i < rings; ++i) {
        auto ring = Uring::create(options.ring);
        if (!ring) return ring.error();
        // fixed_buffers in all, the first rings one more where they do not
        // divide evenly (more loops than buffers: some loops have none).
        const size_t buffers = options.fixed_buffers / rings + (i < options.fixed_buffers % rings ? 1 : 0);
        if (buffers > 0) {
            auto pool = BufferPool::create(buffers, options.fixed_buffer_size);
            Status st = pool ? (*ring)->register_buffers(std::move(*pool)) : Status(pool.error());
            if (!st) log::warn("running without registered I/O buffers", {{"reason", st.error().message}});
        }
        ring_of_loop.push_back(ring->get());
        service->rings_.push_back(std::move(*ring));
    }
    BufferPool* buffers = service->rings_.front()->buffers();
    log::info("disk I/O through io_uring", {{"rings", rings},
                                            {"entries", service->rings_.front()->capacity()},
                                            {"registered_buffers_each", buffers ? buffers->count() : 0},
                                            {"buffer_bytes", buffers ? buffers->buffer_size() : 0}});
    for (const auto& t : targets) {
        auto store = ChunkStore::open(ring_of_loop, t.path, options.chunks);
        if (!store) return store.error();
        auto target = std::make_unique<Target>();
        target->store = std::move(*store);
        service->targets_.push_back(std::move(target));
    }
    service->refresh_ids();
    return service;
}

StorageService::StorageService(const std::vector<AgentTarget>& targets)
    : agent_targets_(targets), lister_(std::make_unique<asio::thread_pool>(1)) {}

void StorageService::refresh_ids() {
    for (size_t i = 0; i < agent_targets_.size() && i < targets_.size(); ++i) targets_[i]->id = agent_targets_[i].id;
}

StorageService::~StorageService() {
    // A listing under way finishes first: it reads the stores' directories.
    join_helpers();
}

void StorageService::join_helpers() { lister_->join(); }

void StorageService::install(RpcServer& server) {
    using Method = awaitable<Reply> (StorageService::*)(Request&);
    auto add = [&](uint16_t type, Method method) {
        auto self = shared_from_this();
        server.handle(type, [self, method](Request& req) { return ((*self).*method)(req); });
    };
    add(PFS_MSG_CHUNK_WRITE, &StorageService::write);
    add(PFS_MSG_CHUNK_READ, &StorageService::read);
    add(PFS_MSG_CHUNK_TRUNCATE, &StorageService::truncate);
    add(PFS_MSG_CHUNK_SYNC, &StorageService::sync);
    add(PFS_MSG_CHUNK_UNLINK, &StorageService::unlink);
    add(PFS_MSG_CHUNK_UNLINK_MANY, &StorageService::unlink_many);
    add(PFS_MSG_CHUNK_STAT, &StorageService::stat);
    add(PFS_MSG_CHUNK_LIST, &StorageService::list);
    add(PFS_MSG_CHUNK_FALLOCATE, &StorageService::fallocate);
    add(PFS_MSG_CHUNK_SEEK, &StorageService::seek);
    add(PFS_MSG_CHUNK_COPY, &StorageService::copy);
}

void StorageService::install_sync_all(RpcServer& server) {
    // Not a coroutine itself, as install's: the handler may be gone before
    // the request ends, the service it keeps alive is not.
    auto self = shared_from_this();
    server.handle(PFS_MSG_SYNC_ALL, [self](Request& req) { return self->sync_all_request(req); });
}

awaitable<Reply> StorageService::sync_all_request(Request& req) {
    if (!req.frame.payload.empty()) co_return malformed("SYNC_ALL");
    auto st = co_await sync_all();
    co_return st ? Reply::ok() : Reply::from(st.error());
}

awaitable<Status> StorageService::sync_all() {
    std::vector<const ChunkStore*> stores;
    for (const auto& t : targets_) stores.push_back(t->store.get());
    // On the helper thread; the answer is resumed back on this loop. By
    // reference: GCC 12 destroys a lambda temporary in a co_await
    // expression twice, harmless only for captures with no destructor.
    std::optional<Status> synced = co_await asio::co_spawn(
        *lister_,
        [&stores]() -> awaitable<std::optional<Status>> {
            for (const ChunkStore* store : stores)
                if (auto st = store->sync_all(); !st) co_return st;
            co_return ok_status();
        },
        asio::use_awaitable);
    co_return *synced;
}

awaitable<void> StorageService::stop_cleanly() {
    auto self = shared_from_this();  // the caller's handle may go first
    for (auto& t : targets_) {
        if (auto st = t->store->stop_cleanly(); !st)
            log::warn("target not stopped cleanly: clients will see its writes as possibly lost",
                      {{"target", t->store->directory().string()}, {"error", st.error().message}});
    }
    co_return;
}

ChunkStore* StorageService::store(uint32_t target_id) {
    Target* target = find(target_id);
    return target ? target->store.get() : nullptr;
}

StorageService::Target* StorageService::find(uint32_t target_id) {
    if (target_id == 0) return nullptr;
    for (auto& t : targets_)
        if (t->id == target_id) return t.get();
    return nullptr;
}

Reply StorageService::failed(Target& target, const Error& e) {
    if (e.code == -ENOSPC) {
        if (!target.reported_full.exchange(true))
            log::warn("storage target is full; still serving reads",
                      {{"target", target.store->directory().string()}, {"error", e.message}});
    } else if (e.code != -ENOENT) {
        log::warn("chunk operation failed", {{"error", e.message}});
    }
    return Reply::from(e);
}

awaitable<Result<ChunkHold>> StorageService::admit(const ChunkAccess& access) {
    if (!guard_) co_return ChunkHold{};
    co_return co_await guard_(access);
}

awaitable<Reply> StorageService::write(Request& req) {
    auto w = decode_write(req.frame);
    if (!w) co_return Reply::fail(PFS_E_PROTO, w.error().message);
    Target* target = find(w->io.chunk.target_id);
    if (!target) co_return unknown_target(w->io.chunk.target_id);
    auto hold = co_await admit({PFS_MSG_CHUNK_WRITE, w->io.chunk.file, w->io.offset + w->data.size()});
    if (!hold) co_return Reply::from(hold.error());
    auto done = co_await target->store->write(w->io.chunk.file, w->io.offset, w->data);
    if (!done) co_return failed(*target, done.error());
    target->room_again();
    const pfs_chunk_written written{static_cast<uint32_t>(*done), target->store->verifier()};
    if (!recorder_) co_return encoded(pfs_x_chunk_written, written);
    auto attr = recorder_(req, w->io.chunk.file, w->io.offset + *done);
    if (!attr) co_return Reply::from(attr.error());
    co_return encoded(pfs_x_inline_written, pfs_inline_written{written, *attr});
}

awaitable<Reply> StorageService::read(Request& req) {
    auto io = decode(req.frame.payload, pfs_x_chunk_io);
    if (!io || !req.frame.bulk || req.frame.bulk->out_len < io->length) co_return malformed("CHUNK_READ");
    Target* target = find(io->chunk.target_id);
    if (!target) co_return unknown_target(io->chunk.target_id);
    auto hold = co_await admit({PFS_MSG_CHUNK_READ, io->chunk.file});
    if (!hold) co_return Reply::from(hold.error());
    auto data = co_await target->store->read(io->chunk.file, io->offset, io->length);
    if (!data) co_return failed(*target, data.error());
    if ((req.frame.header.flags & PFS_FLAG_ZERO_FILL) && data->size() < io->length) {
        // The requester cannot zero the rest itself (GPU memory): a hole is sent as zeros.
        Bytes whole(io->length, 0);
        std::copy(data->begin(), data->end(), whole.begin());
        co_return Reply::ok_data(SharedBytes(std::move(whole)));
    }
    co_return Reply::ok_data(std::move(*data));
}

awaitable<Reply> StorageService::truncate(Request& req) {
    auto t = decode(req.frame.payload, pfs_x_chunk_truncate);
    if (!t) co_return malformed("CHUNK_TRUNCATE");
    Target* target = find(t->chunk.target_id);
    if (!target) co_return unknown_target(t->chunk.target_id);
    auto hold = co_await admit({PFS_MSG_CHUNK_TRUNCATE, t->chunk.file, t->size});
    if (!hold) co_return Reply::from(hold.error());
    auto st = co_await target->store->truncate(t->chunk.file, t->size);
    co_return st ? Reply::ok() : failed(*target, st.error());
}

awaitable<Reply> StorageService::sync(Request& req) {
    auto ref = decode(req.frame.payload, pfs_x_chunk_ref);
    if (!ref) co_return malformed("CHUNK_SYNC");
    Target* target = find(ref->target_id);
    if (!target) co_return unknown_target(ref->target_id);
    auto hold = co_await admit({PFS_MSG_CHUNK_SYNC, ref->file});
    if (!hold) co_return Reply::from(hold.error());
    auto st = co_await target->store->sync(ref->file);
    if (!st) co_return failed(*target, st.error());
    co_return encoded(pfs_x_chunk_synced, pfs_chunk_synced{target->store->verifier()});
}

awaitable<Reply> StorageService::unlink(Request& req) {
    auto ref = decode(req.frame.payload, pfs_x_chunk_ref);
    if (!ref) co_return malformed("CHUNK_UNLINK");
    Target* target = find(ref->target_id);
    if (!target) co_return unknown_target(ref->target_id);
    auto st = co_await target->store->unlink(ref->file);
    if (!st) co_return failed(*target, st.error());
    target->room_again();  // space was freed
    co_return Reply::ok();
}

awaitable<Reply> StorageService::unlink_many(Request& req) {
    auto m = decode(req.frame.payload, pfs_x_chunk_unlink_many);
    if (!m) co_return malformed("CHUNK_UNLINK_MANY");
    Target* target = find(m->target_id);
    if (!target) co_return unknown_target(m->target_id);
    // Each chunk on its own: one that fails leaves the others to go.
    Status first = ok_status();
    for (uint32_t i = 0; i < m->count; ++i) {
        auto st = co_await target->store->unlink(m->files[i]);
        if (!st && first) first = st;
    }
    if (!first) co_return failed(*target, first.error());
    target->room_again();  // space was freed
    co_return Reply::ok();
}

awaitable<Reply> StorageService::stat(Request& req) {
    auto ref = decode(req.frame.payload, pfs_x_chunk_ref);
    if (!ref) co_return malformed("CHUNK_STAT");
    Target* target = find(ref->target_id);
    if (!target) co_return unknown_target(ref->target_id);
    auto hold = co_await admit({PFS_MSG_CHUNK_STAT, ref->file});
    if (!hold) co_return Reply::from(hold.error());
    auto st = co_await target->store->stat(ref->file);
    if (!st) co_return failed(*target, st.error());
    co_return encoded(pfs_x_chunk_stat, pfs_chunk_stat{st->size, st->allocated});
}

awaitable<Reply> StorageService::fallocate(Request& req) {
    auto m = decode(req.frame.payload, pfs_x_chunk_falloc);
    if (!m) co_return malformed("CHUNK_FALLOCATE");
    Target* target = find(m->chunk.target_id);
    if (!target) co_return unknown_target(m->chunk.target_id);
    const uint64_t reach = (m->mode & PFS_FALLOC_PUNCH_HOLE) ? 0 : m->offset + m->length;
    auto hold = co_await admit({PFS_MSG_CHUNK_FALLOCATE, m->chunk.file, reach});
    if (!hold) co_return Reply::from(hold.error());
    auto st = co_await target->store->fallocate(m->chunk.file, m->mode, m->offset, m->length);
    if (!st) co_return failed(*target, st.error());
    if (m->mode & PFS_FALLOC_PUNCH_HOLE) target->room_again();  // space was freed
    co_return Reply::ok();
}

awaitable<Reply> StorageService::seek(Request& req) {
    auto m = decode(req.frame.payload, pfs_x_chunk_seek);
    if (!m) co_return malformed("CHUNK_SEEK");
    Target* target = find(m->chunk.target_id);
    if (!target) co_return unknown_target(m->chunk.target_id);
    auto hold = co_await admit({PFS_MSG_CHUNK_SEEK, m->chunk.file});
    if (!hold) co_return Reply::from(hold.error());
    auto at = co_await target->store->seek(m->chunk.file, m->what, m->offset);
    if (!at) co_return failed(*target, at.error());
    pfs_chunk_seek_reply out{static_cast<uint8_t>(at->has_value() ? 1 : 0), at->value_or(0)};
    co_return encoded(pfs_x_chunk_seek_reply, out);
}

awaitable<Reply> StorageService::copy(Request& req) {
    auto m = decode(req.frame.payload, pfs_x_chunk_copy);
    if (!m) co_return malformed("CHUNK_COPY");
    Target* target = find(m->src.target_id);
    if (!target) co_return unknown_target(m->src.target_id);
    auto src_hold = co_await admit({PFS_MSG_CHUNK_COPY, m->src.file});
    if (!src_hold) co_return Reply::from(src_hold.error());
    auto dst_hold = co_await admit({PFS_MSG_CHUNK_COPY, m->dst, m->dst_offset + m->length});
    if (!dst_hold) co_return Reply::from(dst_hold.error());
    auto pair = co_await target->store->copy_pair(m->src.file, m->dst);
    if (!pair) co_return failed(*target, pair.error());
    // On the helper thread (the pair keeps both descriptors open).
    const pfs_chunk_copy c = *m;
    std::optional<Status> copied = co_await asio::co_spawn(
        *lister_,
        [&pair, c]() -> awaitable<std::optional<Status>> {
            co_return ChunkStore::copy(*pair, c.src_offset, c.dst_offset, c.length);
        },
        asio::use_awaitable);
    if (!*copied) co_return failed(*target, copied->error());
    target->room_again();
    if (recorder_) {
        if (auto attr = recorder_(req, c.dst, c.dst_offset + c.length); !attr) co_return Reply::from(attr.error());
    }
    co_return encoded(pfs_x_chunk_written, pfs_chunk_written{c.length, target->store->verifier()});
}

awaitable<Reply> StorageService::list(Request& req) {
    auto m = decode(req.frame.payload, pfs_x_chunk_list);
    if (!m) co_return malformed("CHUNK_LIST");
    Target* target = find(m->target_id);
    if (!target) co_return unknown_target(m->target_id);
    const ChunkStore* store = target->store.get();
    const pfs_chunk_cookie from = m->cookie;
    const uint32_t max = m->max_entries;
    // On the helper thread; the reply is resumed back on this loop.
    std::optional<Result<ChunkListing>> listed = co_await asio::co_spawn(
        *lister_,
        [store, from, max]() -> awaitable<std::optional<Result<ChunkListing>>> { co_return store->list(from, max); },
        asio::use_awaitable);
    if (!*listed) co_return failed(*target, listed->error());
    const ChunkListing& page = listed->value();
    pfs_chunk_page head{page.next, static_cast<uint8_t>(page.eof ? 1 : 0), static_cast<uint32_t>(page.entries.size())};
    auto body = encode_payload([&](pfs_xdr* x) {
        if (pfs_x_chunk_page(x, &head)) return;
        for (const auto& e : page.entries) {
            pfs_chunk_entry w{e.id, e.size};
            if (pfs_x_chunk_entry(x, &w)) return;
        }
    });
    co_return body ? Reply::ok(std::move(*body)) : Reply::from(body.error());
}

}  // namespace pfs
