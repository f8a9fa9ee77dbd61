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
    if (!read_) read_ = std::make_unique<uint8_t[]>(kReadBuffer);
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

awaitable<Result<Frame>> Connection::read_frame(uint32_t max_payload) {
    static_assert(PFS_HEADER_SIZE <= kReadBuffer);
    auto got = co_await fill(PFS_HEADER_SIZE);
    if (!got) co_return got.error();
    Frame frame;
    int rc = pfs_header_decode(&frame.header, read_.get() + read_pos_, PFS_HEADER_SIZE);
    if (rc == 0 && frame.header.payload_len > max_payload) rc = -EMSGSIZE;
    if (rc) {
        std::string why = rc == -EMSGSIZE ? "payload length " + std::to_string(frame.header.payload_len) +
                                                " over the limit of " + std::to_string(max_payload)
                        : rc == -EPROTONOSUPPORT ? "unsupported protocol version"
                                                 : "malformed frame header";
        co_return Error{rc, why};
    }
    read_pos_ += PFS_HEADER_SIZE;
    frame.payload.resize(frame.header.payload_len);
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
    co_return frame;
}

void Connection::send(const Frame& frame) { send(frame.header, {}, frame.payload); }

void Connection::send(const pfs_header& header, Bytes head, Bytes body, SharedBytes data) {
    if (!socket_.is_open() || close_when_sent_) return;
    Outgoing out{Bytes(PFS_HEADER_SIZE + head.size()), std::move(body), std::move(data)};
    pfs_header h = header;
    h.payload_len = static_cast<uint32_t>(head.size() + out.body.size() + out.data.size());
    pfs_header_encode(&h, out.head.data());
    if (!head.empty()) std::memcpy(out.head.data() + PFS_HEADER_SIZE, head.data(), head.size());
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

std::array<asio::const_buffer, 3> Connection::Outgoing::unsent() const {
    std::array<asio::const_buffer, 3> parts{asio::buffer(head), asio::buffer(body), asio::buffer(data.data(), data.size())};
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
