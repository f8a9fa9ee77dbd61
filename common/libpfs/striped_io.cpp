#include "striped_io.hpp"

#include <cstring>

#include "gather.hpp"

namespace pfs::client {
namespace {

pfs_chunk_ref chunk_ref(const pfs_entry_id& file, uint32_t target) { return pfs_chunk_ref{file, target}; }

Result<Bytes> chunk_io_payload(const pfs_entry_id& file, uint32_t target, uint64_t offset, uint32_t length) {
    return encode(pfs_x_chunk_io, pfs_chunk_io{chunk_ref(file, target), offset, length});
}

Result<pfs_chunk_written> decode_written_inline(std::span<const uint8_t> body) {
    auto got = decode(body, pfs_x_inline_written);
    if (!got) return got.error();
    return got->written;
}

Status first_error(const std::vector<Result<Unit>>& results) {
    for (const auto& r : results)
        if (!r) return r.error();
    return ok_status();
}

}  // namespace

void WriteVerifiers::seen(uint32_t target, uint64_t verifier) {
    auto [it, fresh] = seen_.try_emplace(target, verifier);
    if (!fresh && it->second != verifier) changed_.insert(target);
}

Status WriteVerifiers::synced(uint32_t target, uint64_t verifier) {
    auto it = seen_.find(target);
    const bool lost = changed_.erase(target) || (it != seen_.end() && it->second != verifier);
    if (it != seen_.end()) seen_.erase(it);
    if (lost)
        return Error{-EIO, "storage target " + std::to_string(target) +
                               " restarted since data was written to it: that data may be lost"};
    return ok_status();
}

awaitable<Status> StripedIo::write(const StripeLayout& layout, const pfs_entry_id& file, uint64_t offset,
                                   std::span<const uint8_t> data, WriteVerifiers* verifiers) {
    if (auto st = check_layout(layout); !st) co_return st;
    std::vector<Task<Unit>> tasks;
    for (const Piece& p : plan_io(layout, offset, data.size(), PFS_MAX_IO)) {
        tasks.push_back([this, &layout, &file, p, verifiers, piece = data.subspan(p.file_offset - offset, p.length)]()
                            -> awaitable<Result<Unit>> {
            auto head = chunk_io_payload(file, layout.targets[p.target_index], p.chunk_offset, p.length);
            if (!head) co_return head.error();
            auto reply = co_await cluster_.call_chunk(file, layout.targets[p.target_index], PFS_MSG_CHUNK_WRITE,
                                                       std::move(*head), Bulk{piece, {}});
            if (!reply) co_return reply.error();
            if (reply->status != PFS_OK) co_return reply_error(*reply);
            // The inline store adds the attributes the write made.
            auto written = layout.targets[p.target_index] == PFS_INLINE_TARGET
                               ? decode_written_inline(reply->body)
                               : decode(reply->body, pfs_x_chunk_written);
            if (!written) co_return written.error();
            if (written->length != p.length) co_return Error{-EIO, "short write on a storage target"};
            if (verifiers) verifiers->seen(layout.targets[p.target_index], written->verifier);
            co_return Unit{};
        });
    }
    co_return first_error(co_await gather(std::move(tasks)));
}

awaitable<Status> StripedIo::read(const StripeLayout& layout, const pfs_entry_id& file, uint64_t offset,
                                  std::span<uint8_t> out) {
    if (auto st = check_layout(layout); !st) co_return st;
    std::vector<Task<Unit>> tasks;
    for (const Piece& p : plan_io(layout, offset, out.size(), PFS_MAX_IO)) {
        tasks.push_back([this, &layout, &file, p, dest = out.subspan(p.file_offset - offset, p.length)]()
                            -> awaitable<Result<Unit>> {
            auto head = chunk_io_payload(file, layout.targets[p.target_index], p.chunk_offset, p.length);
            if (!head) co_return head.error();
            // The data lands in dest itself; past a chunk's end it reads as zeros.
            auto reply = co_await cluster_.call_chunk(file, layout.targets[p.target_index], PFS_MSG_CHUNK_READ,
                                                       std::move(*head), Bulk{{}, dest});
            if (!reply) co_return reply.error();
            if (reply->status != PFS_OK) co_return reply_error(*reply);
            if (!reply->body.empty()) co_return Error{PFS_E_PROTO, "CHUNK_READ reply with a body"};
            if (dest.size() > reply->data_len)
                std::memset(dest.data() + reply->data_len, 0, dest.size() - reply->data_len);
            co_return Unit{};
        });
    }
    co_return first_error(co_await gather(std::move(tasks)));
}

awaitable<Status> StripedIo::each_target(const StripeLayout& layout, const pfs_entry_id& file, uint16_t type,
                                         std::function<Result<Bytes>(uint32_t, uint32_t)> payload) {
    if (auto st = check_layout(layout); !st) co_return st;
    std::vector<Task<Unit>> tasks;
    for (uint32_t i = 0; i < layout.targets.size(); ++i) {
        tasks.push_back([this, &layout, &file, &payload, type, i]() -> awaitable<Result<Unit>> {
            auto body = co_await cluster_.call_chunk_ok(file, layout.targets[i], type, payload(i, layout.targets[i]));
            if (!body) co_return body.error();
            co_return Unit{};
        });
    }
    co_return first_error(co_await gather(std::move(tasks)));
}

awaitable<Status> StripedIo::truncate(const StripeLayout& layout, const pfs_entry_id& file, uint64_t file_size) {
    auto sizes = target_sizes(layout, file_size);
    co_return co_await each_target(layout, file, PFS_MSG_CHUNK_TRUNCATE, [&](uint32_t i, uint32_t target) {
        return encode(pfs_x_chunk_truncate, pfs_chunk_truncate{chunk_ref(file, target), sizes[i]});
    });
}

awaitable<Status> StripedIo::sync(const StripeLayout& layout, const pfs_entry_id& file, WriteVerifiers* verifiers) {
    if (auto st = check_layout(layout); !st) co_return st;
    std::vector<Task<Unit>> tasks;
    // A loss is told once (the verifiers start over): it goes first,
    // ahead of another target's timeout, or a retry would return 0.
    std::optional<Error> lost;
    for (uint32_t target : layout.targets) {
        tasks.push_back([this, &file, &lost, target, verifiers]() -> awaitable<Result<Unit>> {
            auto body = co_await cluster_.call_chunk_ok(file, target, PFS_MSG_CHUNK_SYNC,
                                                         encode(pfs_x_chunk_ref, chunk_ref(file, target)));
            if (!body) co_return body.error();
            auto synced = decode(*body, pfs_x_chunk_synced);
            if (!synced) co_return synced.error();
            if (verifiers) {
                if (auto st = verifiers->synced(target, synced->verifier); !st) {
                    if (!lost) lost = st.error();
                    co_return st.error();
                }
            }
            co_return Unit{};
        });
    }
    auto results = co_await gather(std::move(tasks));
    if (lost) co_return *lost;
    co_return first_error(results);
}

awaitable<Status> StripedIo::unlink(const StripeLayout& layout, const pfs_entry_id& file) {
    co_return co_await each_target(layout, file, PFS_MSG_CHUNK_UNLINK, [&](uint32_t, uint32_t target) {
        return encode(pfs_x_chunk_ref, chunk_ref(file, target));
    });
}

awaitable<Status> StripedIo::fallocate(const StripeLayout& layout, const pfs_entry_id& file, uint32_t mode,
                                       uint64_t offset, uint64_t length) {
    if (auto st = check_layout(layout); !st) co_return st;
    std::vector<Task<Unit>> tasks;
    for (const ChunkRange& r : chunk_ranges(layout, offset, length)) {
        tasks.push_back([this, &layout, &file, mode, r]() -> awaitable<Result<Unit>> {
            const uint32_t target = layout.targets[r.target_index];
            auto body = co_await cluster_.call_chunk_ok(
                file, target, PFS_MSG_CHUNK_FALLOCATE,
                encode(pfs_x_chunk_falloc, pfs_chunk_falloc{chunk_ref(file, target), mode, r.offset, r.length}));
            if (!body) co_return body.error();
            co_return Unit{};
        });
    }
    co_return first_error(co_await gather(std::move(tasks)));
}

awaitable<Result<std::optional<uint64_t>>> StripedIo::seek(const StripeLayout& layout, const pfs_entry_id& file,
                                                           uint8_t what, uint64_t offset) {
    if (auto st = check_layout(layout); !st) co_return st.error();
    const auto n = static_cast<uint32_t>(layout.targets.size());
    std::vector<Task<std::optional<uint64_t>>> tasks;
    for (uint32_t i = 0; i < n; ++i) {
        tasks.push_back([this, &layout, &file, what, offset, n, i]() -> awaitable<Result<std::optional<uint64_t>>> {
            const uint32_t target = layout.targets[i];
            const uint64_t from = pfs_stripe_target_from(layout.chunk_size, n, i, offset);
            auto body = co_await cluster_.call_chunk_ok(
                file, target, PFS_MSG_CHUNK_SEEK, encode(pfs_x_chunk_seek, pfs_chunk_seek{chunk_ref(file, target), from, what}));
            if (!body) co_return body.error();
            auto r = decode(*body, pfs_x_chunk_seek_reply);
            if (!r) co_return r.error();
            if (!r->found) co_return std::optional<uint64_t>{};
            if (r->offset < from) co_return Error{PFS_E_PROTO, "storage target sought backwards"};
            co_return std::optional<uint64_t>(pfs_stripe_file_offset(layout.chunk_size, n, i, r->offset));
        });
    }
    std::optional<uint64_t> first;
    auto answers = co_await gather(std::move(tasks));
    for (auto& r : answers) {
        if (!r) co_return r.error();
        if (*r && (!first || **r < *first)) first = *r;
    }
    co_return first;
}

awaitable<Result<uint64_t>> StripedIo::allocated(const StripeLayout& layout, const pfs_entry_id& file) {
    if (auto st = check_layout(layout); !st) co_return st.error();
    std::vector<Task<uint64_t>> tasks;
    for (uint32_t target : layout.targets) {
        tasks.push_back([this, &file, target]() -> awaitable<Result<uint64_t>> {
            auto body = co_await cluster_.call_chunk_ok(file, target, PFS_MSG_CHUNK_STAT,
                                                         encode(pfs_x_chunk_ref, chunk_ref(file, target)));
            if (!body) co_return body.error();
            auto st = decode(*body, pfs_x_chunk_stat);
            if (!st) co_return st.error();
            co_return st->allocated;
        });
    }
    uint64_t total = 0;
    auto stats = co_await gather(std::move(tasks));
    for (auto& r : stats) {
        if (!r) co_return r.error();
        total += *r;
    }
    co_return total;
}

}  // namespace pfs::client
