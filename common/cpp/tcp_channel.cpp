#include "tcp_channel.hpp"

#include <array>
#include <cstdlib>
#include <cstring>

#include "log.hpp"

namespace pfs {

namespace {

// A bulk frame's payload: not zeroed first (the socket fills all of it, and
// a write's megabyte costs a pass less), and ending on a page boundary, so
// that the data, which ends the payload, starts on one whenever its length
// is whole pages: an O_DIRECT chunk file takes it from there, uncopied.
std::pair<std::shared_ptr<uint8_t[]>, std::span<uint8_t>> bulk_payload_buffer(size_t len) {
    constexpr size_t kPage = 4096;
    const size_t room = (len + kPage - 1) / kPage * kPage;
    auto* raw = static_cast<uint8_t*>(std::aligned_alloc(kPage, room ? room : kPage));
    if (!raw) return {nullptr, {}};
    std::shared_ptr<uint8_t[]> owner(raw, [](uint8_t* p) { std::free(p); });
    return {std::move(owner), std::span<uint8_t>(raw + (room - len), len)};
}

}  // namespace

std::string describe(const tcp::endpoint& ep) {
    auto addr = ep.address();
    std::string host = addr.is_v6() ? "[" + addr.to_string() + "]" : addr.to_string();
    return host + ":" + std::to_string(ep.port());
}

TcpChannel::TcpChannel(tcp::socket socket) : socket_(std::move(socket)) {
    boost::system::error_code ec;
    auto ep = socket_.remote_endpoint(ec);
    peer_ = ec ? "?" : describe(ep);
    peer_address_ = ec ? "" : ep.address().to_string();
    socket_.set_option(tcp::no_delay(true), ec);
    // Synchronous writes (write_now) must never block the event loop.
    socket_.non_blocking(true, ec);
}

TcpChannel::~TcpChannel() { close(); }

void TcpChannel::close() {
    if (!socket_.is_open()) return;
    boost::system::error_code ec;
    socket_.shutdown(tcp::socket::shutdown_both, ec);
    socket_.close(ec);
}

void TcpChannel::use_buffer(bool large) {
    if (!large) {
        heap_.reset();
        buffer_ = small_.data();
        capacity_ = small_.size();
        return;
    }
    if (!heap_) heap_ = std::make_unique_for_overwrite<uint8_t[]>(kReadBuffer);
    buffer_ = heap_.get();
    capacity_ = kReadBuffer;
}

awaitable<Status> TcpChannel::fill(size_t want) {
    if (read_end_ - read_pos_ >= want) co_return ok_status();
    if (read_pos_ == read_end_) {
        read_pos_ = read_end_ = 0;
        // A connection whose last read filled its buffer is busy and reads
        // in large gulps; any other reads through the small buffer, so that
        // an idle connection (thousands of them) holds no heap buffer.
        use_buffer(busy_);
        // Read at once, before any wait: a peer's close is seen here, before
        // the caller of the reply just read goes on.
        boost::system::error_code ec;
        size_t n = socket_.read_some(asio::buffer(buffer_, capacity_), ec);
        if (ec == asio::error::would_block || ec == asio::error::try_again) {
            use_buffer(false);
            co_await socket_.async_wait(tcp::socket::wait_read, asio::redirect_error(asio::use_awaitable, ec));
            if (ec) co_return Error{-ECONNRESET, ec.message()};
        } else if (ec) {
            co_return Error{-ECONNRESET, ec == asio::error::eof ? "connection closed by peer" : ec.message()};
        } else {
            read_end_ = n;
            busy_ = n == capacity_;
        }
    } else if (read_pos_) {
        // Only ever less than a header is left here: move it to the front.
        std::memmove(buffer_, buffer_ + read_pos_, read_end_ - read_pos_);
        read_end_ -= read_pos_;
        read_pos_ = 0;
    }
    while (read_end_ < want) {
        boost::system::error_code ec;
        size_t n = co_await socket_.async_read_some(asio::buffer(buffer_ + read_end_, capacity_ - read_end_),
                                                    asio::redirect_error(asio::use_awaitable, ec));
        if (ec) co_return Error{-ECONNRESET, ec == asio::error::eof ? "connection closed by peer" : ec.message()};
        read_end_ += n;
        busy_ = read_end_ == capacity_;
    }
    co_return ok_status();
}

awaitable<Result<pfs_header>> TcpChannel::read_header(uint32_t max_payload) {
    auto got = co_await fill(PFS_HEADER_SIZE);
    if (!got) co_return got.error();
    pfs_header header{};
    int rc = pfs_header_decode(&header, buffer_ + read_pos_, PFS_HEADER_SIZE);
    if (rc == 0 && header.payload_len > max_payload) rc = -EMSGSIZE;
    if (rc) {
        std::string why = rc == -EMSGSIZE ? "payload length " + std::to_string(header.payload_len) +
                                                " over the limit of " + std::to_string(max_payload)
                        : rc == -EPROTONOSUPPORT ? "unsupported protocol version"
                                                 : "malformed frame header";
        co_return Error{rc, why};
    }
    std::memcpy(raw_header_.data(), buffer_ + read_pos_, PFS_HEADER_SIZE);
    read_pos_ += PFS_HEADER_SIZE;
    if (read_pos_ == read_end_) read_pos_ = read_end_ = 0;
    co_return header;
}

awaitable<Status> TcpChannel::read_exact(std::span<uint8_t> into) {
    const size_t buffered = std::min(into.size(), read_end_ - read_pos_);
    if (buffered) std::memcpy(into.data(), buffer_ + read_pos_, buffered);
    read_pos_ += buffered;
    if (read_pos_ == read_end_) read_pos_ = read_end_ = 0;
    // The rest of a large payload goes straight to its place.
    auto rest = into.subspan(buffered);
    Status st = ok_status();
    while (!rest.empty()) {
        boost::system::error_code ec;
        const size_t n = socket_.read_some(asio::buffer(rest.data(), rest.size()), ec);
        if (!ec) {
            rest = rest.subspan(n);
            continue;
        }
        if (ec != asio::error::would_block && ec != asio::error::try_again) {
            st = Error{-ECONNRESET, "truncated frame: " + ec.message()};
            break;
        }
        // Woken once the socket holds the rest (or as much of it as its
        // buffer can), not for every segment: a megabyte arrived in ~18
        // wake-ups of the loop otherwise.
        set_low_water(rest.size());
        co_await socket_.async_wait(tcp::socket::wait_read, asio::redirect_error(asio::use_awaitable, ec));
        if (ec) {
            st = Error{-ECONNRESET, "truncated frame: " + ec.message()};
            break;
        }
    }
    set_low_water(1);
    co_return st;
}

void TcpChannel::set_low_water(size_t bytes) {
    // The kernel caps it at half the largest receive buffer and wakes
    // early under memory pressure: never more than the frame still needs.
    const int want = static_cast<int>(std::min<size_t>(bytes, kMaxLowWater));
    if (want == low_water_) return;
    boost::system::error_code ec;
    socket_.set_option(asio::socket_base::receive_low_watermark(want), ec);
    low_water_ = ec ? 0 : want;  // unknown after a failure: set again next time
}

awaitable<Status> TcpChannel::check_tag(std::span<const uint8_t> a, std::span<const uint8_t> b,
                                        std::span<const uint8_t> c) {
    if (!mac_) co_return ok_status();
    auto tail = co_await fill(PFS_FRAME_MAC_LEN);
    if (!tail) co_return tail.error();
    auth::FrameTag tag;
    std::memcpy(tag.data(), buffer_ + read_pos_, tag.size());
    read_pos_ += tag.size();
    if (read_pos_ == read_end_) read_pos_ = read_end_ = 0;
    if (!mac_->verify(raw_header_, {a, b, c}, tag)) co_return Error{-EBADMSG, "frame MAC does not verify"};
    co_return ok_status();
}

bool TcpChannel::payload_received(const pfs_header& header) const {
    const size_t tail = mac_ ? PFS_FRAME_MAC_LEN : 0;
    return read_end_ - read_pos_ >= size_t{header.payload_len} + tail;
}

awaitable<Result<Frame>> TcpChannel::read_payload(const pfs_header& header) {
    Frame frame;
    frame.header = header;
    const bool bulk = header.flags & PFS_FLAG_BULK;
    if (bulk && (header.flags & PFS_FLAG_REPLY)) co_return co_await read_bulk_reply(std::move(frame));
    if (!bulk) {
        Bytes whole(header.payload_len);
        if (auto st = co_await read_exact(whole); !st) co_return st.error();
        if (auto st = co_await check_tag(whole); !st)
            co_return Error{st.error().code, st.error().message + " (" + pfs_msg_name(header.type) + ")"};
        frame.payload = std::move(whole);
        co_return frame;
    }
    auto [whole, all] = bulk_payload_buffer(header.payload_len);
    if (!whole) co_return Error{-ENOMEM, "no memory for a frame's payload"};
    if (auto st = co_await read_exact(all); !st) co_return st.error();
    // A request with its data inline: the block, the body, then the data
    // (which the MAC leaves out unless it covers data).
    auto block = peek_bulk(all);
    if (!block) co_return block.error();
    if (block->bulk.place != PFS_BULK_INLINE)
        co_return Error{PFS_E_PROTO, "a bulk descriptor for RDMA on a TCP connection"};
    if (block->bulk.in_len > all.size() - block->size) co_return Error{PFS_E_PROTO, "bulk data longer than the frame"};
    const size_t body_end = all.size() - block->bulk.in_len;
    if (auto st = co_await check_tag(mac_covers_data_ ? all : all.first(body_end)); !st)
        co_return Error{st.error().code, st.error().message + " (" + pfs_msg_name(header.type) + ")"};
    frame.bulk = block->bulk;
    frame.payload.assign(all.begin() + static_cast<ptrdiff_t>(block->size),
                         all.begin() + static_cast<ptrdiff_t>(body_end));
    if (block->bulk.in_len) frame.data = SharedBytes(whole, all.subspan(body_end));
    co_return frame;
}

// A bulk reply: the count of data bytes, the status and the body, then the
// data, which goes straight into the buffer its request named.
awaitable<Result<Frame>> TcpChannel::read_bulk_reply(Frame frame) {
    const pfs_header& header = frame.header;
    std::array<uint8_t, kBulkReplyBlock> count{};
    if (header.payload_len < count.size()) co_return Error{PFS_E_PROTO, "bulk reply without its count"};
    if (auto st = co_await read_exact(count); !st) co_return st.error();
    const uint32_t data_len = static_cast<uint32_t>(count[0]) | static_cast<uint32_t>(count[1]) << 8 |
                              static_cast<uint32_t>(count[2]) << 16 | static_cast<uint32_t>(count[3]) << 24;
    if (data_len > header.payload_len - count.size()) co_return Error{PFS_E_PROTO, "bulk reply count past its frame"};
    frame.payload.resize(header.payload_len - count.size() - data_len);
    if (auto st = co_await read_exact(frame.payload); !st) co_return st.error();
    std::span<uint8_t> into;
    Bytes late;  // the data of a reply whose caller gave up: read and dropped
    auto& sinks = sinks_->by_request;
    if (auto it = sinks.find(header.request_id); it != sinks.end()) {
        if (data_len > it->second.size()) co_return Error{PFS_E_PROTO, "reply brings more data than asked for"};
        into = it->second.first(data_len);
        sinks_->filling = header.request_id;
    } else {
        late.resize(data_len);
        into = late;
    }
    auto st = co_await read_exact(into);
    sinks_->filling = 0;
    if (!st) co_return st.error();
    if (auto st = co_await check_tag(count, frame.payload, mac_covers_data_ ? into : std::span<uint8_t>{}); !st)
        co_return Error{st.error().code, st.error().message + " (" + pfs_msg_name(header.type) + ")"};
    frame.data_len = data_len;
    co_return frame;
}

Result<BulkTicket> TcpChannel::send_request(const pfs_header& header, Bytes head, Bytes body, const Bulk& bulk) {
    pfs_header h = header;
    h.flags |= PFS_FLAG_BULK;
    pfs_bulk block{};
    block.place = PFS_BULK_INLINE;
    block.in_len = static_cast<uint32_t>(bulk.data.size());
    block.out_len = static_cast<uint32_t>(bulk.into.size());
    Bytes prefix = encode_bulk(block);
    prefix.insert(prefix.end(), head.begin(), head.end());
    // The request's data is copied: a call may end (timeout) while its
    // frame still waits in the queue, and the caller's buffer with it.
    SharedBytes data = bulk.data.empty() ? SharedBytes{} : SharedBytes(Bytes(bulk.data.begin(), bulk.data.end()));
    sinks_->by_request[header.request_id] = bulk.into;
    auto self = std::static_pointer_cast<TcpChannel>(shared_from_this());
    auto ticket = std::shared_ptr<void>(nullptr, [weak = std::weak_ptr(self), id = header.request_id](void*) {
        auto channel = weak.lock();
        if (!channel) return;
        channel->sinks_->by_request.erase(id);
        if (channel->sinks_->filling == id) {
            log::debug("request ended while its reply's data arrived: closing", {{"peer", channel->peer_}});
            channel->close();
        }
    });
    send(h, std::move(prefix), std::move(body), std::move(data));
    return ticket;
}

void TcpChannel::send_bulk_reply(const Frame& request, const pfs_header& header, Bytes status_and_body,
                                 SharedBytes data) {
    pfs_header h = header;
    h.flags |= PFS_FLAG_BULK;
    const auto n = static_cast<uint32_t>(data.size());
    (void)request;  // inline: the data follows the body, whatever the request named
    Bytes count{static_cast<uint8_t>(n), static_cast<uint8_t>(n >> 8), static_cast<uint8_t>(n >> 16),
                static_cast<uint8_t>(n >> 24)};
    send(h, std::move(count), std::move(status_and_body), std::move(data));
}

void TcpChannel::send(const pfs_header& header, Bytes head, Bytes body, SharedBytes data) {
    if (!socket_.is_open() || close_when_sent_) return;
    Outgoing out{Bytes(PFS_HEADER_SIZE + head.size()), std::move(body), std::move(data)};
    pfs_header h = header;
    h.payload_len = static_cast<uint32_t>(head.size() + out.body.size() + out.data.size());
    pfs_header_encode(&h, out.head.data());
    if (!head.empty()) std::memcpy(out.head.data() + PFS_HEADER_SIZE, head.data(), head.size());
    if (mac_) {
        // Only bulk frames end with bulk data; the MAC covers it on request.
        const bool covered = mac_covers_data_ || !(h.flags & PFS_FLAG_BULK);
        out.tag = mac_->seal(std::span<const uint8_t>(out.head).first(PFS_HEADER_SIZE),
                             {std::span<const uint8_t>(out.head).subspan(PFS_HEADER_SIZE), out.body,
                              covered ? out.data.span() : std::span<const uint8_t>{}});
        out.tag_len = out.tag.size();
    }
    if (!writing_ && (!write_now(out) || out.sent == out.size())) return;
    queued_bytes_ += out.size() - out.sent;
    queue_.push_back(std::move(out));
    if (queued_bytes_ > kMaxQueuedBytes) {
        log::warn("dropping connection: peer does not read its replies", {{"peer", peer_}});
        close();
        queue_.clear();
        queued_bytes_ = 0;
        return;
    }
    if (writing_) return;
    writing_ = true;
    asio::co_spawn(socket_.get_executor(),
                   [self = std::static_pointer_cast<TcpChannel>(shared_from_this())] { return self->write_loop(); },
                   asio::detached);
}

std::array<asio::const_buffer, 4> TcpChannel::Outgoing::unsent() const {
    std::array<asio::const_buffer, 4> parts{asio::buffer(head), asio::buffer(body), asio::buffer(data.data(), data.size()),
                                            asio::buffer(tag.data(), tag_len)};
    size_t skip = sent;
    for (auto& part : parts) {
        const size_t n = std::min(skip, part.size());
        part += n;
        skip -= n;
    }
    return parts;
}

bool TcpChannel::write_now(Outgoing& out) {
    boost::system::error_code ec;
    out.sent += socket_.write_some(out.unsent(), ec);
    if (!ec || ec == asio::error::would_block || ec == asio::error::try_again) return true;
    write_failed(ec);
    return false;
}

void TcpChannel::write_failed(const boost::system::error_code& ec) {
    log::debug("write failed, closing connection", {{"peer", peer_}, {"error", ec.message()}});
    close();
}

awaitable<void> TcpChannel::write_loop() {
    while (!queue_.empty() && socket_.is_open()) {
        Outgoing out = std::move(queue_.front());
        queue_.pop_front();
        queued_bytes_ -= out.size() - out.sent;
        boost::system::error_code ec;
        co_await asio::async_write(socket_, out.unsent(), asio::redirect_error(asio::use_awaitable, ec));
        if (ec) write_failed(ec);
    }
    queue_.clear();
    queued_bytes_ = 0;
    writing_ = false;
    if (close_when_sent_) close();
}

void TcpChannel::close_when_sent() {
    close_when_sent_ = true;
    if (!writing_) close();
}

}  // namespace pfs
