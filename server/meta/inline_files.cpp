#include "inline_files.hpp"

#include "log.hpp"

namespace pfs::meta {

Status InlineFiles::open(const std::filesystem::path& dir, RpcServer& server, ChunkRecorder recorder,
                         const ChunkStoreOptions& chunks) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) return Error{-ec.value(), "cannot make the inline store " + dir.string() + ": " + ec.message()};
    targets_ = {AgentTarget{dir, PFS_INLINE_TARGET, 0}};
    StorageServiceOptions options;
    options.fixed_buffers = 0;  // small files: no pinned memory
    options.chunks = chunks;
    auto service = StorageService::create(targets_, options);
    if (!service) return service.error();
    service_ = std::move(*service);
    service_->set_guard([this](const ChunkAccess& access) { return admit(access); });
    service_->set_recorder(std::move(recorder));
    service_->install(server);
    return ok_status();
}

void InlineFiles::attach(Namespace& ns, Durable durable) {
    ns_ = &ns;
    durable_ = std::move(durable);
}

awaitable<void> InlineFiles::stop_cleanly() {
    if (service_) co_await service_->stop_cleanly();
}

awaitable<Status> InlineFiles::sync_all() {
    if (!service_) co_return ok_status();
    co_return co_await service_->sync_all();
}

ChunkStore& InlineFiles::store() const { return *service_->store(PFS_INLINE_TARGET); }

awaitable<Result<ChunkHold>> InlineFiles::admit(const ChunkAccess& access) {
    if (!ns_) co_return Error{-EAGAIN, "the namespace is not loaded yet"};
    // A copy would hold its source while its destination's admission
    // waits for holds to end: two files, or one, could wait for each
    // other for good. Clients copy inline data through their own memory.
    if (access.type == PFS_MSG_CHUNK_COPY) co_return Error{-EXDEV, "the inline store copies nothing"};
    // Before anything that may make its chunk file, a move out included.
    if (access.type != PFS_MSG_CHUNK_READ && access.type != PFS_MSG_CHUNK_STAT)
        unwritten_.erase(EntryKey::of(access.file));
    // The sizes and mtimes the file's writes recorded go to disk with it.
    if (access.type == PFS_MSG_CHUNK_SYNC) {
        if (auto st = co_await durable_(); !st) co_return st.error();
    }
    const EntryKey key = EntryKey::of(access.file);
    for (;;) {
        auto limit = ns_->inline_max(access.file);
        if (!limit) co_return Error{-ESTALE, "no such file here: " + limit.error().message};
        if (auto it = state_.find(key); it != state_.end() && it->second.moving) {
            co_await wait(access.file);
            continue;
        }
        if (*limit == 0) co_return Error{PFS_E_MOVED, "the file's data is on its storage targets now"};
        if (access.end > *limit) {
            auto moved = co_await move_out(access.file);
            if (!moved) co_return moved.error();
            co_return Error{PFS_E_MOVED, "the file outgrew its inline space: its data moved to its storage targets"};
        }
        break;
    }
    State& s = state_[key];
    ++s.in_flight;
    // Released with the reply: the last one wakes a move waiting for it.
    co_return ChunkHold(static_cast<void*>(nullptr), [this, key](void*) {
        auto it = state_.find(key);
        if (it == state_.end()) return;
        if (--it->second.in_flight > 0) return;
        if (it->second.drained) it->second.drained->cancel();
        if (!it->second.moving) state_.erase(it);
    });
}

awaitable<void> InlineFiles::wait(const pfs_entry_id& file) {
    auto it = state_.find(EntryKey::of(file));
    if (it == state_.end() || !it->second.moving) co_return;
    auto timer = it->second.moving;  // the move's own: it outlives the entry
    boost::system::error_code ec;
    co_await timer->async_wait(asio::redirect_error(asio::use_awaitable, ec));
}

awaitable<Status> InlineFiles::move_out(const pfs_entry_id& file) {
    const EntryKey key = EntryKey::of(file);
    if (auto it = state_.find(key); it != state_.end() && it->second.moving) {
        co_await wait(file);
        // That move may have failed: the data is still here.
        if (auto limit = ns_->inline_max(file); limit && *limit != 0)
            co_return Error{-EIO, "the file's inline data could not be moved to its storage targets"};
        co_return ok_status();
    }
    auto moving = std::make_shared<asio::steady_timer>(ex_, asio::steady_timer::time_point::max());
    state_[key].moving = moving;
    // Requests admitted before finish first.
    while (state_[key].in_flight > 0) {
        auto drained = std::make_shared<asio::steady_timer>(ex_, asio::steady_timer::time_point::max());
        state_[key].drained = drained;
        boost::system::error_code ec;
        co_await drained->async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
    Status st = ok_status();
    auto limit = ns_->inline_max(file);
    auto layout = ns_->layout(file);
    if (!limit || !layout) {
        st = Error{-ESTALE, "the file is gone"};
    } else if (*limit != 0) {
        // Recorded first: chunk files a crash leaves on the targets are
        // deleted with the file, even if it never moves.
        st = ns_->uninline(file, true);
        if (st) st = co_await durable_();
        if (st) st = co_await copy_out(file, *layout);
        if (st) st = ns_->uninline(file);
        if (st) st = co_await durable_();
        if (st) {
            if (auto gone = co_await store().unlink(file); !gone)
                log::warn("inline data moved out but not deleted here", {{"error", gone.error().message}});
        } else {
            log::warn("cannot move an inline file's data to its storage targets",
                      {{"ino", file.ino}, {"error", st.error().message}});
        }
    }
    if (auto it = state_.find(key); it != state_.end()) {
        it->second.moving.reset();
        it->second.drained.reset();
        if (it->second.in_flight == 0) state_.erase(it);
    }
    moving->cancel();
    co_return st;
}

awaitable<Status> InlineFiles::copy_out(const pfs_entry_id& file, const StripeLayout& layout) {
    auto size = co_await store().stat(file);
    if (!size) co_return size.error();
    if (size->size > PFS_INLINE_MAX) co_return Error{-EIO, "inline data larger than any inline-max"};
    auto data = co_await store().read(file, 0, static_cast<uint32_t>(size->size));
    if (!data) co_return data.error();
    // The whole of it lies in the first chunk (inline_max <= chunk size):
    // written there, then every chunk file cut to its share of the size
    // (which also drops what an earlier, interrupted move left).
    if (!data->empty()) {
        auto st = co_await files_.write(layout, file, 0, std::span<const uint8_t>(data->data(), data->size()));
        if (!st) co_return st;
    }
    if (auto st = co_await files_.truncate(layout, file, size->size); !st) co_return st;
    co_return co_await files_.sync(layout, file);
}

awaitable<Result<StripeLayout>> InlineFiles::layout_for(const pfs_entry_id& file, bool client_follows) {
    // Not amid a move: its change of layout is durable only at its end (a
    // crash before would bring the data back inline, without what a
    // client wrote to the targets meanwhile), and it may fail.
    for (auto it = state_.find(EntryKey::of(file)); it != state_.end() && it->second.moving;
         it = state_.find(EntryKey::of(file)))
        co_await wait(file);
    auto limit = ns_->inline_max(file);
    if (!limit) co_return limit.error();
    auto layout = ns_->layout(file);
    if (!layout) co_return layout.error();
    if (*limit == 0) co_return *layout;
    if (client_follows) co_return inline_layout(*layout);
    if (auto st = co_await move_out(file); !st) co_return st.error();
    co_return ns_->layout(file);
}

awaitable<Result<StripeLayout>> InlineFiles::data_layout(const pfs_entry_id& file, uint64_t end) {
    auto limit = ns_->inline_max(file);
    if (!limit) co_return limit.error();
    if (*limit != 0 && end > *limit) {
        if (auto st = co_await move_out(file); !st) co_return st.error();
    }
    co_return co_await layout_for(file, true);
}

awaitable<std::optional<SharedBytes>> InlineFiles::content(const pfs_entry_id& file, uint64_t size) {
    auto limit = ns_->inline_max(file);
    if (!limit || size > *limit) co_return std::nullopt;
    // Admitted as a read: not while the data moves.
    auto hold = co_await admit({PFS_MSG_CHUNK_READ, file});
    if (!hold) co_return std::nullopt;
    auto data = co_await store().read(file, 0, static_cast<uint32_t>(size));
    if (!data) co_return std::nullopt;
    if (data->size() == size) co_return std::move(*data);
    // Nothing was written at the end: zeros, as a read gives.
    Bytes whole(size);
    std::copy(data->begin(), data->end(), whole.begin());
    co_return SharedBytes(std::move(whole));
}

awaitable<Result<uint64_t>> InlineFiles::allocated(const pfs_entry_id& file) {
    auto hold = co_await admit({PFS_MSG_CHUNK_STAT, file});
    if (!hold) co_return hold.error();
    auto st = co_await store().stat(file);
    if (!st) co_return st.error();
    co_return st->allocated;
}

awaitable<size_t> InlineFiles::sweep() {
    size_t deleted = 0;
    if (!service_ || !ns_) co_return deleted;
    pfs_chunk_cookie from{};
    for (;;) {
        // A page at a time, between requests (listing blocks: it is short).
        auto page = store().list(from, 1024);
        if (!page) {
            log::warn("cannot list the inline store", {{"error", page.error().message}});
            co_return deleted;
        }
        // Files gone, or moved out, and with no request under way nor a
        // move (theirs to settle)...
        auto leftover = [this](const pfs_entry_id& id) {
            auto limit = ns_->inline_max(id);
            return (!limit || *limit == 0) && !state_.contains(EntryKey::of(id));
        };
        std::vector<pfs_entry_id> candidates;
        for (const auto& e : page->entries)
            if (leftover(e.id)) candidates.push_back(e.id);
        // ...durably so: an unlink or move just applied is not on disk yet,
        // and a crash would bring the file back without its data.
        if (!candidates.empty()) {
            if (auto st = co_await durable_(); !st) co_return deleted;
        }
        for (const auto& id : candidates) {
            if (!leftover(id)) continue;
            if (auto st = co_await store().unlink(id); st)
                ++deleted;
            else
                log::warn("leftover inline data not deleted", {{"ino", id.ino}, {"error", st.error().message}});
        }
        if (page->eof) co_return deleted;
        from = page->next;
        co_await asio::post(ex_, asio::use_awaitable);
    }
}

void InlineFiles::made(const pfs_entry_id& file) {
    if (unwritten_.size() >= kUnwrittenMax) unwritten_.clear();
    unwritten_.insert(EntryKey::of(file));
}

void InlineFiles::forget(const FreedFile& freed) {
    if (!freed.was_inline || !service_) return;
    if (unwritten_.erase(EntryKey::of(freed.id)) > 0) return;
    asio::co_spawn(
        ex_,
        [this, id = freed.id]() -> awaitable<void> {
            if (auto st = co_await store().unlink(id); !st)
                log::warn("a freed inline file's data not deleted", {{"ino", id.ino}, {"error", st.error().message}});
        },
        asio::detached);
}

}  // namespace pfs::meta
