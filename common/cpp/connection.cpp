#include "connection.hpp"

#include <array>
#include <cstring>

#include "log.hpp"

namespace pfs {

std::string describe(const tcp::endpoint& ep) {
    auto addr = ep.address();
    std::string host = addr.is_v6() ? "[" + addr.to_string() + "]" : addr.to_string();
    return host + ":" + std::to_string(ep.port());
}

Connection::Connection(tcp::socket socket) : socket_(std::move(socket)) {
    boost::system::error_code ec;
    auto ep = socket_.remote_endpoint(ec);
    peer_ = ec ? "?" : describe(ep);
    peer_address_ = ec ? "" : ep.address().to_string();
    socket_.set_option(tcp::no_delay(true), ec);
    // Synchronous writes (write_now) must never block the event loop.
    socket_.non_blocking(true, ec);
}

Connection::~Connection() { close(); }

void Connection::close() {
    if (!socket_.is_open()) return;
    boost::system::error_code ec;
    socket_.shutdown(tcp::socket::shutdown_both, ec);
    socket_.close(ec);
}

awaitable<Status> Connection::fill(size_t want) {
    if (read_end_ - read_pos_ >= want) co_return ok_status();
    if (read_pos_ == read_end_) {
        read_pos_ = read_end_ = 0;
        if (!read_) read_ = std::make_unique<uint8_t[]>(kReadBuffer);
        // Nothing buffered and nothing to read: wait without a buffer, so
        // that an idle connection (thousands of them) holds none.
        boost::system::error_code ec;
        size_t n = socket_.read_some(asio::buffer(read_.get(), kReadBuffer), ec);
        if (ec == asio::error::would_block || ec == asio::error::try_again) {
            read_.reset();
            co_await socket_.async_wait(tcp::socket::wait_read, asio::redirect_error(asio::use_awaitable, ec));
            if (ec) co_return Error{-ECONNRESET, ec.message()};
            read_ = std::make_unique<uint8_t[]>(kReadBuffer);
        } else if (ec) {
            co_return Error{-ECONNRESET, ec == asio::error::eof ? "connection closed by peer" : ec.message()};
        } else {
            read_end_ = n;
        }
    }
    if (read_end_ - read_pos_ >= want) co_return ok_status();
    // Only ever less than a header is left here: move it to the front.
    std::memmove(read_.get(), read_.get() + read_pos_, read_end_ - read_pos_);
    read_end_ -= read_pos_;
    read_pos_ = 0;
    while (read_end_ < want) {
        boost::system::error_code ec;
        size_t n = co_await socket_.async_read_some(asio::buffer(read_.get() + read_end_, kReadBuffer - read_end_),
                                                    asio::redirect_error(asio::use_awaitable, ec));
        if (ec) co_return Error{-ECONNRESET, ec == asio::error::eof ? "connection closed by peer" : ec.message()};
        read_end_ += n;
    }
    co_return ok_status();
}

awaitable<Result<pfs_header>> Connection::read_header(uint32_t max_payload) {
    static_assert(PFS_HEADER_SIZE <= kReadBuffer);
    auto got = co_await fill(PFS_HEADER_SIZE);
    if (!got) co_return got.error();
    pfs_header header{};
    int rc = pfs_header_decode(&header, read_.get() + read_pos_, PFS_HEADER_SIZE);
    if (rc == 0 && header.payload_len > max_payload) rc = -EMSGSIZE;
    if (rc) {
        std::string why = rc == -EMSGSIZE ? "payload length " + std::to_string(header.payload_len) +
                                                " over the limit of " + std::to_string(max_payload)
                        : rc == -EPROTONOSUPPORT ? "unsupported protocol version"
                                                 : "malformed frame header";
        co_return Error{rc, why};
    }
    std::memcpy(raw_header_.data(), read_.get() + read_pos_, PFS_HEADER_SIZE);
    read_pos_ += PFS_HEADER_SIZE;
    if (read_pos_ == read_end_) read_pos_ = read_end_ = 0;
    co_return header;
}

awaitable<Result<Frame>> Connection::read_payload(const pfs_header& header) {
    Frame frame;
    frame.header = header;
    frame.payload.resize(header.payload_len);
    const size_t buffered = std::min<size_t>(frame.payload.size(), read_end_ - read_pos_);
    std::memcpy(frame.payload.data(), read_.get() + read_pos_, buffered);
    read_pos_ += buffered;
    if (read_pos_ == read_end_) read_pos_ = read_end_ = 0;
    if (buffered < frame.payload.size()) {
        // The rest of a large payload goes straight into the frame.
        boost::system::error_code ec;
        co_await asio::async_read(socket_, asio::buffer(frame.payload.data() + buffered, frame.payload.size() - buffered),
                                  asio::redirect_error(asio::use_awaitable, ec));
        if (ec) co_return Error{-ECONNRESET, "truncated frame: " + ec.message()};
    }
    if (mac_) {
        auto tail = co_await fill(PFS_FRAME_MAC_LEN);
        if (!tail) co_return tail.error();
        auth::FrameTag tag;
        std::memcpy(tag.data(), read_.get() + read_pos_, tag.size());
        read_pos_ += tag.size();
        if (read_pos_ == read_end_) read_pos_ = read_end_ = 0;
        if (!mac_->verify(raw_header_, frame.payload, tag))
            co_return Error{-EBADMSG, "frame MAC does not verify (" + std::string(pfs_msg_name(header.type)) + ")"};
    }
    co_return frame;
}

awaitable<Result<Frame>> Connection::read_frame(uint32_t max_payload) {
    auto header = co_await read_header(max_payload);
    if (!header) co_return header.error();
    co_return co_await read_payload(*header);
}

void Connection::send(const Frame& frame) { send(frame.header, {}, frame.payload); }

void Connection::send(const pfs_header& header, Bytes head, Bytes body, SharedBytes data) {
    if (!socket_.is_open() || close_when_sent_) return;
    Outgoing out{Bytes(PFS_HEADER_SIZE + head.size()), std::move(body), std::move(data)};
    pfs_header h = header;
    h.payload_len = static_cast<uint32_t>(head.size() + out.body.size() + out.data.size());
    pfs_header_encode(&h, out.head.data());
    if (!head.empty()) std::memcpy(out.head.data() + PFS_HEADER_SIZE, head.data(), head.size());
    if (mac_) {
        out.tag = mac_->seal(std::span<const uint8_t>(out.head).first(PFS_HEADER_SIZE),
                             {std::span<const uint8_t>(out.head).subspan(PFS_HEADER_SIZE), out.body, out.data.span()});
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
    asio::co_spawn(socket_.get_executor(), [self = shared_from_this()] { return self->write_loop(); },
                   asio::detached);
}

std::array<asio::const_buffer, 4> Connection::Outgoing::unsent() const {
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

bool Connection::write_now(Outgoing& out) {
    boost::system::error_code ec;
    out.sent += socket_.write_some(out.unsent(), ec);
    if (!ec || ec == asio::error::would_block || ec == asio::error::try_again) return true;
    write_failed(ec);
    return false;
}

void Connection::write_failed(const boost::system::error_code& ec) {
    log::debug("write failed, closing connection", {{"peer", peer_}, {"error", ec.message()}});
    close();
}

awaitable<void> Connection::write_loop() {
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

void Connection::close_when_sent() {
    close_when_sent_ = true;
    if (!writing_) close();
}

Connection::Deadline::Deadline(std::shared_ptr<Connection> conn, std::chrono::milliseconds timeout)
    : timer_(std::make_shared<asio::steady_timer>(conn->executor(), timeout)),
      expired_(std::make_shared<bool>(false)) {
    timer_->async_wait([weak = std::weak_ptr<Connection>(conn), expired = expired_](boost::system::error_code ec) {
        if (ec) return;
        *expired = true;
        if (auto c = weak.lock()) c->close();
    });
}

Connection::Deadline::~Deadline() { timer_->cancel(); }

}  // namespace pfs
