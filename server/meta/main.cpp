// pfs-meta: the metadata server. It owns a namespace, kept in memory and
// made durable by a journal and snapshots under its state directory, and
// serves it over the wire; new files are striped over the storage targets
// it learns from pfs-mgmtd.
#include "log.hpp"
#include "meta_store.hpp"
#include "server_main.hpp"
#include "service.hpp"
#include "wire_convert.hpp"

using namespace pfs;

namespace {

// Everything the request handlers use; run_server_daemon keeps it until the
// loop has stopped and destroys it before the loop.
struct MetaServer {
    std::unique_ptr<Uring> ring;
    std::unique_ptr<client::Cluster> cluster;
    meta::TargetChooser chooser;
    std::unique_ptr<meta::Service> service;
    std::unique_ptr<meta::MetaStore> store;
    bool opening = false;
    bool stopping = false;
    bool* failed;  // set when the namespace cannot be opened or journaled

    explicit MetaServer(bool* failed_flag) : failed(failed_flag) {}

    Status install(RpcServer& server, NodeAgent& agent, DaemonContext& ctx) {
        auto r = Uring::create();
        if (!r) return r.error();
        ring = std::move(*r);
        ClientConfig as_server;
        as_server.role = auth::Role::server;
        // What pfs-meta asks storage servers (CHUNK_STAT, _TRUNCATE,
        // _FALLOCATE, _UNLINK_MANY) is small and carries no bulk data: TCP.
        // Over RDMA it would only hold queue pairs on both ends and tie
        // pfs-meta to the clients' rails (a rail going down broke its
        // connections to every storage server on it).
        as_server.transport = TransportChoice::tcp;
        cluster = std::make_unique<client::Cluster>(ctx.io.get_executor(), ctx.mgmtd, ctx.secret, as_server);
        cluster->on_refresh([this] { chooser.update(cluster->targets()); });
        double timeout_s = ctx.options.get<double>("session-timeout");
        if (!(timeout_s >= 0.1 && timeout_s <= 86400))
            return Error{-EINVAL, "--session-timeout must be between 0.1 and 86400 seconds"};
        auto session_timeout = std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));
        auto placement = meta::DirPlacement::parse(ctx.options.get<std::string>("dir-placement"));
        if (!placement) return placement.error();
        meta::ClientPolicySettings squash;
        squash.trusted = ctx.options.get<std::string>("trusted-clients");
        squash.root_squash = ctx.options.get<bool>("root-squash");
        squash.all_squash = ctx.options.get<std::string>("all-squash-clients");
        squash.anon_uid = ctx.options.get<uint32_t>("anon-uid");
        squash.anon_gid = ctx.options.get<uint32_t>("anon-gid");
        auto policy = meta::ClientPolicy::create(squash);
        if (!policy) return policy.error();
        service = std::make_unique<meta::Service>(ctx.io.get_executor(), server, *cluster, chooser, session_timeout,
                                                  meta::DirPlacement(*placement), std::move(*policy));
        service->install();
        ChunkStoreOptions inline_chunks;
        if (auto st = parse_direct_io(ctx.options.get<std::string>("inline-direct-io"), "inline-direct-io",
                                      inline_chunks);
            !st)
            return st;
        if (auto st = service->open_inline(ctx.state_dir / "inline", inline_chunks); !st) return st;
        // Not a coroutine itself: the lambda may be gone before the work ends.
        ctx.before_stop = [this] { return service->stop_cleanly(); };
        // The namespace is owned by this node's id: open it once that is known.
        agent.on_registered([this, &io = ctx.io, dir = ctx.state_dir](uint32_t node_id) {
            if (opening) return;
            opening = true;
            asio::co_spawn(io, start(io, dir, node_id), asio::detached);
        });
        return ok_status();
    }

    // The namespace in memory is ahead of the journal for good: serve
    // nothing more (not even reads: they would show what is not durable),
    // and exit, so that a restart recovers what is (Restart=on-failure).
    void fail_stop(asio::io_context& io, const Error& why) {
        if (stopping) return;
        stopping = true;
        log::error("the journal cannot be written: stopping; free the space (or fix the disk) and restart",
                   {{"error", why.message}});
        service->fail_stop(why);
        // The replies already decided still go out.
        auto timer = std::make_shared<asio::steady_timer>(io, std::chrono::milliseconds(500));
        timer->async_wait([this, &io, timer](boost::system::error_code) {
            *failed = true;
            io.stop();
        });
    }

    awaitable<void> start(asio::io_context& io, std::filesystem::path dir, uint32_t node_id) {
        auto opened = co_await meta::MetaStore::open(dir, node_id, meta::wall_clock_now(), *ring);
        if (!opened) {
            log::error(opened.error().message);
            *failed = true;
            io.stop();
            co_return;
        }
        store = std::move(*opened);
        asio::steady_timer timer(io);
        // Files need the storage map: serve once it is loaded.
        while (!co_await cluster->start()) {
            timer.expires_after(std::chrono::milliseconds(500));
            co_await timer.async_wait(asio::use_awaitable);
        }
        service->attach(store->ns(), [this, &io]() -> awaitable<Status> {
            auto st = co_await store->sync();
            if (!st) fail_stop(io, st.error());
            co_return st;
        }, [this] { return store->write_out(); });
        log::info("namespace ready", {{"node_id", node_id}, {"seq", store->last_seq()},
                                      {"inodes", store->ns().counts().inodes}});
        co_await service->purge_orphans();
        asio::co_spawn(io, service->expire_sessions(), asio::detached);
        asio::co_spawn(io, service->reap_chunks(std::chrono::seconds(5)), asio::detached);
        asio::co_spawn(io, service->settle_detached(std::chrono::seconds(1)), asio::detached);
        for (;;) {
            timer.expires_after(std::chrono::seconds(1));
            co_await timer.async_wait(asio::use_awaitable);
            if (store->wants_checkpoint()) {
                if (auto st = co_await store->checkpoint(); !st)
                    log::warn("checkpoint failed", {{"error", st.error().message}});
            }
        }
    }
};

void add_meta_options(Options& options) {
    options.add()("session-timeout", po::value<double>()->default_value(30),
                  "seconds a client may stay silent before its locks are released and its open files closed");
    options.add()("dir-placement", po::value<std::string>()->default_value("spread"),
                  "where new directories go: 'spread' over the ONLINE metadata servers with free space, or "
                  "'local' (with their parent)");
    options.add()("inline-direct-io", po::value<std::string>()->default_value("auto")->implicit_value("true"),
                  "the inline store's files (small files' data, kept here) with O_DIRECT, past the page cache, as "
                  "pfs-storage's direct-io: auto (where the state directory's file system supports it), true or false");
    const meta::ClientPolicySettings d;
    options.add()
        ("trusted-clients", po::value<std::string>()->default_value(d.trusted),
         "client networks (ADDR[/BITS], comma-separated) whose root is root; root elsewhere acts as anon-uid "
         "(root-squash)")
        ("root-squash", po::value<bool>()->default_value(d.root_squash),
         "map uid and gid 0 of clients outside trusted-clients to anon-uid/anon-gid")
        ("all-squash-clients", po::value<std::string>()->default_value(d.all_squash),
         "client networks every user of which acts as anon-uid/anon-gid")
        ("anon-uid", po::value<uint32_t>()->default_value(d.anon_uid), "the uid squashed users act as")
        ("anon-gid", po::value<uint32_t>()->default_value(d.anon_gid), "the gid squashed users act as");
}

}  // namespace

int main(int argc, char** argv) {
    const ServerDaemon spec{"pfs-meta", "PFS metadata server.", PFS_NODE_META, PFS_DEFAULT_META_PORT,
                            "/var/lib/pfs/meta", false, true, ServerDaemon::Loops::handlers_on_main,
                            add_meta_options};
    bool failed = false;
    auto install = [&failed](RpcServer& server, NodeAgent& agent, DaemonContext& ctx) -> Result<DaemonParts> {
        auto meta = std::make_shared<MetaServer>(&failed);
        if (auto st = meta->install(server, agent, ctx); !st) return st.error();
        return DaemonParts{std::move(meta)};
    };
    int rc = run_server_daemon(spec, argc, argv, install);
    return failed ? 1 : rc;
}
