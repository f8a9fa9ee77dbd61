#include "mgmt_client.hpp"

#include "exit_status.hpp"
#include "sync_client.hpp"

namespace pfs::ctl {

using std::chrono::milliseconds;

struct MgmtClient::Impl {
    asio::io_context io;
    std::shared_ptr<RpcClient> rpc;
    std::string address;
    milliseconds timeout{5000};
};

namespace {

template <class M>
Result<std::vector<M>> decode_list(const Bytes& body, int (*xfer)(pfs_xdr*, M*), uint32_t min_size,
                                   const std::string& from) {
    std::vector<M> items;
    auto st = decode_payload(body, [&](pfs_xdr* x) { xfer_list(x, items, xfer, min_size); });
    if (!st) return unreachable("malformed list reply from pfs-mgmtd at " + from);
    return items;
}

std::string strip_prefix(std::string text, const std::string& prefix) {
    if (text.starts_with(prefix)) text.erase(0, prefix.size());
    return text;
}

}  // namespace

Result<ClientSettings> load_settings(const Options& options) {
    client::SettingsProblem problem;
    auto settings = client::load_client_settings(options, &problem);
    if (settings) return settings;
    const std::string& msg = settings.error().message;
    return problem == client::SettingsProblem::secret ? unreachable(msg) : usage_error(msg);
}

Error mgmtd_no_answer(const Error& e, const std::string& at, milliseconds timeout, bool was_connected) {
    std::string detail = strip_prefix(strip_prefix(e.message, "cannot connect to " + at + ": "), at + ": ");
    if (e.code == PFS_E_AUTH) {
        if (detail.find("wrong shared secret") != std::string::npos) detail = "wrong shared secret?";
        return unreachable("authentication with pfs-mgmtd at " + at + " failed: " + detail);
    }
    if (e.code == -ETIMEDOUT && was_connected)
        return unreachable("pfs-mgmtd at " + at + " did not answer within " + std::to_string(timeout.count()) +
                           " ms");
    return unreachable("cannot reach pfs-mgmtd at " + at + ": " + detail);
}

MgmtClient::MgmtClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

MgmtClient::~MgmtClient() {
    if (!impl_) return;
    impl_->rpc->close();
    impl_->io.restart();
    impl_->io.poll();  // let the reader see the closed socket before the loop goes away
}

const std::string& MgmtClient::address() const { return impl_->address; }

void MgmtClient::add_options(Options& options) {
    client::add_client_options(options);
    options.add()
        ("transport-stats", po::bool_switch(),
         "print what this run moved over RDMA and how, per rail too (JSON, on stderr) when it ends");
}

Result<std::unique_ptr<MgmtClient>> MgmtClient::open(const Options& options) {
    auto settings = load_settings(options);
    if (!settings) return settings.error();
    auto impl = std::make_unique<Impl>();
    impl->address = settings->mgmtd.str();
    impl->timeout = settings->timeout;
    impl->rpc = RpcClient::create(impl->io.get_executor(), settings->mgmtd, settings->secret,
                                  settings->client_config());
    return std::make_unique<MgmtClient>(std::move(impl));
}

Result<Bytes> MgmtClient::call(uint16_t type, Result<Bytes> payload) {
    if (!payload) return usage_error("cannot encode " + std::string(pfs_msg_name(type)) + ": " + payload.error().message);
    bool was_connected = impl_->rpc->connected();
    auto out = run_sync(impl_->io, impl_->rpc->call(type, std::move(*payload), impl_->timeout));
    if (!out)
        return mgmtd_no_answer(out.error(), impl_->address, impl_->timeout,
                               was_connected || impl_->rpc->connected());
    Reply& reply = out.value();
    if (reply.status != PFS_OK) return refused(reply_error(reply).message);
    return std::move(reply.body);
}

Result<std::vector<pfs_node_info>> MgmtClient::nodes(uint16_t node_type) {
    auto body = call(PFS_MSG_GET_NODES, encode(pfs_x_get_nodes, pfs_get_nodes{node_type}));
    if (!body) return body.error();
    return decode_list(*body, pfs_x_node_info, PFS_NODE_INFO_MIN_SIZE, impl_->address);
}

Result<std::vector<pfs_target_info>> MgmtClient::targets() {
    auto body = call(PFS_MSG_GET_TARGETS, Bytes{});
    if (!body) return body.error();
    return decode_list(*body, pfs_x_target_info, PFS_TARGET_INFO_MIN_SIZE, impl_->address);
}

Result<std::vector<pfs_pool_info>> MgmtClient::pools() {
    auto body = call(PFS_MSG_GET_POOLS, Bytes{});
    if (!body) return body.error();
    return decode_list(*body, pfs_x_pool_info, PFS_POOL_INFO_MIN_SIZE, impl_->address);
}

Result<pfs_create_pool> MgmtClient::create_pool(uint32_t pool_id, const std::string& name) {
    pfs_create_pool req{};
    req.pool_id = pool_id;
    if (!set_field(req.name, name))
        return usage_error("pool name '" + name + "' is too long (at most " + std::to_string(PFS_POOL_NAME_MAX - 1) +
                           " characters)");
    auto body = call(PFS_MSG_CREATE_POOL, encode(pfs_x_create_pool, req));
    if (!body) return body.error();
    auto created = decode(*body, pfs_x_create_pool);
    if (!created) return unreachable("malformed CREATE_POOL reply from pfs-mgmtd at " + impl_->address);
    return *created;
}

Status MgmtClient::assign_pool(uint32_t target_id, uint32_t pool_id) {
    auto body = call(PFS_MSG_ASSIGN_POOL, encode(pfs_x_assign_pool, pfs_assign_pool{target_id, pool_id}));
    if (!body) return body.error();
    return ok_status();
}

Status MgmtClient::set_target_state(uint32_t target_id, uint8_t consistency) {
    auto body = call(PFS_MSG_SET_TARGET_STATE, encode(pfs_x_set_target_state, pfs_set_target_state{target_id, consistency}));
    if (!body) return body.error();
    return ok_status();
}

}  // namespace pfs::ctl
