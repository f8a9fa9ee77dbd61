// The RDMA transport: one reliable-connected queue pair carrying PFS frames
// as SEND messages, and bulk data by RDMA READ and WRITE.
//
// Messages. Each side posts `depth` receive buffers of `msg_size` bytes
// (agreed in the connection's private data) and may send only into buffers
// the peer announced: every message carries the credits its sender grants
// (receive buffers reposted since its last message), and a side with no
// frame to send announces them in a message of its own once half its depth
// waits. One credit is always kept for such an announcement, so two busy
// sides can never lock each other out, and nothing a peer does makes a
// side post more than its depth. A frame (header, payload, MAC) larger than
// one message goes in several consecutive ones.
//
// Backpressure. A receive buffer is reposted only when the reader has taken
// the frame out of it, so a server that waits for memory before it reads a
// large frame (RpcServer's byte budget) stops granting credits, and the
// peer stops sending.
//
// Bulk data (PFS_BULK_RDMA). A requester registers its buffers for the
// request alone (RemoteRegion) and names them in the bulk block; the ticket
// it holds deregisters them when the request ends. A server reads a
// request's data with RDMA READ into a locally registered buffer before the
// request is dispatched, and writes a reply's data with RDMA WRITE right
// before it sends the reply (the queue pair keeps them in order). It never
// touches more than the lengths the block announced.
#pragma once

#include <array>
#include <atomic>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "channel.hpp"
#include "rdma/verbs.hpp"

namespace pfs::rdma {

// What both ends agree on when they connect (rdma_cm private data).
struct Params {
    uint16_t depth = 16;         // receive buffers posted
    uint32_t msg_size = 16384;   // bytes in one message, its 8-byte head included
};
inline constexpr uint32_t kMsgHead = 8;  // credits granted (u16), flags (u16), reserved (u32)
inline constexpr uint32_t kMinMsgSize = 4096;
inline constexpr uint32_t kMaxMsgSize = 1u << 20;
inline constexpr uint16_t kMaxDepth = 1024;

// The private data of a connection request and its acceptance: "PFSR",
// version 1, the sender's receive depth and message size (12 bytes, LE).
inline constexpr size_t kHelloSize = 12;
std::array<uint8_t, kHelloSize> encode_hello(const Params& p);
std::optional<Params> decode_hello(const void* data, size_t len);

class RdmaChannel final : public Channel {
public:
    // Takes an id whose connection is established (or about to be: server
    // side, `accepted` resolves once it is); its QP is made here.
    static Result<std::shared_ptr<RdmaChannel>> create(asio::any_io_executor ex, CmId id, EventChannel events,
                                                       const Params& ours, const Params& peers);
    ~RdmaChannel() override;

    const char* transport() const override { return "rdma"; }
    // Bulk data never travels in frames here: the MACs cover all a frame holds.
    void set_frame_mac(std::unique_ptr<auth::FrameMac> mac, bool) override { mac_ = std::move(mac); }
    bool frame_macs() const override { return mac_ != nullptr; }

    awaitable<Result<pfs_header>> read_header(uint32_t max_payload = PFS_MAX_PAYLOAD) override;
    awaitable<Result<Frame>> read_payload(const pfs_header& header) override;
    size_t bulk_to_fetch(const Frame& request) const override;
    awaitable<Status> fetch_bulk(Frame& request) override;

    using Channel::send;
    void send(const pfs_header& header, Bytes head, Bytes body, SharedBytes data = {}) override;
    Result<BulkTicket> send_request(const pfs_header& header, Bytes head, Bytes body, const Bulk& bulk) override;
    void send_bulk_reply(const Frame& request, const pfs_header& header, Bytes status_and_body,
                         SharedBytes data) override;

    void close() override;
    void close_when_sent() override;
    bool is_open() const override { return open_; }
    size_t queued_bytes() const override { return queued_bytes_; }
    const std::string& peer() const override { return peer_; }
    const std::string& peer_address() const override { return peer_address_; }
    asio::any_io_executor executor() override { return ex_; }

    // The pollers: CQ completions and connection events. Started by the
    // code that made the channel, once it is shared.
    void start();
    // Resolves when the connection is ESTABLISHED (or fails, or the
    // timeout passes: then the channel is closed).
    awaitable<Status> established(std::chrono::milliseconds timeout);
    // Client side: the server's parameters come with ESTABLISHED; until
    // then the channel assumes its own (the server's are never larger).
    void expect_server_params() { client_ = true; }
    rdma_cm_id* cm_id() { return id_.get(); }

    static constexpr size_t kMaxQueuedBytes = 64u << 20;

private:
    RdmaChannel(asio::any_io_executor ex, CmId id, EventChannel events, const Params& ours, const Params& peers);
    Status setup();

    struct Arrived {
        uint32_t slot;     // receive buffer
        uint32_t offset;   // first unread byte (after the message head)
        uint32_t end;
        bool more;         // the frame goes on in the next message
    };
    struct Op;  // an RDMA READ or WRITE under way

    awaitable<void> poll_completions();
    awaitable<void> poll_events();
    void on_completion(const ibv_wc& wc);
    void on_recv(uint32_t slot, uint32_t len);
    void repost(uint32_t slot);
    Status post_recv(uint32_t slot);
    // The RDMA WRITEs of a reply's data (one per segment of the request),
    // posted right before its frame.
    struct Write {
        struct Piece {
            std::span<uint8_t> local;
            uint64_t remote;
            uint32_t rkey;
        };
        std::vector<Piece> pieces;
        uint32_t lkey = 0;
        std::shared_ptr<void> keep;
        size_t posted = 0;
    };
    // A frame (header, payload, MAC) waiting to be sent in messages.
    struct Outgoing {
        Bytes frame;
        size_t pos = 0;  // bytes posted
        std::shared_ptr<Write> write;
    };
    Bytes build_frame(const pfs_header& header, std::span<const uint8_t> head, std::span<const uint8_t> body,
                      std::span<const uint8_t> data);
    void enqueue(Outgoing out);
    // Sends what the queue and the credits allow.
    void pump();
    // Posts an RDMA READ or WRITE; done runs with its outcome.
    Status post_bulk(bool write, std::span<uint8_t> local, uint32_t lkey, uint64_t remote, uint32_t rkey,
                     std::shared_ptr<void> keep, std::function<void(Status)> done);
    void fail(const std::string& why);
    void wake_reader();
    awaitable<Status> wait_arrival();
    // Copies frame bytes out of the arrived messages into into[got, end),
    // reposting those it empties: true when into is full (and, last, the
    // frame ended there), false when it needs messages yet to come; a frame
    // that ends early or runs on is a protocol error.
    Result<bool> take(std::span<uint8_t> into, size_t& got, bool last);
    void consume_front();

    asio::any_io_executor ex_;
    CmId id_;
    EventChannel events_;
    Params ours_, peers_;
    std::shared_ptr<ibv_pd> pd_;
    CompChannel comp_;
    CompletionQueue cq_;
    std::unique_ptr<LocalBuffer> recv_ring_, send_ring_;
    std::unique_ptr<StagingPool> staging_;
    std::unique_ptr<asio::posix::stream_descriptor> comp_fd_, event_fd_;
    std::string peer_, peer_address_;
    std::unique_ptr<auth::FrameMac> mac_;
    bool open_ = true;
    bool client_ = false;
    bool close_when_sent_ = false;
    std::optional<Status> established_;
    asio::steady_timer established_signal_;

    // Receiving.
    std::deque<Arrived> arrived_;
    asio::steady_timer arrival_;  // cancelled when a message arrives or the channel fails
    std::array<uint8_t, PFS_HEADER_SIZE> raw_header_{};
    bool frame_ended_ = true;  // the message that ended the frame being read is taken
    Error failure_{-ECONNRESET, "connection closed"};

    // Sending: frames cut into messages, waiting for a credit and a buffer.
    std::deque<Outgoing> outgoing_;  // frames not yet fully posted
    std::atomic<size_t> queued_bytes_{0};  // read from other loops (the backlog check of a notice)
    uint32_t peer_credits_;          // receive buffers the peer has posted for us
    uint32_t to_grant_ = 0;          // ours, reposted and not yet announced
    std::vector<uint32_t> free_send_;
    uint32_t send_wrs_ = 0;          // posted and not completed (SQ use)
    uint32_t max_send_wr_;

    // Bulk: operations under way, by id; replies expected, by request id.
    uint64_t next_op_ = 1;
    std::unordered_map<uint64_t, std::unique_ptr<Op>> ops_;
    struct Expected {
        uint32_t out_len;
    };
    std::shared_ptr<std::unordered_map<uint64_t, Expected>> expected_ =
        std::make_shared<std::unordered_map<uint64_t, Expected>>();
};

}  // namespace pfs::rdma
