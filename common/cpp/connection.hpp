// One TCP connection carrying PFS frames. Reads are driven by a single
// coroutine; writes from any number of coroutines are queued and written in
// order by one writer. All use is from the connection's executor (one
// thread), so nothing here locks.
//
// Both directions skip the event loop when they can, since a small request
// otherwise costs more in wake-ups than in work: a frame goes to the socket
// at once when nothing is queued before it (the writer coroutine takes over
// only what the socket would not take), and frames are read through a
// buffer, so one receive usually brings a whole request, or several.
#pragma once

#include <array>
#include <deque>
#include <memory>
#include <string>

#include "asio.hpp"
#include "auth_crypto.hpp"
#include "wire.hpp"

namespace pfs {

class Connection : public std::enable_shared_from_this<Connection> {
public:
    explicit Connection(tcp::socket socket);
    ~Connection();

    Connection(const Connection&) = delete;
    Connection& operator=(const Connection&) = delete;

    // From now on every frame sent carries a MAC and every frame read must
    // carry a valid one (a frame that does not verify is an error: the
    // caller drops the connection).
    void set_frame_mac(std::unique_ptr<auth::FrameMac> mac) { mac_ = std::move(mac); }
    bool frame_macs() const { return mac_ != nullptr; }

    // Reads one frame whose payload is at most max_payload bytes; a larger
    // length prefix is refused before anything is allocated.
    awaitable<Result<Frame>> read_frame(uint32_t max_payload = PFS_MAX_PAYLOAD);
    // read_frame in two steps, so that a server can bound what it holds
    // before it allocates the payload: the header, then its payload.
    awaitable<Result<pfs_header>> read_header(uint32_t max_payload = PFS_MAX_PAYLOAD);
    awaitable<Result<Frame>> read_payload(const pfs_header& header);

    // Queues a frame; a write error closes the connection, and so does a
    // peer that lets more than kMaxQueuedBytes pile up unread.
    void send(const Frame& frame);
    // The same for a frame whose payload is head, body, then data: all go to
    // the socket as they are (a large body, read data, is not copied).
    void send(const pfs_header& header, Bytes head, Bytes body, SharedBytes data = {});
    static constexpr size_t kMaxQueuedBytes = 64u << 20;

    void close();
    // Closes once everything queued so far has been written (an error reply
    // reaches the peer before the connection is dropped).
    void close_when_sent();
    bool is_open() const { return socket_.is_open(); }
    // Bytes queued and not yet written: the peer's backlog.
    size_t queued_bytes() const { return queued_bytes_; }
    const std::string& peer() const { return peer_; }
    // The peer's IP address alone.
    const std::string& peer_address() const { return peer_address_; }
    asio::any_io_executor executor() { return socket_.get_executor(); }

    // Closes the connection if `what` has not finished (disarm()) in time.
    class Deadline {
    public:
        Deadline(std::shared_ptr<Connection> conn, std::chrono::milliseconds timeout);
        ~Deadline();
        bool expired() const { return *expired_; }

    private:
        std::shared_ptr<asio::steady_timer> timer_;
        std::shared_ptr<bool> expired_;
    };

private:
    struct Outgoing;
    // Writes what the socket takes now without waiting; false when the
    // connection failed (and is closed).
    bool write_now(Outgoing& out);
    void write_failed(const boost::system::error_code& ec);
    awaitable<void> write_loop();
    // At least `want` unread bytes in the read buffer, receiving as needed.
    awaitable<Status> fill(size_t want);

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
    std::array<uint8_t, PFS_HEADER_SIZE> raw_header_{};  // of the frame being read
    std::deque<Outgoing> queue_;
    size_t queued_bytes_ = 0;
    bool writing_ = false;
    bool close_when_sent_ = false;
    // Received and not yet taken: read_[read_pos_, read_end_).
    static constexpr size_t kReadBuffer = 16u << 10;
    std::unique_ptr<uint8_t[]> read_;
    size_t read_pos_ = 0;
    size_t read_end_ = 0;
};

std::string describe(const tcp::endpoint& ep);

}  // namespace pfs
