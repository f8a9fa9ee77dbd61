// pfs-meta's request handlers: the namespace over the wire. A mutation is
// applied to the namespace, made durable (journal), and only then answered;
// chunk files of freed files are deleted on the storage servers afterwards.
#pragma once

#include <functional>
#include <memory>

#include "cluster.hpp"
#include "namespace.hpp"
#include "rpc_server.hpp"
#include "striped_io.hpp"
#include "target_chooser.hpp"

namespace pfs::meta {

class Service {
public:
    // Waits until every op applied so far is durable.
    using Durable = std::function<awaitable<Status>()>;

    Service(asio::any_io_executor ex, RpcServer& server, client::Cluster& cluster, TargetChooser& chooser);

    // Handlers answer -EAGAIN until the namespace is attached (after the
    // node is registered and its store recovered).
    void attach(Namespace& ns, Durable durable);
    void install();
    // Frees the files a crash left unlinked but not yet removed.
    awaitable<void> purge_orphans();

private:
    using Method = awaitable<Reply> (Service::*)(Request&);

    awaitable<Reply> on_lookup(Request& req);
    awaitable<Reply> on_getattr(Request& req);
    awaitable<Reply> on_create(Request& req);
    awaitable<Reply> on_mkdir(Request& req);
    awaitable<Reply> on_symlink(Request& req);
    awaitable<Reply> on_readlink(Request& req);
    awaitable<Reply> on_link(Request& req);
    awaitable<Reply> on_unlink(Request& req);
    awaitable<Reply> on_rmdir(Request& req);
    awaitable<Reply> on_rename(Request& req);
    awaitable<Reply> on_setattr(Request& req);
    awaitable<Reply> on_readdir(Request& req);
    awaitable<Reply> on_open(Request& req);
    awaitable<Reply> on_close(Request& req);
    awaitable<Reply> on_getxattr(Request& req);
    awaitable<Reply> on_setxattr(Request& req);
    awaitable<Reply> on_listxattr(Request& req);
    awaitable<Reply> on_removexattr(Request& req);
    awaitable<Reply> on_statfs(Request& req);
    awaitable<Reply> on_get_pattern(Request& req);
    awaitable<Reply> on_set_pattern(Request& req);

    // Durable, then the reply; freed chunks go after the reply is settled.
    awaitable<Reply> finish(Result<Reply> reply, std::optional<FreedFile> freed = {});
    awaitable<Reply> attr_reply(Result<Attr> attr);
    void delete_chunks(FreedFile freed);

    asio::any_io_executor ex_;
    RpcServer& server_;
    client::Cluster& cluster_;
    client::StripedIo files_;
    TargetChooser& chooser_;
    Namespace* ns_ = nullptr;
    Durable durable_;
};

}  // namespace pfs::meta
