// Opening RDMA channels: a client connects to a server's address through
// rdma_cm, a server listens on the addresses of its RDMA interfaces. Both
// hand over channels whose connection is established; authentication
// (the same handshake as on TCP) is the caller's next step.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "channel.hpp"
#include "rdma/rdma_channel.hpp"

namespace pfs::rdma {

// What this process proposes (clients) or accepts at most (servers).
Params default_params();

// source: the local address (a rail's) the connection leaves from; empty:
// wherever routing says.
awaitable<Result<std::shared_ptr<Channel>>> connect(asio::any_io_executor ex, const std::string& host, uint16_t port,
                                                    std::chrono::milliseconds timeout,
                                                    const std::string& source = {});

class Listener {
public:
    // Listens on host:port (an address of an RDMA interface; "0.0.0.0":
    // every one).
    static Result<std::unique_ptr<Listener>> listen(asio::any_io_executor ex, const std::string& host, uint16_t port);
    ~Listener();

    // Every connection that gets established goes to on_channel, until stop().
    void start(std::function<void(std::shared_ptr<Channel>)> on_channel);
    void stop();
    uint16_t port() const;
    const std::string& address() const { return address_; }

    // Connections accepted whose establishment is still awaited: past this,
    // requests are rejected (each holds a queue pair and its buffers).
    static constexpr size_t kMaxPending = 64;

private:
    explicit Listener(asio::any_io_executor ex) : ex_(std::move(ex)) {}
    awaitable<void> run();
    void on_request(rdma_cm_id* id, const void* private_data, size_t len);

    asio::any_io_executor ex_;
    EventChannel events_;
    CmId id_;
    std::unique_ptr<asio::posix::stream_descriptor> fd_;
    std::string address_;
    std::function<void(std::shared_ptr<Channel>)> on_channel_;
    std::shared_ptr<size_t> pending_ = std::make_shared<size_t>(0);
    std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

// The IPv4 addresses of RDMA interfaces: those named (netdev names), or
// with "auto" every netdev that backs an RDMA device port. An interface
// that does not exist, or has no IPv4 address, is an error.
Result<std::vector<std::string>> interface_addresses(const std::vector<std::string>& names);

}  // namespace pfs::rdma
