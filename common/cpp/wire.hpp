// C++ side of the wire protocol: frames, and payloads encoded and decoded
// through the shared C codec (common/proto). No Asio here.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "result.hpp"

extern "C" {
#include "pfs_proto.h"
}

namespace pfs {

using Bytes = std::vector<uint8_t>;

// Bytes that live in a buffer someone else owns (the storage server's
// registered I/O buffers, an aligned buffer of an O_DIRECT read), kept alive
// by `owner`: read data goes from the disk's buffer to the socket without a
// copy.
class SharedBytes {
public:
    SharedBytes() = default;
    SharedBytes(std::shared_ptr<const void> owner, std::span<const uint8_t> bytes)
        : owner_(std::move(owner)), bytes_(bytes) {}
    // Takes the bytes over.
    explicit SharedBytes(Bytes bytes) {
        auto held = std::make_shared<const Bytes>(std::move(bytes));
        bytes_ = *held;
        owner_ = std::move(held);
    }

    std::span<const uint8_t> span() const { return bytes_; }
    const uint8_t* data() const { return bytes_.data(); }
    size_t size() const { return bytes_.size(); }
    bool empty() const { return bytes_.empty(); }
    const uint8_t* begin() const { return bytes_.data(); }
    const uint8_t* end() const { return bytes_.data() + bytes_.size(); }
    uint8_t operator[](size_t i) const { return bytes_[i]; }
    friend bool operator==(const SharedBytes& a, const Bytes& b) {
        return std::equal(a.begin(), a.end(), b.begin(), b.end());
    }

private:
    std::shared_ptr<const void> owner_;
    std::span<const uint8_t> bytes_;
};

// A request's bulk data, on the requester's side: `data` goes with the
// request, and the reply's data lands in `into` (channel.hpp).
struct Bulk {
    std::span<const uint8_t> data;
    std::span<uint8_t> into;
    // An open asks to send no CLOSE if the server gives all of the file
    // into `into` (PFS_FLAG_UNTRACKED; the reply's flags say if it did).
    bool untracked = false;
    bool empty() const { return data.empty() && into.empty(); }
};

struct Frame {
    pfs_header header{};
    Bytes payload;
    // A request's bulk block (server side) and its data, once here.
    std::optional<pfs_bulk> bulk{};
    SharedBytes data{};
    // A reply's bulk data (client side): bytes placed in the Bulk::into of
    // its request.
    uint32_t data_len = 0;
};

// The bulk block that opens a bulk request's payload.
Bytes encode_bulk(const pfs_bulk& bulk);
// The bulk block at the front of a request's payload, and its length in
// bytes there; malformed: PFS_E_PROTO.
struct BulkBlock {
    pfs_bulk bulk;
    size_t size;
};
Result<BulkBlock> peek_bulk(std::span<const uint8_t> payload);
// Takes the bulk block off the front of a request's payload into
// frame.bulk (PFS_FLAG_BULK); malformed: PFS_E_PROTO.
Status take_bulk(Frame& frame);

// Whom a request acts for: header uid and gid, and the supplementary
// groups a request carries (PFS_FLAG_GROUPS).
struct Credentials {
    uint32_t uid = 0;
    uint32_t gid = 0;
    std::vector<uint32_t> groups;

    // This process's effective uid, gid and groups.
    static Credentials of_process();
};

// The groups block that goes in front of a request's payload (at most
// PFS_GROUPS_MAX of them); empty for none.
Bytes encode_groups(std::span<const uint32_t> groups);
// Takes the groups block off the front of frame's payload when its header
// says there is one (PFS_FLAG_GROUPS), and returns its groups.
Result<std::vector<uint32_t>> take_groups(Frame& frame);

// A header for a new request or notification of `type`.
pfs_header make_header(uint16_t type, uint32_t flags = 0, uint64_t request_id = 0);

// Runs `body(pfs_xdr*)` once to size the payload and once to encode it, so
// one description serves both passes.
template <class Body>
Result<Bytes> encode_payload(Body&& body) {
    pfs_xdr x;
    pfs_xdr_init_size(&x);
    body(&x);
    if (x.err) return Error{x.err, "cannot encode message"};
    Bytes out(x.pos);
    pfs_xdr_init_encode(&x, out.data(), static_cast<uint32_t>(out.size()));
    body(&x);
    if (x.err || x.pos != out.size()) return Error{x.err ? x.err : -EINVAL, "cannot encode message"};
    return out;
}

// Encodes one message struct with its pfs_x_* function.
template <class M>
Result<Bytes> encode(int (*xfer)(pfs_xdr*, M*), M msg) {
    return encode_payload([&](pfs_xdr* x) { xfer(x, &msg); });
}

// Decodes a whole payload with `body(pfs_xdr*)`; trailing bytes are an error.
template <class Body>
Status decode_payload(std::span<const uint8_t> payload, Body&& body) {
    pfs_xdr x;
    pfs_xdr_init_decode(&x, payload.data(), static_cast<uint32_t>(payload.size()));
    body(&x);
    if (pfs_xdr_finish(&x)) return Error{PFS_E_PROTO, "malformed message body"};
    return ok_status();
}

template <class M>
Result<M> decode(std::span<const uint8_t> payload, int (*xfer)(pfs_xdr*, M*)) {
    M msg{};
    auto st = decode_payload(payload, [&](pfs_xdr* x) { xfer(x, &msg); });
    if (!st) return st.error();
    return msg;
}

// A list: a bounded count, then each element.
template <class M>
void xfer_list(pfs_xdr* x, std::vector<M>& items, int (*xfer)(pfs_xdr*, M*), uint32_t min_size,
               uint32_t max = PFS_MAX_LIST) {
    auto n = static_cast<uint32_t>(items.size());
    if (pfs_x_count(x, &n, max, min_size)) return;
    if (pfs_xdr_decoding(x)) items.assign(n, M{});
    for (auto& item : items)
        if (xfer(x, &item)) return;
}

// A reply: status, then the body when the status is PFS_OK.
struct Reply {
    int32_t status = PFS_OK;
    std::string message;
    Bytes body;
    SharedBytes data;  // server side: bulk data, sent beside the body, not copied
    uint32_t data_len = 0;  // client side: bulk data placed in the request's Bulk::into
    // A metadata server's reply to a request with a client id: the epoch
    // of that client's session there (header.client_seq; 0: none).
    uint64_t session_epoch = 0;
    // Header flags of a successful reply beyond PFS_FLAG_REPLY (and BULK):
    // PFS_FLAG_UNTRACKED (set by the server; seen by the client).
    uint16_t flags = 0;

    static Reply ok(Bytes body = {}) { return Reply{PFS_OK, {}, std::move(body), {}, 0, 0, 0}; }
    static Reply ok_data(SharedBytes data) { return Reply{PFS_OK, {}, {}, std::move(data), 0, 0, 0}; }
    static Reply fail(int32_t status, std::string message) { return Reply{status, std::move(message), {}, {}, 0, 0, 0}; }
    static Reply from(const Error& e);
};

Bytes encode_reply(const Reply& reply);
// The status part alone: a reply's payload is this, then (success) its body.
Bytes encode_reply_status(const Reply& reply);
// Splits a reply payload into status and body.
Result<Reply> decode_reply(std::span<const uint8_t> payload);
// A failed reply as an Error: errno statuses as negative errnos, PFS
// statuses (>= 1000) as they are.
Error reply_error(const Reply& reply);

// Copies into a fixed char[] field, refusing what does not fit.
template <size_t N>
bool set_field(char (&dest)[N], std::string_view value) {
    if (value.size() >= N || value.find('\0') != std::string_view::npos) return false;
    value.copy(dest, value.size());
    dest[value.size()] = '\0';
    return true;
}

std::string errno_text(int negative_errno);

// The wall clock as a wire timestamp.
pfs_timespec wire_now();

}  // namespace pfs
