// The TCP transport: one socket carrying PFS frames. Reads are driven by a
// single coroutine; writes from any number of coroutines are queued and
// written in order by one writer. All use is from the channel's executor
// (one thread), so nothing here locks.
//
// Both directions skip the event loop when they can, since a small request
// otherwise costs more in wake-ups than in work: a frame goes to the socket
// at once when nothing is queued before it (the writer coroutine takes over
// only what the socket would not take), and frames are read through a
// buffer, so one receive usually brings a whole request, or several.
//
// Bulk data travels inline (PFS_BULK_INLINE): after the body in the same
// frame. A reply's data is read from the socket straight into the buffer
// its request named.
#pragma once

#include <array>
#include <atomic>
#include <deque>
#include <memory>
#include <string>
#include <unordered_map>

#include "channel.hpp"

namespace pfs {

class TcpChannel final : public Channel {
public:
    explicit TcpChannel(tcp::socket socket);
    ~TcpChannel() override;

    TcpChannel(const TcpChannel&) = delete;
    TcpChannel& operator=(const TcpChannel&) = delete;

    const char* transport() const override { return "tcp"; }
    void set_frame_mac(std::unique_ptr<auth::FrameMac> mac, bool cover_data) override {
        mac_ = std::move(mac);
        mac_covers_data_ = cover_data;
    }
    bool frame_macs() const override { return mac_ != nullptr; }

    awaitable<Result<pfs_header>> read_header(uint32_t max_payload = PFS_MAX_PAYLOAD) override;
    awaitable<Result<Frame>> read_payload(const pfs_header& header) override;
    bool payload_received(const pfs_header& header) const override;

    // A write error closes the channel, and so does a peer that lets more
    // than kMaxQueuedBytes pile up unread.
    using Channel::send;
    void send(const pfs_header& header, Bytes head, Bytes body, SharedBytes data = {}) override;
    Result<BulkTicket> send_request(const pfs_header& header, Bytes head, Bytes body, const Bulk& bulk) override;
    void send_bulk_reply(const Frame& request, const pfs_header& header, Bytes status_and_body,
                         SharedBytes data) override;
    static constexpr size_t kMaxQueuedBytes = 64u << 20;

    void close() override;
    void close_when_sent() override;
    bool is_open() const override { return socket_.is_open(); }
    size_t queued_bytes() const override { return queued_bytes_; }
    const std::string& peer() const override { return peer_; }
    const std::string& peer_address() const override { return peer_address_; }
    asio::any_io_executor executor() override { return socket_.get_executor(); }

private:
    struct Outgoing;
    // Writes what the socket takes now without waiting; false when the
    // channel failed (and is closed).
    bool write_now(Outgoing& out);
    void write_failed(const boost::system::error_code& ec);
    awaitable<void> write_loop();
    // At least `want` unread bytes in the read buffer, receiving as needed.
    awaitable<Status> fill(size_t want);
    // Reads go to heap_ (allocated now if need be) or to small_ (heap_ freed).
    void use_buffer(bool large);
    // Exactly into.size() bytes, buffered ones first.
    awaitable<Status> read_exact(std::span<uint8_t> into);
    // SO_RCVLOWAT: the socket reads ready only once it holds this many bytes.
    void set_low_water(size_t bytes);
    // The frame's MAC, over its payload's pieces in order.
    awaitable<Status> check_tag(std::span<const uint8_t> a, std::span<const uint8_t> b = {},
                                std::span<const uint8_t> c = {});
    awaitable<Result<Frame>> read_bulk_reply(Frame frame);

    tcp::socket socket_;
    std::string peer_;
    std::string peer_address_;
    // A frame's bytes: the header and the start of its payload, then the
    // rest, then its MAC (if any); `sent` of them are on the socket already.
    struct Outgoing {
        Bytes head;
        Bytes body;
        SharedBytes data;
        auth::FrameTag tag{};
        size_t tag_len = 0;
        size_t sent = 0;
        size_t size() const { return head.size() + body.size() + data.size() + tag_len; }
        std::array<asio::const_buffer, 4> unsent() const;
    };
    std::unique_ptr<auth::FrameMac> mac_;
    bool mac_covers_data_ = false;
    std::array<uint8_t, PFS_HEADER_SIZE> raw_header_{};  // of the frame being read
    std::deque<Outgoing> queue_;
    std::atomic<size_t> queued_bytes_{0};  // read from other loops (the backlog check of a notice)
    bool writing_ = false;
    bool close_when_sent_ = false;
    // Received and not yet taken: buffer_[read_pos_, read_end_), where
    // buffer_ is small_ or, while the connection is busy, heap_.
    static constexpr size_t kReadBuffer = 16u << 10;
    static constexpr size_t kSmallRead = 512;  // a header, a MAC and most small requests
    static_assert(PFS_HEADER_SIZE <= kSmallRead && PFS_FRAME_MAC_LEN <= kSmallRead);
    std::array<uint8_t, kSmallRead> small_;
    std::unique_ptr<uint8_t[]> heap_;
    uint8_t* buffer_ = small_.data();
    size_t capacity_ = kSmallRead;
    size_t read_pos_ = 0;
    size_t read_end_ = 0;
    bool busy_ = false;  // the last read filled the buffer
    static constexpr size_t kMaxLowWater = 1u << 20;
    int low_water_ = 1;  // the socket's SO_RCVLOWAT (the kernel's default); 0: unknown
    // Where the bulk data of the replies to requests in flight goes, by
    // request id; an entry lives as long as its request's ticket. A ticket
    // dropped while its reply's data is being received (a timeout) closes
    // the channel: the socket then never writes into the caller's buffer
    // again, which may be gone the moment the ticket is.
    struct Sinks {
        std::unordered_map<uint64_t, std::span<uint8_t>> by_request;
        uint64_t filling = 0;  // request whose data is arriving now
    };
    std::shared_ptr<Sinks> sinks_ = std::make_shared<Sinks>();
};

std::string describe(const tcp::endpoint& ep);

}  // namespace pfs
