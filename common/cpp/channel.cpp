#include "channel.hpp"

namespace pfs {

awaitable<Result<Frame>> Channel::read_frame(uint32_t max_payload) {
    auto header = co_await read_header(max_payload);
    if (!header) co_return header.error();
    co_return co_await read_payload(*header);
}

size_t Channel::bulk_to_fetch(const Frame& request) const {
    return request.bulk ? request.bulk->in_len - request.data.size() : 0;
}

awaitable<Status> Channel::fetch_bulk(Frame& request) {
    if (bulk_to_fetch(request) == 0) co_return ok_status();
    co_return Error{PFS_E_PROTO, std::string("request data that ") + transport() + " cannot fetch"};
}

Channel::Deadline::Deadline(std::shared_ptr<Channel> channel, std::chrono::milliseconds timeout)
    : timer_(std::make_shared<asio::steady_timer>(channel->executor(), timeout)),
      expired_(std::make_shared<bool>(false)) {
    timer_->async_wait([weak = std::weak_ptr<Channel>(channel), expired = expired_](boost::system::error_code ec) {
        if (ec) return;
        *expired = true;
        if (auto c = weak.lock()) c->close();
    });
}

Channel::Deadline::~Deadline() { timer_->cancel(); }

}  // namespace pfs
