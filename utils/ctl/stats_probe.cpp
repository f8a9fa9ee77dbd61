#include "stats_probe.hpp"

#include "gather.hpp"
#include "sync_client.hpp"
#include "wire.hpp"

namespace pfs::ctl {

struct StatsProbe::Impl {
    asio::io_context io;
    std::chrono::milliseconds timeout{5000};
    std::vector<std::shared_ptr<RpcClient>> clients;
};

namespace {

awaitable<Result<StatsSample>> ask(std::shared_ptr<RpcClient> client, std::chrono::milliseconds timeout) {
    auto body = co_await call_ok(*client, PFS_MSG_GET_STATS, Bytes{}, timeout);
    if (!body) co_return body.error();
    auto s = decode_stats(*body);
    if (!s) co_return Error{PFS_E_PROTO, "malformed GET_STATS reply from " + client->peer().str()};
    co_return std::move(*s);
}

}  // namespace

StatsProbe::StatsProbe(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

StatsProbe::~StatsProbe() {
    if (!impl_) return;
    for (auto& c : impl_->clients) c->close();
    impl_->io.restart();
    impl_->io.poll();  // let the readers see their closed sockets before the loop goes away
}

Result<std::unique_ptr<StatsProbe>> StatsProbe::open(const Options& options, std::vector<ServerAddress> servers) {
    auto settings = load_settings(options);
    if (!settings) return settings.error();
    auto impl = std::make_unique<Impl>();
    impl->timeout = settings->timeout;
    for (auto& s : servers)
        impl->clients.push_back(RpcClient::create(impl->io.get_executor(), Endpoint{std::move(s.host), s.port},
                                                  settings->secret, settings->client_config()));
    return std::make_unique<StatsProbe>(std::move(impl));
}

Result<ServerAddress> StatsProbe::mgmtd_address(const Options& options) {
    auto settings = load_settings(options);
    if (!settings) return settings.error();
    return ServerAddress{settings->mgmtd.host, settings->mgmtd.port};
}

std::vector<Result<StatsSample>> StatsProbe::sample() {
    std::vector<Task<StatsSample>> tasks;
    for (const auto& c : impl_->clients)
        tasks.push_back([c, timeout = impl_->timeout]() { return ask(c, timeout); });
    return run_sync(impl_->io, gather(std::move(tasks)));
}

}  // namespace pfs::ctl
