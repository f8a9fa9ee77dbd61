// The transport seam: one authenticated connection to a peer that carries
// whole PFS frames, whatever moves the bytes. RpcServer, RpcClient, the
// handshake and every service work on a Channel and cannot tell TCP
// (tcp_channel.hpp) from RDMA (rdma/rdma_channel.hpp).
//
// A request may carry bulk data beside its body (a write's data) and name
// where the bulk data of its reply goes (a read's buffer): Bulk. On a byte
// stream the bytes follow the body in the frame; over RDMA the requester
// registers that memory for the one request and the server moves the bytes
// with RDMA READ and WRITE. Either way the data is never copied into the
// body, and the reply's data arrives straight in the requester's buffer.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "asio.hpp"
#include "auth_crypto.hpp"
#include "wire.hpp"

namespace pfs {

// Keeps a request's bulk memory available to the transport (registered with
// the NIC, or named as the place its reply's data goes) until the request
// ends: dropping it, on the reply, a timeout or a lost connection, takes
// that memory back, so a late reply can never touch it.
using BulkTicket = std::shared_ptr<void>;

class Channel : public std::enable_shared_from_this<Channel> {
public:
    virtual ~Channel() = default;

    // "tcp" or "rdma": for logs and counters, never for decisions above the seam.
    virtual const char* transport() const = 0;

    // From now on every frame sent carries a MAC and every frame read must
    // carry a valid one (a frame that does not verify is an error: the
    // caller drops the connection). cover_data (PFS_AUTH_DATA_MAC): the
    // MACs cover the bulk data that ends a frame too; without it they
    // cover the header, bulk block and body (what RDMA puts in frames).
    virtual void set_frame_mac(std::unique_ptr<auth::FrameMac> mac, bool cover_data) = 0;
    virtual bool frame_macs() const = 0;

    // ---- receiving: one reader at a time ----

    // The next frame's header; a payload over max_payload is refused before
    // anything is allocated for it.
    virtual awaitable<Result<pfs_header>> read_header(uint32_t max_payload = PFS_MAX_PAYLOAD) = 0;
    // The payload of the frame whose header came last. A request's bulk
    // block goes into frame.bulk, and its data into frame.data when the
    // frame brought it (see fetch_bulk). A reply's bulk data goes where
    // the ticket of its request said; frame.data_len counts it.
    virtual awaitable<Result<Frame>> read_payload(const pfs_header& header) = 0;
    // Whether the rest of that frame (its MAC included) has been received
    // already: read_payload then never waits for the peer.
    virtual bool payload_received(const pfs_header& header) const {
        (void)header;
        return false;
    }
    awaitable<Result<Frame>> read_frame(uint32_t max_payload = PFS_MAX_PAYLOAD);

    // Server side: the bytes of a request's bulk data that did not come
    // with its frame and fetch_bulk must bring (to be charged first).
    virtual size_t bulk_to_fetch(const Frame& request) const;
    // Brings them into request.data (RDMA READ from the requester).
    virtual awaitable<Status> fetch_bulk(Frame& request);

    // ---- sending: frames leave whole and in order ----

    // A frame whose payload is head, body, then data (none of it copied).
    virtual void send(const pfs_header& header, Bytes head, Bytes body, SharedBytes data = {}) = 0;
    void send(const Frame& frame) { send(frame.header, {}, frame.payload); }
    // A request with bulk data (header.flags gets PFS_FLAG_BULK); the
    // ticket must live until the request ends. head goes in front of the
    // body (the groups block).
    virtual Result<BulkTicket> send_request(const pfs_header& header, Bytes head, Bytes body, const Bulk& bulk) = 0;
    // The reply to a request that carried bulk data: status_and_body, and
    // data where the request said (at most its bulk.out_len bytes).
    virtual void send_bulk_reply(const Frame& request, const pfs_header& header, Bytes status_and_body,
                                 SharedBytes data) = 0;

    virtual void close() = 0;
    // Closes once everything queued so far has left (an error reply
    // reaches the peer before the connection is dropped).
    virtual void close_when_sent() = 0;
    virtual bool is_open() const = 0;
    // Bytes queued and not yet sent: the peer's backlog. This,
    // executor(), peer() and peer_address() are safe from any loop;
    // everything else only from the channel's own (executor()).
    virtual size_t queued_bytes() const = 0;
    virtual const std::string& peer() const = 0;
    // The peer's IP address alone.
    virtual const std::string& peer_address() const = 0;
    virtual asio::any_io_executor executor() = 0;

    // Closes the channel if `what` has not finished (the Deadline is gone)
    // in time.
    class Deadline {
    public:
        Deadline(std::shared_ptr<Channel> channel, std::chrono::milliseconds timeout);
        ~Deadline();
        Deadline(const Deadline&) = delete;
        Deadline& operator=(const Deadline&) = delete;
        bool expired() const { return *expired_; }

    private:
        std::shared_ptr<asio::steady_timer> timer_;
        std::shared_ptr<bool> expired_;
    };
};

// The __u32 count of data bytes that opens a bulk reply's payload.
inline constexpr uint32_t kBulkReplyBlock = 4;

}  // namespace pfs
