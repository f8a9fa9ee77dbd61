// The journal encoding of ops: a version byte, the op's index in the Op
// variant, then its fields, each through one xfer function for both
// directions.
#include <utility>

#include "namespace_codec.hpp"
#include "namespace_ops.hpp"
#include "wire.hpp"

namespace pfs::meta {

namespace codec {
namespace {

// 2: patterns carry inline_max, CreateOp and TmpfileOp the file's.
// 3: patterns carry dir_stripes; MkdirOp and DetachedMkdirOp their shards.
// 4: UninlineOp says whether the move only begins.
constexpr uint8_t kOpVersion = 4;

void xfer_pattern(pfs_xdr* x, StripePattern& p, uint8_t version) { xfer(x, p, version >= 2, version >= 3); }

void xfer_op(pfs_xdr* x, CreateOp& o, uint8_t version) {
    xfer(x, o.parent);
    xfer_str(x, o.name, kNameMax);
    xfer(x, o.id);
    xfer(x, o.mode);
    xfer(x, o.uid);
    xfer(x, o.gid);
    xfer(x, o.layout);
    if (version >= 2) xfer(x, o.inline_max);
    xfer(x, o.now);
}

void xfer_op(pfs_xdr* x, MkdirOp& o, uint8_t version) {
    xfer(x, o.parent);
    xfer_str(x, o.name, kNameMax);
    xfer(x, o.id);
    xfer(x, o.mode);
    xfer(x, o.uid);
    xfer(x, o.gid);
    xfer_pattern(x, o.pattern, version);
    xfer(x, o.now);
    if (version >= 3) xfer(x, o.shards, PFS_DIR_SHARDS_MAX);
}

void xfer_op(pfs_xdr* x, SymlinkOp& o) {
    xfer(x, o.parent);
    xfer_str(x, o.name, kNameMax);
    xfer(x, o.id);
    xfer_str(x, o.target, kSymlinkMax);
    xfer(x, o.uid);
    xfer(x, o.gid);
    xfer(x, o.now);
}

void xfer_op(pfs_xdr* x, LinkOp& o) {
    xfer(x, o.id);
    xfer(x, o.parent);
    xfer_str(x, o.name, kNameMax);
    xfer(x, o.now);
}

void xfer_op(pfs_xdr* x, UnlinkOp& o) {
    xfer(x, o.parent);
    xfer_str(x, o.name, kNameMax);
    xfer(x, o.keep_orphan);
    xfer(x, o.now);
}

void xfer_op(pfs_xdr* x, RmdirOp& o) {
    xfer(x, o.parent);
    xfer_str(x, o.name, kNameMax);
    xfer(x, o.now);
}

void xfer_op(pfs_xdr* x, RenameOp& o) {
    xfer(x, o.src_parent);
    xfer_str(x, o.src_name, kNameMax);
    xfer(x, o.dst_parent);
    xfer_str(x, o.dst_name, kNameMax);
    xfer(x, o.flags);
    xfer(x, o.keep_orphan);
    xfer(x, o.now);
}

void xfer_op(pfs_xdr* x, SetattrOp& o) {
    xfer(x, o.id);
    xfer(x, o.changes.mode);
    xfer(x, o.changes.uid);
    xfer(x, o.changes.gid);
    xfer(x, o.changes.size);
    xfer(x, o.changes.atime);
    xfer(x, o.changes.mtime);
    xfer(x, o.now);
}

void xfer_op(pfs_xdr* x, SetXattrOp& o) {
    xfer(x, o.id);
    xfer_str(x, o.name, kXattrNameMax);
    xfer_str(x, o.value, kXattrValueMax);
    xfer(x, o.flags);
    xfer(x, o.now);
}

void xfer_op(pfs_xdr* x, RemoveXattrOp& o) {
    xfer(x, o.id);
    xfer_str(x, o.name, kXattrNameMax);
    xfer(x, o.now);
}

void xfer_op(pfs_xdr* x, SetPatternOp& o, uint8_t version) {
    xfer(x, o.id);
    xfer_pattern(x, o.pattern, version);
    xfer(x, o.now);
}

void xfer_op(pfs_xdr* x, PurgeOp& o) { xfer(x, o.id); }

void xfer_op(pfs_xdr* x, DetachedMkdirOp& o, uint8_t version) {
    xfer(x, o.parent);
    xfer(x, o.id);
    xfer(x, o.mode);
    xfer(x, o.uid);
    xfer(x, o.gid);
    xfer_pattern(x, o.pattern, version);
    xfer(x, o.now);
    if (version < 3) return;
    xfer(x, o.shards, PFS_DIR_SHARDS_MAX);
    xfer(x, o.shard_index);
    xfer(x, o.shard_count);
}

void xfer_op(pfs_xdr* x, DetachedStateOp& o) {
    xfer(x, o.id);
    xfer(x, o.state);
}

void xfer_op(pfs_xdr* x, DetachedRmdirOp& o) { xfer(x, o.id); }

void xfer_op(pfs_xdr* x, RemoteEntryOp& o) {
    xfer(x, o.parent);
    xfer_str(x, o.name, kNameMax);
    xfer(x, o.id);
    xfer(x, o.now);
}

void xfer_op(pfs_xdr* x, MoveStateOp& o) {
    xfer(x, o.id);
    xfer(x, o.remote);
}

void xfer_op(pfs_xdr* x, MovedLinkOp& o, uint8_t version) {
    xfer(x, o.parent);
    xfer_str(x, o.name, kNameMax);
    xfer(x, o.id);
    xfer(x, o.type);
    xfer(x, o.keep_orphan);
    xfer(x, o.now);
    if (version >= 3) xfer(x, o.victim_held);
}

void xfer_op(pfs_xdr* x, DropEntryOp& o) {
    xfer(x, o.parent);
    xfer_str(x, o.name, kNameMax);
    xfer(x, o.id);
    xfer(x, o.now);
}

void xfer_op(pfs_xdr* x, DetachedUnlinkOp& o) {
    xfer(x, o.id);
    xfer(x, o.keep_orphan);
}

void xfer_op(pfs_xdr* x, ReapedOp& o) {
    auto n = static_cast<uint32_t>(o.ids.size());
    if (pfs_x_count(x, &n, kReapedMax, 16)) return;
    if (pfs_xdr_decoding(x)) o.ids.resize(n);
    for (auto& id : o.ids) xfer(x, id);
}

void xfer_op(pfs_xdr* x, MknodOp& o) {
    xfer(x, o.parent);
    xfer_str(x, o.name, kNameMax);
    xfer(x, o.id);
    xfer(x, o.mode);
    xfer(x, o.rdev);
    xfer(x, o.uid);
    xfer(x, o.gid);
    xfer(x, o.now);
}

void xfer_op(pfs_xdr* x, TmpfileOp& o, uint8_t version) {
    xfer(x, o.dir);
    xfer(x, o.id);
    xfer(x, o.mode);
    xfer(x, o.uid);
    xfer(x, o.gid);
    xfer(x, o.layout);
    if (version >= 2) xfer(x, o.inline_max);
    xfer(x, o.now);
}

void xfer_op(pfs_xdr* x, UninlineOp& o, uint8_t version) {
    xfer(x, o.id);
    if (version >= 4) xfer(x, o.begins);
}

// Ops whose fields changed between versions take the record's.
template <class O>
void xfer_any_op(pfs_xdr* x, O& o, uint8_t version) {
    if constexpr (requires { xfer_op(x, o, version); })
        xfer_op(x, o, version);
    else
        xfer_op(x, o);
}

template <size_t... I>
Op op_of_index(size_t index, std::index_sequence<I...>) {
    Op op;
    ((index == I ? (op.emplace<I>(), 0) : 0), ...);
    return op;
}

}  // namespace
}  // namespace codec

Result<std::vector<uint8_t>> encode_op(const Op& op) {
    uint8_t version = codec::kOpVersion;
    auto tag = static_cast<uint8_t>(op.index());
    return encode_payload([&](pfs_xdr* x) {
        pfs_x_u8(x, &version);
        pfs_x_u8(x, &tag);
        std::visit([x, version](const auto& o) { codec::xfer_any_op(x, codec::unconst(o), version); }, op);
    });
}

Result<Op> decode_op(std::span<const uint8_t> bytes) {
    if (bytes.size() > UINT32_MAX) return Error{-EMSGSIZE, "op record too large"};
    pfs_xdr x;
    pfs_xdr_init_decode(&x, bytes.data(), static_cast<uint32_t>(bytes.size()));
    uint8_t version = 0, tag = 0;
    pfs_x_u8(&x, &version);
    pfs_x_u8(&x, &tag);
    if (x.err) return Error{x.err, "truncated op record"};
    if (version < 1 || version > codec::kOpVersion)
        return Error{-EPROTONOSUPPORT, "op record version " + std::to_string(version) + " unknown"};
    if (tag >= std::variant_size_v<Op>) return Error{-EBADMSG, "unknown op kind " + std::to_string(tag)};
    Op op = codec::op_of_index(tag, std::make_index_sequence<std::variant_size_v<Op>>{});
    std::visit([&x, version](auto& o) { codec::xfer_any_op(&x, o, version); }, op);
    if (pfs_xdr_finish(&x)) return Error{x.err, "malformed op record"};
    return op;
}

}  // namespace pfs::meta
