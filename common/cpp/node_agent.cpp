#include "node_agent.hpp"

#include <sys/statvfs.h>

#include <nlohmann/json.hpp>

#include "log.hpp"
#include "state_file.hpp"

namespace pfs {
namespace {

constexpr const char* kNodeIdFile = "node.json";
constexpr const char* kTargetIdFile = ".pfs-target.json";

// Reads {"id": N} from an ID file; 0 when there is none yet.
Result<uint32_t> load_id(const std::filesystem::path& file) {
    auto loaded = state_file::load(file);
    if (loaded.status == state_file::LoadStatus::missing) return 0u;
    if (loaded.status != state_file::LoadStatus::ok) return Error{-EINVAL, loaded.error};
    const auto& v = loaded.value;
    if (!v.is_object() || !v.contains("id") || !v["id"].is_number_unsigned() || v["id"].get<uint64_t>() > UINT32_MAX)
        return Error{-EINVAL, "ID file " + file.string() + " has no valid \"id\"; refusing to start"};
    return v["id"].get<uint32_t>();
}

}  // namespace

Result<pfs_capacity> directory_capacity(const std::filesystem::path& dir) {
    struct statvfs s {};
    if (statvfs(dir.c_str(), &s) != 0) return Error{-errno, "statvfs " + dir.string() + ": " + errno_text(-errno)};
    pfs_capacity cap{};
    cap.bytes_total = static_cast<uint64_t>(s.f_blocks) * s.f_frsize;
    cap.bytes_free = static_cast<uint64_t>(s.f_bavail) * s.f_frsize;
    cap.inodes_total = s.f_files;
    cap.inodes_free = std::min<uint64_t>(s.f_favail, s.f_files);
    return cap;
}

namespace {

ClientConfig as_server() {
    ClientConfig config;
    config.role = auth::Role::server;
    return config;
}

}  // namespace

NodeAgent::NodeAgent(asio::io_context& io, Endpoint mgmtd, auth::Secret secret, NodeIdentity identity,
                     std::filesystem::path state_dir, std::vector<std::filesystem::path> targets,
                     std::chrono::milliseconds heartbeat_every)
    : io_(io),
      client_(RpcClient::create(io.get_executor(), std::move(mgmtd), std::move(secret), as_server())),
      identity_(std::move(identity)),
      state_dir_(std::move(state_dir)),
      heartbeat_every_(heartbeat_every) {
    for (auto& t : targets) targets_.push_back(AgentTarget{std::move(t)});
}

Status NodeAgent::load_ids() {
    auto node = load_id(state_dir_ / kNodeIdFile);
    if (!node) return node.error();
    node_id_ = *node;
    for (auto& t : targets_) {
        std::error_code ec;
        if (!std::filesystem::is_directory(t.path, ec))
            return Error{-ENOENT, "storage target directory " + t.path.string() + " does not exist"};
        auto id = load_id(t.path / kTargetIdFile);
        if (!id) return id.error();
        t.id = *id;
    }
    return ok_status();
}

void NodeAgent::start() { asio::co_spawn(io_, run(), asio::detached); }

void NodeAgent::report(const Status& st, const char* what) {
    // Log a problem once, not at every retry.
    std::string problem = st ? "" : std::string(what) + ": " + st.error().message;
    if (problem == last_problem_) return;
    if (problem.empty()) log::info("management daemon reachable again", {{"mgmtd", client_->peer().str()}});
    else log::warn(problem, {{"mgmtd", client_->peer().str()}});
    last_problem_ = problem;
}

awaitable<void> NodeAgent::run() {
    asio::steady_timer timer(io_);
    bool registered = false;
    for (;;) {
        if (!registered || client_->connects() != registered_on_connect_) {
            auto st = co_await register_all();
            report(st, "cannot register with pfs-mgmtd");
            registered = static_cast<bool>(st);
        }
        if (registered) {
            auto st = co_await heartbeat();
            report(st, "heartbeat to pfs-mgmtd failed");
            if (!st && (st.error().code == PFS_E_UNKNOWN_NODE || st.error().code == PFS_E_UNKNOWN_TARGET)) {
                registered = false;
                continue;
            }
        }
        timer.expires_after(heartbeat_every_);
        co_await timer.async_wait(asio::use_awaitable);
    }
}

awaitable<Status> NodeAgent::register_all() {
    pfs_register_node req{};
    req.node_id = node_id_;
    req.node_type = identity_.type;
    req.port = identity_.port;
    if (!set_field(req.alias, identity_.alias) || !set_field(req.host, identity_.host))
        co_return Error{-EINVAL, "alias or host name too long"};
    for (const auto& [addr, port] : identity_.rdma) {
        if (req.naddrs == PFS_NODE_ADDRS_MAX) break;
        pfs_node_addr& a = req.addrs[req.naddrs++];
        a.transport = PFS_TRANSPORT_RDMA;
        a.port = port;
        if (!set_field(a.addr, addr)) co_return Error{-EINVAL, "RDMA address too long: " + addr};
    }
    auto body = co_await call_ok(*client_, PFS_MSG_REGISTER_NODE, encode(pfs_x_register_node, req));
    if (!body) co_return body.error();
    auto reply = decode(*body, pfs_x_register_node_reply);
    if (!reply) co_return reply.error();
    uint64_t connect_epoch = client_->connects();
    if (reply->node_id != node_id_) {
        auto st = state_file::save(state_dir_ / kNodeIdFile, {{"id", reply->node_id}});
        if (!st) co_return st;
        node_id_ = reply->node_id;
    }
    for (auto& t : targets_) {
        pfs_register_target treq{};
        treq.node_id = node_id_;
        treq.target_id = t.id;
        if (!set_field(treq.path, t.path.string())) co_return Error{-ENAMETOOLONG, "target path too long"};
        auto tbody = co_await call_ok(*client_, PFS_MSG_REGISTER_TARGET, encode(pfs_x_register_target, treq));
        if (!tbody) co_return tbody.error();
        auto treply = decode(*tbody, pfs_x_register_target_reply);
        if (!treply) co_return treply.error();
        if (treply->target_id != t.id) {
            auto st = state_file::save(t.path / kTargetIdFile, {{"id", treply->target_id}});
            if (!st) co_return st;
            t.id = treply->target_id;
        }
        t.pool_id = treply->pool_id;
    }
    registered_on_connect_ = connect_epoch;
    log::info("registered with pfs-mgmtd", {{"node_id", node_id_}, {"targets", targets_.size()}});
    for (auto& fn : on_registered_) fn(node_id_);
    co_return ok_status();
}

Result<Bytes> NodeAgent::heartbeat_payload() const {
    std::vector<pfs_target_capacity> caps;
    if (identity_.type == PFS_NODE_META) {
        auto cap = directory_capacity(state_dir_);
        if (cap) caps.push_back({0, *cap});
    }
    for (const auto& t : targets_) {
        // A target we cannot stat is left out; mgmtd keeps its last report.
        auto cap = directory_capacity(t.path);
        if (cap) caps.push_back({t.id, *cap});
        else log::warn("cannot read target capacity", {{"target_id", t.id}, {"error", cap.error().message}});
    }
    pfs_heartbeat hb{node_id_, static_cast<uint32_t>(caps.size())};
    return encode_payload([&](pfs_xdr* x) {
        if (pfs_x_heartbeat(x, &hb)) return;
        for (auto& c : caps)
            if (pfs_x_target_capacity(x, &c)) return;
    });
}

awaitable<Status> NodeAgent::heartbeat() {
    auto body = co_await call_ok(*client_, PFS_MSG_HEARTBEAT, heartbeat_payload());
    if (!body) co_return body.error();
    co_return ok_status();
}

}  // namespace pfs
