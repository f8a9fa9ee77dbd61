#include "rdma/rdma_channel.hpp"

#include <arpa/inet.h>
#include <fcntl.h>

#include <cstring>

#include "log.hpp"

namespace pfs::rdma {
namespace {

enum : uint64_t { kRecv = 0, kSend = 1, kBulk = 2 };
constexpr uint64_t wr_id(uint64_t kind, uint64_t n) { return kind << 62 | n; }
constexpr uint64_t wr_kind(uint64_t id) { return id >> 62; }
constexpr uint64_t wr_index(uint64_t id) { return id & ((1ull << 62) - 1); }

constexpr uint16_t kMore = 1;           // the frame goes on in the next message
constexpr uint32_t kBulkOpsMax = 64;    // RDMA READ/WRITE work requests beside the sends

void put16(uint8_t* p, uint16_t v) {
    p[0] = static_cast<uint8_t>(v);
    p[1] = static_cast<uint8_t>(v >> 8);
}
uint16_t get16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | p[1] << 8); }
uint32_t get32(const uint8_t* p) {
    return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 | static_cast<uint32_t>(p[2]) << 16 |
           static_cast<uint32_t>(p[3]) << 24;
}

Status nonblocking(int fd) {
    int flags = ::fcntl(fd, F_GETFL);
    if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) return verbs_error("fcntl(O_NONBLOCK)");
    return ok_status();
}

std::string address_of(const sockaddr* sa) {
    char buf[INET6_ADDRSTRLEN] = "?";
    if (sa && sa->sa_family == AF_INET)
        ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(sa)->sin_addr, buf, sizeof buf);
    else if (sa && sa->sa_family == AF_INET6)
        ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr, buf, sizeof buf);
    return buf;
}

uint16_t port_of(const sockaddr* sa) {
    if (sa && sa->sa_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(sa)->sin_port);
    if (sa && sa->sa_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6*>(sa)->sin6_port);
    return 0;
}

}  // namespace

std::array<uint8_t, kHelloSize> encode_hello(const Params& p) {
    std::array<uint8_t, kHelloSize> out{'P', 'F', 'S', 'R'};
    put16(out.data() + 4, 1);
    put16(out.data() + 6, p.depth);
    for (int i = 0; i < 4; ++i) out[8 + i] = static_cast<uint8_t>(p.msg_size >> (8 * i));
    return out;
}

std::optional<Params> decode_hello(const void* data, size_t len) {
    if (!data || len < kHelloSize) return std::nullopt;
    const auto* p = static_cast<const uint8_t*>(data);
    if (std::memcmp(p, "PFSR", 4) != 0 || get16(p + 4) != 1) return std::nullopt;
    Params out{get16(p + 6), get32(p + 8)};
    if (out.depth < 2 || out.depth > kMaxDepth || out.msg_size < kMinMsgSize || out.msg_size > kMaxMsgSize)
        return std::nullopt;
    return out;
}

// An RDMA READ or WRITE under way: what it moves must stay alive until its
// completion, and `done` learns how it went.
struct RdmaChannel::Op {
    std::shared_ptr<void> keep;
    std::function<void(Status)> done;
};

RdmaChannel::RdmaChannel(asio::any_io_executor ex, CmId id, EventChannel events, const Params& ours,
                         const Params& peers)
    : ex_(ex),
      id_(std::move(id)),
      events_(std::move(events)),
      ours_(ours),
      peers_(peers),
      established_signal_(ex),
      arrival_(ex),
      peer_credits_(peers.depth),
      max_send_wr_(peers.depth + kBulkOpsMax) {
    const sockaddr* remote = rdma_get_peer_addr(id_.get());
    peer_address_ = address_of(remote);
    peer_ = peer_address_ + ":" + std::to_string(port_of(remote)) + " (rdma)";
}

Result<std::shared_ptr<RdmaChannel>> RdmaChannel::create(asio::any_io_executor ex, CmId id, EventChannel events,
                                                         const Params& ours, const Params& peers) {
    std::shared_ptr<RdmaChannel> ch(new RdmaChannel(ex, std::move(id), std::move(events), ours, peers));
    if (auto st = ch->setup(); !st) return st.error();
    return ch;
}

Status RdmaChannel::setup() {
    ibv_context* dev = id_->verbs;
    if (!dev) return Error{-ENODEV, "RDMA connection without a device"};
    auto pd = protection_domain(dev);
    if (!pd) return pd.error();
    pd_ = std::move(*pd);
    comp_.reset(ibv_create_comp_channel(dev));
    if (!comp_) return verbs_error("ibv_create_comp_channel");
    if (auto st = nonblocking(comp_->fd); !st) return st;
    if (auto st = nonblocking(events_->fd); !st) return st;
    const int cqe = static_cast<int>(ours_.depth + max_send_wr_);
    cq_.reset(ibv_create_cq(dev, cqe, nullptr, comp_.get(), 0));
    if (!cq_) return verbs_error("ibv_create_cq");
    if (ibv_req_notify_cq(cq_.get(), 0)) return verbs_error("ibv_req_notify_cq");

    ibv_qp_init_attr attr{};
    attr.send_cq = cq_.get();
    attr.recv_cq = cq_.get();
    attr.qp_type = IBV_QPT_RC;
    attr.cap.max_send_wr = max_send_wr_;
    attr.cap.max_recv_wr = ours_.depth;
    attr.cap.max_send_sge = 1;
    attr.cap.max_recv_sge = 1;
    if (rdma_create_qp(id_.get(), pd_.get(), &attr)) return verbs_error("rdma_create_qp");

    auto recv = LocalBuffer::create(pd_, size_t{ours_.depth} * ours_.msg_size);
    if (!recv) return recv.error();
    recv_ring_ = std::move(*recv);
    for (uint32_t slot = 0; slot < ours_.depth; ++slot)
        if (auto st = post_recv(slot); !st) return st;
    auto send = LocalBuffer::create(pd_, size_t{peers_.depth} * peers_.msg_size);
    if (!send) return send.error();
    send_ring_ = std::move(*send);
    for (uint32_t slot = peers_.depth; slot-- > 0;) free_send_.push_back(slot);
    staging_ = std::make_unique<StagingPool>(pd_);
    comp_fd_ = std::make_unique<asio::posix::stream_descriptor>(ex_, comp_->fd);
    event_fd_ = std::make_unique<asio::posix::stream_descriptor>(ex_, events_->fd);
    return ok_status();
}

RdmaChannel::~RdmaChannel() {
    // The descriptors belong to verbs: asio lets go of them unclosed. The
    // queue pair goes before the buffers its work requests point into.
    if (comp_fd_) comp_fd_->release();
    if (event_fd_) event_fd_->release();
    if (id_ && id_->qp) rdma_destroy_qp(id_.get());
    ops_.clear();
    cq_.reset();
    comp_.reset();
    recv_ring_.reset();
    send_ring_.reset();
    staging_.reset();
    id_.reset();
    events_.reset();
}

void RdmaChannel::start() {
    auto self = std::static_pointer_cast<RdmaChannel>(shared_from_this());
    asio::co_spawn(ex_, [self] { return self->poll_completions(); }, asio::detached);
    asio::co_spawn(ex_, [self] { return self->poll_events(); }, asio::detached);
}

awaitable<Status> RdmaChannel::established(std::chrono::milliseconds timeout) {
    if (!established_) {
        boost::system::error_code ec;
        established_signal_.expires_after(timeout);
        co_await established_signal_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
    if (!established_) {
        close();
        co_return Error{-ETIMEDOUT, "RDMA connection to " + peer_ + " not established in time"};
    }
    co_return *established_;
}

// ---- events ----

awaitable<void> RdmaChannel::poll_events() {
    auto self = shared_from_this();
    while (open_) {
        boost::system::error_code ec;
        co_await event_fd_->async_wait(asio::posix::stream_descriptor::wait_read,
                                       asio::redirect_error(asio::use_awaitable, ec));
        if (ec || !open_) break;
        rdma_cm_event* ev = nullptr;
        while (open_ && rdma_get_cm_event(events_.get(), &ev) == 0) {
            const rdma_cm_event_type type = ev->event;
            const int status = ev->status;
            std::optional<Params> hello;
            if (type == RDMA_CM_EVENT_ESTABLISHED)
                hello = decode_hello(ev->param.conn.private_data, ev->param.conn.private_data_len);
            rdma_ack_cm_event(ev);
            if (type == RDMA_CM_EVENT_ESTABLISHED && client_ &&
                (!hello || hello->depth > ours_.depth || hello->msg_size > ours_.msg_size)) {
                established_ = Error{-EPROTO, "RDMA server answered with parameters we did not offer"};
                fail("bad server parameters");
            } else if (type == RDMA_CM_EVENT_ESTABLISHED) {
                if (client_) {
                    peers_ = *hello;
                    peer_credits_ = hello->depth;
                }
                counters().connections++;
                established_ = ok_status();
            } else if (type == RDMA_CM_EVENT_DISCONNECTED || type == RDMA_CM_EVENT_DEVICE_REMOVAL) {
                fail(type == RDMA_CM_EVENT_DISCONNECTED ? "peer disconnected" : "RDMA device removed");
            } else if (type == RDMA_CM_EVENT_REJECTED || type == RDMA_CM_EVENT_CONNECT_ERROR ||
                       type == RDMA_CM_EVENT_UNREACHABLE) {
                established_ = Error{-ECONNREFUSED, std::string("RDMA connection: ") + rdma_event_str(type) +
                                                        " (" + std::to_string(status) + ")"};
                fail(rdma_event_str(type));
            }
            established_signal_.cancel();
        }
    }
}

// ---- completions ----

awaitable<void> RdmaChannel::poll_completions() {
    auto self = shared_from_this();
    while (open_) {
        boost::system::error_code ec;
        co_await comp_fd_->async_wait(asio::posix::stream_descriptor::wait_read,
                                      asio::redirect_error(asio::use_awaitable, ec));
        if (ec || !open_) break;
        ibv_cq* cq = nullptr;
        void* ctx = nullptr;
        if (ibv_get_cq_event(comp_.get(), &cq, &ctx) == 0) ibv_ack_cq_events(cq, 1);
        // Ask for the next event before draining, or one could be missed.
        if (ibv_req_notify_cq(cq_.get(), 0)) {
            fail("ibv_req_notify_cq failed");
            break;
        }
        ibv_wc wc[16];
        int n;
        while (open_ && (n = ibv_poll_cq(cq_.get(), 16, wc)) > 0)
            for (int i = 0; i < n && open_; ++i) on_completion(wc[i]);
        if (n < 0) fail("ibv_poll_cq failed");
    }
}

void RdmaChannel::on_completion(const ibv_wc& wc) {
    const uint64_t kind = wr_kind(wc.wr_id), index = wr_index(wc.wr_id);
    if (kind == kBulk) {
        auto it = ops_.find(index);
        if (it == ops_.end()) return;
        auto op = std::move(it->second);
        ops_.erase(it);
        --send_wrs_;
        Status st = wc.status == IBV_WC_SUCCESS
                        ? ok_status()
                        : Status(Error{-EIO, std::string("RDMA bulk transfer failed: ") + ibv_wc_status_str(wc.status)});
        op->done(st);
        if (wc.status != IBV_WC_SUCCESS) fail(std::string("RDMA bulk transfer failed: ") + ibv_wc_status_str(wc.status));
        else pump();
        return;
    }
    if (wc.status != IBV_WC_SUCCESS) {
        // Flushes after a failure, or the first error itself.
        fail(std::string(kind == kRecv ? "receive" : "send") + " failed: " + ibv_wc_status_str(wc.status));
        return;
    }
    if (kind == kSend) {
        free_send_.push_back(static_cast<uint32_t>(index));
        --send_wrs_;
        pump();
    } else {
        on_recv(static_cast<uint32_t>(index), wc.byte_len);
    }
}

Status RdmaChannel::post_recv(uint32_t slot) {
    ibv_sge sge{reinterpret_cast<uint64_t>(recv_ring_->bytes().data() + size_t{slot} * ours_.msg_size),
                ours_.msg_size, recv_ring_->lkey()};
    ibv_recv_wr wr{};
    ibv_recv_wr* bad = nullptr;
    wr.wr_id = wr_id(kRecv, slot);
    wr.sg_list = &sge;
    wr.num_sge = 1;
    if (int rc = ibv_post_recv(id_->qp, &wr, &bad)) return verbs_error("ibv_post_recv", rc);
    return ok_status();
}

void RdmaChannel::repost(uint32_t slot) {
    if (!open_) return;
    if (auto st = post_recv(slot); !st) {
        fail(st.error().message);
        return;
    }
    ++to_grant_;
    pump();
}

void RdmaChannel::on_recv(uint32_t slot, uint32_t len) {
    const uint8_t* msg = recv_ring_->bytes().data() + size_t{slot} * ours_.msg_size;
    if (len < kMsgHead) return fail("RDMA message shorter than its head");
    const uint16_t credits = get16(msg), flags = get16(msg + 2);
    counters().recvs++;
    counters().recv_bytes += len;
    peer_credits_ += credits;
    if (peer_credits_ > peers_.depth) return fail("peer grants more credits than it has receive buffers");
    if (flags & ~kMore) return fail("RDMA message with unknown flags");
    if (len == kMsgHead) {
        if (flags & kMore) return fail("empty RDMA message in the middle of a frame");
        repost(slot);  // credits alone
        return;
    }
    arrived_.push_back(Arrived{slot, kMsgHead, len, (flags & kMore) != 0});
    wake_reader();
    pump();
}

void RdmaChannel::wake_reader() { arrival_.cancel(); }

void RdmaChannel::fail(const std::string& why) {
    if (!open_) return;
    log::debug("RDMA connection failed", {{"peer", peer_}, {"reason", why}});
    failure_ = Error{-ECONNRESET, why};
    close();
}

void RdmaChannel::close() {
    if (!open_) return;
    open_ = false;
    rdma_disconnect(id_.get());
    boost::system::error_code ec;
    if (comp_fd_) comp_fd_->cancel(ec);
    if (event_fd_) event_fd_->cancel(ec);
    arrival_.cancel();
    established_signal_.cancel();
    auto ops = std::move(ops_);
    ops_.clear();
    for (auto& [id, op] : ops) op->done(Error{-ECONNRESET, "connection closed"});
    outgoing_.clear();
    queued_bytes_ = 0;
}

void RdmaChannel::close_when_sent() {
    close_when_sent_ = true;
    if (outgoing_.empty()) close();
}

// ---- receiving frames ----

awaitable<Status> RdmaChannel::wait_arrival() {
    while (open_ && arrived_.empty()) {
        boost::system::error_code ec;
        arrival_.expires_at(std::chrono::steady_clock::time_point::max());
        co_await arrival_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
    if (arrived_.empty()) co_return failure_;
    co_return ok_status();
}

Result<bool> RdmaChannel::take(std::span<uint8_t> into, size_t& got, bool last) {
    while (got < into.size()) {
        if (frame_ended_) return Error{PFS_E_PROTO, "RDMA frame shorter than its header says"};
        if (arrived_.empty()) return false;
        Arrived& a = arrived_.front();
        const uint8_t* msg = recv_ring_->bytes().data() + size_t{a.slot} * ours_.msg_size;
        const size_t n = std::min<size_t>(into.size() - got, a.end - a.offset);
        std::memcpy(into.data() + got, msg + a.offset, n);
        got += n;
        a.offset += static_cast<uint32_t>(n);
        if (a.offset == a.end) consume_front();
    }
    if (!last || frame_ended_) return true;
    // All of it is here, but its last message said more would come: the
    // next one shows whether the frame really goes on (an error) or not.
    if (arrived_.empty()) return false;
    return Error{PFS_E_PROTO, "RDMA frame longer than its header says"};
}

void RdmaChannel::consume_front() {
    const Arrived a = arrived_.front();
    arrived_.pop_front();
    if (!a.more) frame_ended_ = true;
    repost(a.slot);
}

awaitable<Result<pfs_header>> RdmaChannel::read_header(uint32_t max_payload) {
    if (auto st = co_await wait_arrival(); !st) co_return st.error();
    Arrived& a = arrived_.front();
    if (a.end - a.offset < PFS_HEADER_SIZE) co_return Error{PFS_E_PROTO, "RDMA frame without a whole header"};
    const uint8_t* msg = recv_ring_->bytes().data() + size_t{a.slot} * ours_.msg_size;
    std::memcpy(raw_header_.data(), msg + a.offset, PFS_HEADER_SIZE);
    a.offset += PFS_HEADER_SIZE;
    frame_ended_ = false;
    if (a.offset == a.end) consume_front();
    pfs_header header{};
    int rc = pfs_header_decode(&header, raw_header_.data(), PFS_HEADER_SIZE);
    if (rc == 0 && header.payload_len > max_payload) rc = -EMSGSIZE;
    if (rc) {
        std::string why = rc == -EMSGSIZE ? "payload length " + std::to_string(header.payload_len) +
                                                " over the limit of " + std::to_string(max_payload)
                        : rc == -EPROTONOSUPPORT ? "unsupported protocol version"
                                                 : "malformed frame header";
        co_return Error{rc, why};
    }
    co_return header;
}

awaitable<Result<Frame>> RdmaChannel::read_payload(const pfs_header& header) {
    Frame frame;
    frame.header = header;
    frame.payload.resize(header.payload_len);
    auth::FrameTag tag{};
    const size_t tag_len = mac_ ? tag.size() : 0;
    // The payload and the tag, across as many messages as they take; the
    // reader waits for each (the peer sends them back to back).
    Bytes whole(frame.payload.size() + tag_len);
    size_t got = 0;
    for (;;) {
        auto done = take(whole, got, true);
        if (!done) co_return done.error();
        if (*done) break;
        if (auto st = co_await wait_arrival(); !st) co_return st.error();
    }
    std::memcpy(frame.payload.data(), whole.data(), frame.payload.size());
    if (mac_) {
        std::memcpy(tag.data(), whole.data() + frame.payload.size(), tag.size());
        if (!mac_->verify(raw_header_, {frame.payload}, tag))
            co_return Error{-EBADMSG, "frame MAC does not verify (" + std::string(pfs_msg_name(header.type)) + ")"};
    }
    const bool bulk = header.flags & PFS_FLAG_BULK;
    if (bulk && (header.flags & PFS_FLAG_REPLY)) {
        if (frame.payload.size() < kBulkReplyBlock) co_return Error{PFS_E_PROTO, "bulk reply without its count"};
        const uint32_t count = get32(frame.payload.data());
        frame.payload.erase(frame.payload.begin(), frame.payload.begin() + kBulkReplyBlock);
        auto it = expected_->find(header.request_id);
        if (it != expected_->end() && count > it->second.out_len)
            co_return Error{PFS_E_PROTO, "reply brings more data than asked for"};
        frame.data_len = count;
    } else if (bulk) {
        if (auto st = take_bulk(frame); !st) co_return st.error();
        const pfs_bulk& b = *frame.bulk;
        if (b.place != PFS_BULK_RDMA && (b.in_len || b.out_len))
            co_return Error{PFS_E_PROTO, "inline bulk data on an RDMA connection"};
    }
    co_return frame;
}

}  // namespace pfs::rdma

namespace pfs::rdma {

// ---- sending frames ----

void RdmaChannel::send(const pfs_header& header, Bytes head, Bytes body, SharedBytes data) {
    if (!open_ || close_when_sent_) return;
    enqueue(Outgoing{build_frame(header, head, body, data), 0, nullptr});
}

Bytes RdmaChannel::build_frame(const pfs_header& header, std::span<const uint8_t> head, std::span<const uint8_t> body,
                               std::span<const uint8_t> data) {
    pfs_header h = header;
    h.payload_len = static_cast<uint32_t>(head.size() + body.size() + data.size());
    Bytes frame(PFS_HEADER_SIZE);
    pfs_header_encode(&h, frame.data());
    frame.reserve(PFS_HEADER_SIZE + h.payload_len + PFS_FRAME_MAC_LEN);
    frame.insert(frame.end(), head.begin(), head.end());
    frame.insert(frame.end(), body.begin(), body.end());
    frame.insert(frame.end(), data.begin(), data.end());
    if (mac_) {
        auto tag = mac_->seal(std::span<const uint8_t>(frame).first(PFS_HEADER_SIZE),
                              {std::span<const uint8_t>(frame).subspan(PFS_HEADER_SIZE)});
        frame.insert(frame.end(), tag.begin(), tag.end());
    }
    return frame;
}

void RdmaChannel::enqueue(Outgoing out) {
    queued_bytes_ += out.frame.size();
    outgoing_.push_back(std::move(out));
    if (queued_bytes_ > kMaxQueuedBytes) {
        log::warn("dropping connection: peer does not read its replies", {{"peer", peer_}});
        fail("peer does not read");
        return;
    }
    pump();
}

void RdmaChannel::pump() {
    auto post_send = [this](uint32_t slot, uint32_t len) {
        ibv_sge sge{reinterpret_cast<uint64_t>(send_ring_->bytes().data() + size_t{slot} * peers_.msg_size), len,
                    send_ring_->lkey()};
        ibv_send_wr wr{};
        ibv_send_wr* bad = nullptr;
        wr.wr_id = wr_id(kSend, slot);
        wr.sg_list = &sge;
        wr.num_sge = 1;
        wr.opcode = IBV_WR_SEND;
        wr.send_flags = IBV_SEND_SIGNALED;
        if (int rc = ibv_post_send(id_->qp, &wr, &bad)) return Status(verbs_error("ibv_post_send", rc));
        ++send_wrs_;
        --peer_credits_;
        counters().sends++;
        counters().send_bytes += len;
        return ok_status();
    };
    // One message: its head (the credits we grant) and up to room bytes.
    auto message = [&](std::span<const uint8_t> bytes, bool more) {
        const uint32_t slot = free_send_.back();
        free_send_.pop_back();
        uint8_t* msg = send_ring_->bytes().data() + size_t{slot} * peers_.msg_size;
        const auto grant = static_cast<uint16_t>(std::min<uint32_t>(to_grant_, 0xffff));
        std::memset(msg, 0, kMsgHead);
        put16(msg, grant);
        put16(msg + 2, more ? kMore : 0);
        if (!bytes.empty()) std::memcpy(msg + kMsgHead, bytes.data(), bytes.size());
        auto st = post_send(slot, static_cast<uint32_t>(kMsgHead + bytes.size()));
        if (!st) {
            free_send_.push_back(slot);
            return st;
        }
        to_grant_ -= grant;
        return ok_status();
    };
    const size_t room = peers_.msg_size - kMsgHead;
    while (open_ && !outgoing_.empty()) {
        Outgoing& out = outgoing_.front();
        while (out.write && out.write->posted < out.write->pieces.size()) {
            if (send_wrs_ >= max_send_wr_) return;
            Write& w = *out.write;
            const Write::Piece& piece = w.pieces[w.posted];
            auto st = post_bulk(true, piece.local, w.lkey, piece.remote, piece.rkey, w.keep, [](Status) {});
            if (!st) return fail(st.error().message);
            ++w.posted;
        }
        // One credit stays for announcing ours (below), whatever else waits.
        if (peer_credits_ < 2 || free_send_.empty() || send_wrs_ >= max_send_wr_) break;
        const size_t n = std::min(room, out.frame.size() - out.pos);
        const bool more = out.pos + n < out.frame.size();
        if (auto st = message(std::span<const uint8_t>(out.frame).subspan(out.pos, n), more); !st)
            return fail(st.error().message);
        out.pos += n;
        if (!more) {
            queued_bytes_ -= out.frame.size();
            outgoing_.pop_front();
        }
    }
    if (open_ && to_grant_ >= std::max<uint32_t>(1, ours_.depth / 2) && peer_credits_ >= 1 && !free_send_.empty() &&
        send_wrs_ < max_send_wr_) {
        if (auto st = message({}, false); !st) return fail(st.error().message);
    }
    if (close_when_sent_ && outgoing_.empty()) close();
}

Status RdmaChannel::post_bulk(bool write, std::span<uint8_t> local, uint32_t lkey, uint64_t remote, uint32_t rkey,
                              std::shared_ptr<void> keep, std::function<void(Status)> done) {
    const uint64_t id = next_op_++;
    ibv_sge sge{reinterpret_cast<uint64_t>(local.data()), static_cast<uint32_t>(local.size()), lkey};
    ibv_send_wr wr{};
    ibv_send_wr* bad = nullptr;
    wr.wr_id = wr_id(kBulk, id);
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = write ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = remote;
    wr.wr.rdma.rkey = rkey;
    if (int rc = ibv_post_send(id_->qp, &wr, &bad)) return verbs_error(write ? "RDMA WRITE" : "RDMA READ", rc);
    ++send_wrs_;
    ops_[id] = std::make_unique<Op>(Op{std::move(keep), std::move(done)});
    auto& c = counters();
    (write ? c.writes : c.reads)++;
    (write ? c.write_bytes : c.read_bytes) += local.size();
    return ok_status();
}

// ---- bulk data ----

Result<BulkTicket> RdmaChannel::send_request(const pfs_header& header, Bytes head, Bytes body, const Bulk& bulk) {
    if (!open_) return failure_;
    // The request's memory, open to the peer until the ticket goes; the
    // domain outlives the registrations (the channel may go first).
    struct Lent {
        std::shared_ptr<ibv_pd> pd;
        RemoteRegion in, out;
        std::weak_ptr<std::unordered_map<uint64_t, Expected>> expected;
        uint64_t request_id = 0;
        ~Lent() {
            if (auto e = expected.lock()) e->erase(request_id);
        }
    };
    auto lent = std::make_shared<Lent>();
    lent->pd = pd_;
    pfs_bulk block{};
    block.place = PFS_BULK_RDMA;
    block.in_len = static_cast<uint32_t>(bulk.data.size());
    block.out_len = static_cast<uint32_t>(bulk.into.size());
    if (!bulk.data.empty()) {
        auto r = RemoteRegion::open(pd_.get(), bulk.data, false);
        if (!r) return r.error();
        lent->in = std::move(*r);
        block.nin = 1;
        block.in[0] = pfs_bulk_seg{lent->in.addr(), lent->in.rkey(), lent->in.length()};
    }
    if (!bulk.into.empty()) {
        auto r = RemoteRegion::open(pd_.get(), bulk.into, true);
        if (!r) return r.error();
        lent->out = std::move(*r);
        block.nout = 1;
        block.out[0] = pfs_bulk_seg{lent->out.addr(), lent->out.rkey(), lent->out.length()};
    }
    (*expected_)[header.request_id] = Expected{block.out_len};
    lent->expected = expected_;
    lent->request_id = header.request_id;
    pfs_header h = header;
    h.flags |= PFS_FLAG_BULK;
    Bytes prefix = encode_bulk(block);
    prefix.insert(prefix.end(), head.begin(), head.end());
    send(h, std::move(prefix), std::move(body));
    return BulkTicket(lent);
}

size_t RdmaChannel::bulk_to_fetch(const Frame& request) const {
    return request.bulk && request.bulk->place == PFS_BULK_RDMA ? request.bulk->in_len - request.data.size() : 0;
}

awaitable<Status> RdmaChannel::fetch_bulk(Frame& request) {
    const size_t n = bulk_to_fetch(request);
    if (n == 0) co_return ok_status();
    auto buf = staging_->take(n);
    if (!buf) co_return buf.error();
    // One RDMA READ per segment, into consecutive parts of the buffer;
    // every completion (or the channel's end: close() fails every
    // operation under way before it lets go of them) comes back here.
    struct Reads {
        size_t left = 0;
        Status outcome = ok_status();
        asio::steady_timer done;
    };
    auto reads = std::make_shared<Reads>(Reads{0, ok_status(), asio::steady_timer(ex_)});
    reads->done.expires_at(std::chrono::steady_clock::time_point::max());
    size_t at = 0;
    for (uint8_t i = 0; i < request.bulk->nin; ++i) {
        const pfs_bulk_seg& seg = request.bulk->in[i];
        auto st = post_bulk(false, (*buf)->bytes().subspan(at, seg.length), (*buf)->lkey(), seg.addr, seg.rkey, *buf,
                            [reads](Status s) {
                                if (!s && reads->outcome) reads->outcome = std::move(s);
                                if (--reads->left == 0) reads->done.cancel();
                            });
        if (!st) {
            fail(st.error().message);  // the posted ones end with the channel
            break;
        }
        ++reads->left;
        at += seg.length;
    }
    boost::system::error_code ec;
    if (reads->left) co_await reads->done.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    if (!open_ && reads->outcome) co_return Error{-ECONNRESET, "connection closed during RDMA READ"};
    if (!reads->outcome) co_return reads->outcome;
    request.data = SharedBytes(*buf, (*buf)->bytes().first(n));
    co_return ok_status();
}

void RdmaChannel::send_bulk_reply(const Frame& request, const pfs_header& header, Bytes status_and_body,
                                  SharedBytes data) {
    if (!open_ || close_when_sent_) return;
    const auto n = static_cast<uint32_t>(data.size());
    std::shared_ptr<Write> write;
    if (n) {
        if (!request.bulk || request.bulk->place != PFS_BULK_RDMA || n > request.bulk->out_len) {
            fail("reply data the request did not make room for");
            return;
        }
        // RDMA WRITE needs registered memory: the data goes to a staging
        // buffer first (counted; registering it would cost more).
        auto buf = staging_->take(n);
        if (!buf) {
            fail(buf.error().message);
            return;
        }
        std::memcpy((*buf)->bytes().data(), data.data(), n);
        counters().bounce_bytes += n;
        // The data fills the request's segments in order.
        write = std::make_shared<Write>();
        write->lkey = (*buf)->lkey();
        write->keep = *buf;
        size_t at = 0;
        for (uint8_t i = 0; i < request.bulk->nout && at < n; ++i) {
            const pfs_bulk_seg& seg = request.bulk->out[i];
            const size_t len = std::min<size_t>(seg.length, n - at);
            write->pieces.push_back(Write::Piece{(*buf)->bytes().subspan(at, len), seg.addr, seg.rkey});
            at += len;
        }
    }
    pfs_header h = header;
    h.flags |= PFS_FLAG_BULK;
    Bytes count{static_cast<uint8_t>(n), static_cast<uint8_t>(n >> 8), static_cast<uint8_t>(n >> 16),
                static_cast<uint8_t>(n >> 24)};
    // Queued behind its WRITE: the data is in place when the reply arrives.
    enqueue(Outgoing{build_frame(h, count, status_and_body, {}), 0, std::move(write)});
}

}  // namespace pfs::rdma
