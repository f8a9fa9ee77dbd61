#include "wire.hpp"

#include <unistd.h>

#include <algorithm>

#include <chrono>
#include <cstring>

namespace pfs {

pfs_header make_header(uint16_t type, uint32_t flags, uint64_t request_id) {
    pfs_header h{};
    h.magic = PFS_PROTO_MAGIC;
    h.version = PFS_PROTO_VERSION;
    h.type = type;
    h.flags = flags;
    h.request_id = request_id;
    return h;
}

Credentials Credentials::of_process() {
    Credentials c{::geteuid(), ::getegid(), {}};
    int n = ::getgroups(0, nullptr);
    if (n > 0) {
        std::vector<gid_t> gids(static_cast<size_t>(n));
        n = ::getgroups(n, gids.data());
        for (int i = 0; i < n; ++i) c.groups.push_back(gids[static_cast<size_t>(i)]);
    }
    return c;
}

Bytes encode_groups(std::span<const uint32_t> groups) {
    if (groups.empty()) return {};
    pfs_groups g{};
    g.count = static_cast<uint32_t>(std::min<size_t>(groups.size(), PFS_GROUPS_MAX));
    std::copy_n(groups.begin(), g.count, g.gids);
    return *encode(pfs_x_groups, g);
}

Result<std::vector<uint32_t>> take_groups(Frame& frame) {
    if (!(frame.header.flags & PFS_FLAG_GROUPS)) return std::vector<uint32_t>{};
    pfs_groups g{};
    pfs_xdr x;
    pfs_xdr_init_decode(&x, frame.payload.data(), static_cast<uint32_t>(frame.payload.size()));
    if (pfs_x_groups(&x, &g)) return Error{PFS_E_PROTO, "malformed groups block"};
    frame.payload.erase(frame.payload.begin(), frame.payload.begin() + x.pos);
    return std::vector<uint32_t>(g.gids, g.gids + g.count);
}

Bytes encode_bulk(const pfs_bulk& bulk) { return *encode(pfs_x_bulk, bulk); }

Result<BulkBlock> peek_bulk(std::span<const uint8_t> payload) {
    pfs_bulk b{};
    pfs_xdr x;
    pfs_xdr_init_decode(&x, payload.data(), static_cast<uint32_t>(payload.size()));
    if (pfs_x_bulk(&x, &b)) return Error{PFS_E_PROTO, "malformed bulk block"};
    return BulkBlock{b, x.pos};
}

Status take_bulk(Frame& frame) {
    auto block = peek_bulk(frame.payload);
    if (!block) return block.error();
    frame.payload.erase(frame.payload.begin(), frame.payload.begin() + static_cast<ptrdiff_t>(block->size));
    frame.bulk = block->bulk;
    return ok_status();
}

Reply Reply::from(const Error& e) {
    // Errors below zero are local errnos; on the wire they travel as errno numbers.
    int32_t status = e.code < 0 ? -e.code : e.code;
    if (status == 0) status = PFS_E_INTERNAL;
    return fail(status, e.message);
}

Bytes encode_reply(const Reply& reply) {
    Bytes out = encode_reply_status(reply);
    if (reply.status == PFS_OK) {
        out.insert(out.end(), reply.body.begin(), reply.body.end());
        out.insert(out.end(), reply.data.begin(), reply.data.end());
    }
    return out;
}

Bytes encode_reply_status(const Reply& reply) {
    pfs_reply_status st{};
    st.status = reply.status;
    std::string_view msg = reply.message;
    if (msg.size() >= sizeof st.message) msg = msg.substr(0, sizeof st.message - 1);
    set_field(st.message, msg.substr(0, msg.find('\0')));
    auto head = encode(pfs_x_reply_status, st);
    return head ? std::move(*head) : Bytes{};
}

Result<Reply> decode_reply(std::span<const uint8_t> payload) {
    pfs_reply_status st{};
    pfs_xdr x;
    pfs_xdr_init_decode(&x, payload.data(), static_cast<uint32_t>(payload.size()));
    if (pfs_x_reply_status(&x, &st)) return Error{PFS_E_PROTO, "malformed reply status"};
    Reply r;
    r.status = st.status;
    r.message = st.message;
    if (st.status == PFS_OK) {
        r.body.assign(payload.begin() + x.pos, payload.end());
    } else if (x.pos != payload.size()) {
        return Error{PFS_E_PROTO, "trailing bytes after an error reply"};
    }
    return r;
}

Error reply_error(const Reply& reply) {
    // Errno statuses become negative errnos, as everywhere in Results; PFS's
    // own statuses (>= 1000) stay as they are.
    bool is_errno = reply.status > 0 && reply.status < 1000;
    std::string text = is_errno ? errno_text(-reply.status) : pfs_status_name(reply.status);
    if (!reply.message.empty()) text += ": " + reply.message;
    return Error{is_errno ? -reply.status : reply.status, text};
}

pfs_timespec wire_now() {
    auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                  std::chrono::system_clock::now().time_since_epoch()).count();
    return pfs_timespec{ns / 1000000000, static_cast<uint32_t>(ns % 1000000000)};
}

std::string errno_text(int negative_errno) {
    char buf[128];
    return strerror_r(-negative_errno, buf, sizeof buf);
}

}  // namespace pfs
