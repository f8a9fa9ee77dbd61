#include "service.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/stat.h>

#include <chrono>

#include "log.hpp"
#include "namespace_checks.hpp"
#include "service_helpers.hpp"
#include "wire_convert.hpp"

namespace pfs::meta {
namespace {

Result<Reply> ok_empty(const Status& st) {
    if (!st) return st.error();
    return Reply::ok();
}

// A CREATE or OPEN reply: the attributes, then the layout of a file.
Result<Reply> attr_and_layout(const Attr& attr, const Result<StripeLayout>& layout) {
    pfs_attr a = to_wire(attr);
    pfs_layout l = layout ? to_wire(*layout) : pfs_layout{};
    auto b = encode_payload([&](pfs_xdr* x) {
        pfs_x_attr(x, &a);
        if (layout) pfs_x_layout(x, &l);
    });
    if (!b) return b.error();
    return Reply::ok(std::move(*b));
}

}  // namespace

Service::Service(asio::any_io_executor ex, RpcServer& server, client::Cluster& cluster, TargetChooser& chooser,
                 std::chrono::milliseconds session_timeout, DirPlacement placement, ClientPolicy policy)
    : ex_(ex),
      server_(server),
      cluster_(cluster),
      files_(cluster),
      blocks_(ex, files_, [this](const pfs_entry_id& id) { return inline_.allocated(id); }),
      reaper_(ex, cluster),
      inline_(ex, files_),
      chooser_(chooser),
      sessions_(session_timeout),
      placement_(placement),
      policy_(std::move(policy)) {}

void Service::attach(Namespace& ns, Durable durable, WrittenOut written_out) {
    ns_ = &ns;
    blocks_.attach(ns);
    durable_ = std::move(durable);
    written_out_ = std::move(written_out);
    inline_.attach(ns, durable_);
    // Gone from every target: out of the durable set (journaled with the
    // next batch; were it lost, the chunks would only be deleted again).
    reaper_.on_reaped([this](std::vector<pfs_entry_id> ids) {
        for (size_t at = 0; at < ids.size(); at += kReapedMax) {
            std::vector<pfs_entry_id> part(ids.begin() + static_cast<ptrdiff_t>(at),
                                           ids.begin() + static_cast<ptrdiff_t>(std::min(ids.size(), at + kReapedMax)));
            if (auto st = ns_->reaped(std::move(part)); !st)
                log::warn("reaped files not recorded", {{"error", st.error().message}});
        }
    });
}

awaitable<void> Service::reap_chunks(std::chrono::milliseconds period) {
    asio::steady_timer timer(ex_);
    for (;;) {
        if (ns_ && !stopped_) reaper_.sweep(ns_->reaping(), kReapSweepMax);
        timer.expires_after(period);
        boost::system::error_code ec;
        co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        if (ec) co_return;
    }
}

void Service::install() {
    // decoder: the body's, run on the connection's loop (body() takes it).
    auto bind = [this](uint16_t type, Method method, Decoder decoder = {}) {
        server_.handle(type, [this, method](Request& req) -> awaitable<Reply> {
            // Any request of a client renews its session, and its reply
            // carries the session's epoch as it was when the request came:
            // what the request opened or locked belongs to that session.
            // A client that sees another epoch knows it lost what it held.
            uint64_t epoch = 0;
            if (uint64_t client = req.frame.header.client_id) {
                auto touched = sessions_.touch(client, Sessions::Clock::now());
                if (!touched) co_return Reply::from(touched.error());
                epoch = *touched;
                notice_conns_[client] = req.conn;
                settle_notices(req);
            }
            Reply reply;
            if (!ns_)
                reply = Reply::fail(EAGAIN, "metadata server is starting");
            else if (stopped_)
                reply = Reply::fail(EIO, "metadata server stopped: its journal failed: " + stopped_->message);
            else
                reply = co_await (this->*method)(req);
            reply.session_epoch = epoch;
            co_return reply;
        }, std::nullopt, std::move(decoder));
    };
    bind(PFS_MSG_LOOKUP, &Service::on_lookup, decoder_of(pfs_x_name_req));
    bind(PFS_MSG_GETATTR, &Service::on_getattr, decoder_of(pfs_x_entry_id));
    bind(PFS_MSG_CREATE, &Service::on_create, decoder_of(pfs_x_create));
    bind(PFS_MSG_MKDIR, &Service::on_mkdir, decoder_of(pfs_x_create));
    bind(PFS_MSG_SYMLINK, &Service::on_symlink, decoder_of(pfs_x_symlink));
    bind(PFS_MSG_MKNOD, &Service::on_mknod, decoder_of(pfs_x_mknod));
    bind(PFS_MSG_READLINK, &Service::on_readlink, decoder_of(pfs_x_entry_id));
    bind(PFS_MSG_LINK, &Service::on_link, decoder_of(pfs_x_link));
    bind(PFS_MSG_UNLINK, &Service::on_unlink, decoder_of(pfs_x_name_req));
    bind(PFS_MSG_RMDIR, &Service::on_rmdir, decoder_of(pfs_x_name_req));
    bind(PFS_MSG_RENAME, &Service::on_rename, decoder_of(pfs_x_rename));
    bind(PFS_MSG_SETATTR, &Service::on_setattr, decoder_of(pfs_x_setattr));
    bind(PFS_MSG_READDIR, &Service::on_readdir, decoder_of(pfs_x_readdir));
    bind(PFS_MSG_READDIR_PLUS, &Service::on_readdir, decoder_of(pfs_x_readdir));
    bind(PFS_MSG_OPEN, &Service::on_open, decoder_of(pfs_x_open));
    bind(PFS_MSG_OPEN_NAME, &Service::on_open_name, decoder_of(pfs_x_open_name));
    bind(PFS_MSG_CLOSE, &Service::on_close, decoder_of(pfs_x_entry_id));
    bind(PFS_MSG_CLOSE_MANY, &Service::on_close_many, decoder_of(pfs_x_close_many));
    bind(PFS_MSG_GETXATTR, &Service::on_getxattr, decoder_of(pfs_x_xattr_req));
    bind(PFS_MSG_SETXATTR, &Service::on_setxattr);
    bind(PFS_MSG_LISTXATTR, &Service::on_listxattr, decoder_of(pfs_x_entry_id));
    bind(PFS_MSG_REMOVEXATTR, &Service::on_removexattr, decoder_of(pfs_x_xattr_req));
    bind(PFS_MSG_STATFS, &Service::on_statfs);
    bind(PFS_MSG_SYNC_ALL, &Service::on_sync_all);
    bind(PFS_MSG_GET_PATTERN, &Service::on_get_pattern, decoder_of(pfs_x_entry_id));
    bind(PFS_MSG_SET_PATTERN, &Service::on_set_pattern, decoder_of(pfs_x_set_pattern));
    bind(PFS_MSG_LOCK, &Service::on_lock, decoder_of(pfs_x_lock_req));
    bind(PFS_MSG_GETLK, &Service::on_getlk, decoder_of(pfs_x_lock_req));
    bind(PFS_MSG_SESSION_RENEW, &Service::on_session_renew);
    bind(PFS_MSG_SESSION_END, &Service::on_session_end);
    bind(PFS_MSG_MKDIR_ON, &Service::on_mkdir_on, decoder_of(pfs_x_mkdir_on));
    bind(PFS_MSG_MKDIR_DETACHED, &Service::on_mkdir_detached, decoder_of(pfs_x_mkdir_detached));
    bind(PFS_MSG_RMDIR_DETACHED, &Service::on_rmdir_detached, decoder_of(pfs_x_rmdir_detached));
    bind(PFS_MSG_ENTRY_CHECK, &Service::on_entry_check, decoder_of(pfs_x_entry_check));
    bind(PFS_MSG_LIST_DETACHED, &Service::on_list_detached, decoder_of(pfs_x_list_detached));
    bind(PFS_MSG_MOVE, &Service::on_move, decoder_of(pfs_x_move));
    bind(PFS_MSG_REMOTE_LINK, &Service::on_remote_link, decoder_of(pfs_x_remote_link));
    bind(PFS_MSG_ENTRY_DROP, &Service::on_entry_drop, decoder_of(pfs_x_entry_id));
    bind(PFS_MSG_FALLOCATE, &Service::on_fallocate, decoder_of(pfs_x_fallocate));
    bind(PFS_MSG_GET_LAYOUT, &Service::on_get_layout, decoder_of(pfs_x_entry_id));
    bind(PFS_MSG_DIR_SHARDS, &Service::on_dir_shards, decoder_of(pfs_x_entry_id));
}

awaitable<Reply> Service::finish(Result<Reply> reply, std::optional<FreedFile> freed) {
    std::vector<FreedFile> all;
    if (freed) all.push_back(std::move(*freed));
    co_return co_await finish(std::move(reply), std::move(all));
}

awaitable<Reply> Service::finish(Result<Reply> reply, std::vector<FreedFile> freed) {
    if (!reply) co_return Reply::from(reply.error());
    auto st = co_await durable_();
    if (!st) {
        log::error("metadata change not durable", {{"error", st.error().message}});
        co_return Reply::from(st.error());
    }
    for (auto& f : freed) {
        locks_.release_file(f.id);
        delete_chunks(std::move(f));
    }
    co_return std::move(*reply);
}

Reply Service::finish_lazily(Result<Reply> reply) {
    if (!reply) return Reply::from(reply.error());
    durable_later();
    return std::move(*reply);
}

Reply Service::finish_early(Reply reply, std::optional<FreedFile> freed) {
    ++early_in_flight_;
    asio::co_spawn(ex_, settle_early(std::move(freed)), asio::detached);
    return reply;
}

awaitable<void> Service::settle_early(std::optional<FreedFile> freed) {
    (void)co_await finish(Reply::ok(), std::move(freed));
    --early_in_flight_;
}

awaitable<Reply> Service::finish_written(Result<Reply> reply) {
    if (reply && written_out_ && written_out_()) co_return finish_early(std::move(*reply), std::nullopt);
    co_return co_await finish(std::move(reply));
}

// Lazy records wait in the journal's next batch: the first change that
// must be durable takes them along (the next create of a job writing small
// files), else this does, kLazyDurable later, which also notices a journal
// that failed meanwhile. One at a time.
void Service::durable_later() {
    if (*durable_due_) return;
    *durable_due_ = true;
    asio::co_spawn(
        ex_,
        [ex = ex_, due = durable_due_, durable = durable_]() -> awaitable<void> {
            asio::steady_timer timer(ex, kLazyDurable);
            boost::system::error_code ec;
            co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
            *due = false;
            co_await durable();
        },
        asio::detached);
}

awaitable<Reply> Service::added_reply(const Request& req, const pfs_entry_id& dir, Result<Attr> attr) {
    if (!attr) co_return Reply::from(attr.error());
    const pfs_entry_id ids[] = {dir, attr->id};
    changed(req, ids);
    co_return co_await finish(ok_with(pfs_x_attr, to_wire(*attr)));
}

awaitable<void> Service::purge_orphans() {
    for (const auto& id : ns_->orphans()) {
        auto freed = ns_->purge_orphan(id);
        if (!freed) continue;  // open again meanwhile
        auto st = co_await durable_();
        if (!st) co_return;
        if (*freed) delete_chunks(std::move(**freed));
    }
    if (size_t n = co_await inline_.sweep(); n > 0)
        log::info("deleted inline data a crash left behind", {{"files", n}});
}

awaitable<Reply> Service::moved_reply(const Request& req, std::vector<pfs_entry_id> ids, Outcome out) {
    if (out.replaced) ids.push_back(*out.replaced);
    changed(req, ids);
    co_return co_await finish(Reply::ok(), std::move(out.freed));
}

void Service::delete_chunks(FreedFile freed) {
    // After the reply: a storage server that is down leaves orphan chunks
    // for fsck, never a failed unlink.
    // An inline file that never began to move has no chunks anywhere else.
    if (!freed.was_inline || !freed.layout.targets.empty()) reaper_.remove(freed.layout, freed.id);
    inline_.forget(freed);
}

void Service::count_blocks_if_unknown(const Attr& attr) {
    if (S_ISREG(attr.mode) && attr.blocks == PFS_BLOCKS_UNKNOWN) blocks_.count(attr.id);
}

awaitable<void> Service::count_blocks_now(Attr& attr) {
    if (!S_ISREG(attr.mode) || attr.blocks != PFS_BLOCKS_UNKNOWN) co_return;
    if (!co_await blocks_.count_now(attr.id)) co_return;
    // What the namespace has now: the count, or a change made meanwhile.
    if (auto now = ns_->getattr(attr.id)) attr = *now;
}

Caller Service::caller(const Request& req) const {
    return policy_.caller(req.frame.header.uid, req.frame.header.gid, req.groups, req.conn->peer_address(), req.role);
}

Status Service::allowed(const Request& req, const pfs_entry_id& id, int mask) const {
    return ns_->may_access(id, caller(req), mask);
}

int Service::open_mask(uint32_t flags) {
    int mask = 0;
    switch (flags & O_ACCMODE) {
        case O_WRONLY: mask = W_OK; break;
        case O_RDWR: mask = R_OK | W_OK; break;
        default: mask = R_OK; break;
    }
    if (flags & O_TRUNC) mask |= W_OK;
    return mask;
}

awaitable<Status> Service::may_remove(const Request& req, const pfs_entry_id& dir, const pfs_entry_id& id) {
    const Caller who = caller(req);
    if (auto st = ns_->may_access(dir, who, W_OK | X_OK); !st) co_return st;
    auto dir_attr = ns_->getattr(dir);
    if (!dir_attr) co_return dir_attr.error();
    if (!(dir_attr->mode & S_ISVTX)) co_return ok_status();
    uint32_t owner = 0;
    if (ns_->is_local(id)) {
        auto a = ns_->getattr(id);
        if (!a) co_return a.error();
        owner = a->uid;
    } else {
        auto body = co_await cluster_.call_meta_ok(id.owner_node, PFS_MSG_GETATTR, encode(pfs_x_entry_id, id));
        if (!body) co_return body.error();
        auto a = decode(*body, pfs_x_attr);
        if (!a) co_return Error{PFS_E_PROTO, "bad GETATTR reply"};
        owner = a->uid;
    }
    co_return may_unlink_from(*dir_attr, owner, who);
}

awaitable<Status> Service::may_rename(const Request& req, const pfs_rename& m) {
    // "." and "..": the namespace gives the errors rename(2) gives.
    if (is_dot(m.src_name) || is_dot(m.dst_name)) co_return ok_status();
    const Caller who = caller(req);
    if (auto st = ns_->may_access(m.src_dir, who, X_OK); !st) co_return st;
    auto src = ns_->resolve(m.src_dir, m.src_name);
    if (!src) co_return ok_status();  // rename says ENOENT
    if (auto st = co_await may_remove(req, m.src_dir, src->id); !st) co_return st;
    if (ns_->is_local(m.dst_dir)) {
        auto dst = ns_->resolve(m.dst_dir, m.dst_name);
        auto st = dst ? co_await may_remove(req, m.dst_dir, dst->id) : ns_->may_access(m.dst_dir, who, W_OK | X_OK);
        if (!st) co_return st;
    }
    // A directory's ".." changes: W on it (its owner checks one of another
    // server's at MOVE PREPARE when the move crosses servers).
    if (src->type == DT_DIR && !same_id(m.src_dir, m.dst_dir) && ns_->is_local(m.dst_dir)) {
        if (ns_->is_local(src->id)) co_return ns_->may_access(src->id, who, W_OK);
        auto body = co_await cluster_.call_meta_ok(src->id.owner_node, PFS_MSG_GETATTR, encode(pfs_x_entry_id, src->id));
        if (!body) co_return body.error();
        auto a = decode(*body, pfs_x_attr);
        if (!a) co_return Error{PFS_E_PROTO, "bad GETATTR reply"};
        co_return meta::may_access(from_wire(*a), Xattrs{}, who, W_OK);
    }
    co_return ok_status();
}

awaitable<Reply> Service::on_lookup(Request& req) {
    auto m = body(req, pfs_x_name_req);
    if (!m) co_return malformed(PFS_MSG_LOOKUP);
    if (auto st = allowed(req, m->dir, X_OK); !st) co_return Reply::from(st.error());
    auto slot = ns_->resolve(m->dir, m->name);
    // A negative answer is cached too: the directory is watched either way.
    watched(req, m->dir);
    if (!slot) co_return Reply::from(slot.error());
    if (!ns_->is_local(slot->id)) co_return co_await remote_attr(slot->id);
    auto attr = ns_->getattr(slot->id);
    if (!attr) co_return Reply::from(attr.error());
    watched(req, attr->id);
    co_await count_blocks_now(*attr);
    co_return Reply::ok(*encode(pfs_x_attr, to_wire(*attr)));
}

awaitable<Reply> Service::on_getattr(Request& req) {
    auto m = body(req, pfs_x_entry_id);
    if (!m) co_return malformed(PFS_MSG_GETATTR);
    auto attr = ns_->getattr(*m);
    if (!attr) co_return Reply::from(attr.error());
    watched(req, attr->id);
    co_await count_blocks_now(*attr);
    co_return Reply::ok(*encode(pfs_x_attr, to_wire(*attr)));
}

awaitable<Reply> Service::on_create(Request& req) {
    auto m = body(req, pfs_x_create);
    if (!m) co_return malformed(PFS_MSG_CREATE);
    const Caller who = caller(req);
    if (m->flags & PFS_CREATE_TMPFILE) co_return co_await create_tmpfile(req, *m, who);
    if ((m->flags & (PFS_CREATE_FIND | PFS_CREATE_EXCL | PFS_CREATE_OPEN)) == (PFS_CREATE_FIND | PFS_CREATE_OPEN))
        co_return co_await create_or_find(req, *m);
    co_return co_await create_file(req, *m, who);
}

// PFS_CREATE_FIND: an existing name found as OPEN_NAME finds it, a new one
// made and opened as with O_EXCL; the reply says which.
awaitable<Reply> Service::create_or_find(Request& req, const pfs_create& m) {
    bool exists = static_cast<bool>(ns_->resolve(m.dir, m.name));
    Reply reply = Reply::fail(PFS_E_INTERNAL, "");
    if (!exists) {
        pfs_create exclusive = m;
        exclusive.flags = (m.flags & ~PFS_CREATE_FIND) | PFS_CREATE_EXCL;
        reply = co_await create_file(req, exclusive, caller(req));
        // Made meanwhile by another (only while the map was fetched again).
        exists = reply.status == EEXIST;
    }
    if (exists) reply = co_await find_name(req, m.dir, m.name, create_open_mask(m.flags));
    co_return said_made(std::move(reply), !exists);
}

Reply Service::said_made(Reply reply, bool made) {
    if (reply.status != PFS_OK) return reply;
    Bytes body = *encode(pfs_x_create_made, pfs_create_made{made ? 1u : 0u});
    body.insert(body.end(), reply.body.begin(), reply.body.end());
    reply.body = std::move(body);
    return reply;
}

int Service::create_open_mask(uint32_t flags) {
    if (!(flags & PFS_CREATE_WRITE)) return R_OK;
    return (flags & PFS_CREATE_READ) ? R_OK | W_OK : W_OK;
}

awaitable<Reply> Service::create_file(Request& req, const pfs_create& m, const Caller& who) {
    // An existing file is looked up and opened (X on the directory, the
    // open's permissions on the file); a new name needs W and X.
    auto existing = ns_->resolve(m.dir, m.name);
    if (existing && !(m.flags & PFS_CREATE_EXCL)) {
        if (auto st = ns_->may_access(m.dir, who, X_OK); !st) co_return Reply::from(st.error());
        if ((m.flags & PFS_CREATE_OPEN) && ns_->is_local(existing->id) && existing->type == DT_REG) {
            if (auto st = ns_->may_access(existing->id, who, create_open_mask(m.flags)); !st)
                co_return Reply::from(st.error());
        }
    } else if (auto st = ns_->may_access(m.dir, who, W_OK | X_OK); !st) {
        co_return Reply::from(st.error());
    }
    auto choose = [this](const StripePattern& p) { return chooser_.choose(p); };
    auto create = [&] {
        return ns_->create(m.dir, m.name, m.mode, who.uid, who.gid, now(), choose,
                           (m.flags & PFS_CREATE_EXCL) != 0, follows_inline(req));
    };
    auto created = co_await with_targets(create);
    if (!created) co_return Reply::from(created.error());
    if (created->created) {
        const pfs_entry_id ids[] = {m.dir, created->attr.id};
        changed(req, ids);
        if (auto limit = ns_->inline_max(created->attr.id); limit && *limit) inline_.made(created->attr.id);
    } else {
        watched(req, m.dir);
        watched(req, created->attr.id);
    }
    // Counted last: an error after the count would leave an open that no
    // client closes.
    auto layout = co_await layout_for(req, created->attr.id);
    if (!layout && S_ISREG(created->attr.mode)) co_return Reply::from(layout.error());
    if (m.flags & PFS_CREATE_OPEN) {
        if (auto st = open_for(req.frame.header.client_id, created->attr.id); !st) co_return Reply::from(st.error());
    }
    Reply reply = co_await finish_written(attr_and_layout(created->attr, layout));
    if (m.flags & PFS_CREATE_FIND) co_return said_made(std::move(reply), created->created);
    co_return reply;
}

// Each server and client learns of a new target on its own: one that came
// up a moment ago may be in the client's map before it is in ours. Look
// again before answering ENOSPC.
template <class Make>
awaitable<std::invoke_result_t<Make>> Service::with_targets(Make make) {
    auto made = make();
    if (!made && made.error().code == -ENOSPC) {
        co_await reload_map();
        made = make();
    }
    co_return made;
}

// O_TMPFILE: W and X on the directory, as for a new name; opened at once.
awaitable<Reply> Service::create_tmpfile(Request& req, const pfs_create& m, const Caller& who) {
    if (!(m.flags & PFS_CREATE_OPEN) || m.name[0]) co_return Reply::fail(EINVAL, "O_TMPFILE: open, no name");
    if (auto st = ns_->may_access(m.dir, who, W_OK | X_OK); !st) co_return Reply::from(st.error());
    auto choose = [this](const StripePattern& p) { return chooser_.choose(p); };
    auto made = co_await with_targets(
        [&] { return ns_->tmpfile(m.dir, m.mode, who.uid, who.gid, now(), choose, follows_inline(req)); });
    if (!made) co_return Reply::from(made.error());
    // Counted at once (nothing else keeps it), and closed again when no
    // layout can be given.
    const uint64_t client = req.frame.header.client_id;
    if (auto st = open_for(client, made->id); !st) co_return Reply::from(st.error());
    watched(req, made->id);
    auto layout = co_await layout_for(req, made->id);
    if (!layout) {
        std::vector<FreedFile> freed;
        if (auto closed = close_for(client, made->id); closed && *closed) freed.push_back(std::move(**closed));
        co_return co_await finish(Reply::from(layout.error()), std::move(freed));
    }
    co_return co_await finish(attr_and_layout(*made, layout));
}

awaitable<void> Service::reload_map() {
    // Without any usable target every create would cost a round trip to
    // pfs-mgmtd: one look per 100 ms (creates at the same time share it).
    if (std::chrono::steady_clock::now() - map_reloaded_ < std::chrono::milliseconds(100)) co_return;
    auto st = co_await cluster_.refresh_now();
    map_reloaded_ = std::chrono::steady_clock::now();
    if (!st) log::warn("cannot reload the map of nodes and targets", {{"error", st.error().message}});
}

awaitable<Reply> Service::on_mkdir(Request& req) {
    auto m = body(req, pfs_x_create);
    if (!m) co_return malformed(PFS_MSG_MKDIR);
    if (auto st = allowed(req, m->dir, W_OK | X_OK); !st) co_return Reply::from(st.error());
    co_return co_await make_dir(req, m->dir, m->name, m->mode, 0, 0);
}

awaitable<Reply> Service::on_symlink(Request& req) {
    auto m = body(req, pfs_x_symlink);
    if (!m) co_return malformed(PFS_MSG_SYMLINK);
    const Caller who = caller(req);
    if (auto st = ns_->may_access(m->dir, who, W_OK | X_OK); !st) co_return Reply::from(st.error());
    co_return co_await added_reply(req, m->dir, ns_->symlink(m->dir, m->name, m->target, who.uid, who.gid, now()));
}

awaitable<Reply> Service::on_mknod(Request& req) {
    auto m = body(req, pfs_x_mknod);
    if (!m) co_return malformed(PFS_MSG_MKNOD);
    const Caller who = caller(req);
    // Device files give access to hardware: only root makes them, as mknod(2).
    if ((S_ISCHR(m->mode) || S_ISBLK(m->mode)) && !who.root()) co_return Reply::fail(EPERM, "mknod of a device");
    if (auto st = ns_->may_access(m->dir, who, W_OK | X_OK); !st) co_return Reply::from(st.error());
    co_return co_await added_reply(req, m->dir,
                                   ns_->mknod(m->dir, m->name, m->mode, m->rdev, who.uid, who.gid, now()));
}

awaitable<Reply> Service::on_readlink(Request& req) {
    auto m = body(req, pfs_x_entry_id);
    if (!m) co_return malformed(PFS_MSG_READLINK);
    auto target = ns_->readlink(*m);
    if (!target) co_return Reply::from(target.error());
    auto path = std::make_unique<pfs_path>();
    if (!set_field(path->path, *target)) co_return Reply::fail(ENAMETOOLONG, "symlink target too long");
    co_return Reply::ok(*encode_payload([&](pfs_xdr* x) { pfs_x_path(x, path.get()); }));
}

awaitable<Reply> Service::on_link(Request& req) {
    auto m = body(req, pfs_x_link);
    if (!m) co_return malformed(PFS_MSG_LINK);
    if (!ns_->is_local(m->id) || !ns_->is_local(m->dir))
        co_return Reply::fail(EXDEV, "a hard link must be on the file's own metadata server");
    if (auto st = allowed(req, m->dir, W_OK | X_OK); !st) co_return Reply::from(st.error());
    co_return co_await added_reply(req, m->dir, ns_->link(m->id, m->dir, m->name, now()));
}

awaitable<Reply> Service::on_unlink(Request& req) {
    auto m = body(req, pfs_x_name_req);
    if (!m) co_return malformed(PFS_MSG_UNLINK);
    auto slot = ns_->resolve(m->dir, m->name);
    if (slot) {
        if (auto st = co_await may_remove(req, m->dir, slot->id); !st) co_return Reply::from(st.error());
        slot = ns_->resolve(m->dir, m->name);  // the check may have waited
    }
    if (auto victim = slot ? held_victim(m->dir, m->name) : std::nullopt; victim && victim->type != DT_DIR)
        co_return co_await remove_held(req, m->dir, m->name, *victim);
    auto out = ns_->unlink(m->dir, m->name, now());
    if (!out) co_return Reply::from(out.error());
    const pfs_entry_id ids[] = {m->dir, out->attr.id};
    changed(req, ids);
    if (out->attr.nlink == 0) callbacks_.forget(out->attr.id);
    co_return finish_early(Reply::ok(), std::move(out->freed));
}

awaitable<Reply> Service::on_rmdir(Request& req) {
    auto m = body(req, pfs_x_name_req);
    if (!m) co_return malformed(PFS_MSG_RMDIR);
    auto slot = ns_->resolve(m->dir, m->name);
    if (slot && !is_dot(m->name)) {
        if (auto st = co_await may_remove(req, m->dir, slot->id); !st) co_return Reply::from(st.error());
        slot = ns_->resolve(m->dir, m->name);  // the check may have waited
    }
    if (auto victim = slot ? held_victim(m->dir, m->name) : std::nullopt; victim && victim->type == DT_DIR)
        co_return co_await remove_held(req, m->dir, m->name, *victim);
    auto out = ns_->rmdir(m->dir, m->name, now());
    if (!out) co_return Reply::from(out.error());
    const pfs_entry_id ids[] = {m->dir, out->attr.id};
    changed(req, ids);
    callbacks_.forget(out->attr.id);
    co_return co_await finish(Reply::ok());
}

awaitable<Reply> Service::on_rename(Request& req) {
    auto m = body(req, pfs_x_rename);
    if (!m) co_return malformed(PFS_MSG_RENAME);
    if (!ns_->is_local(m->src_dir)) co_return Reply::fail(EXDEV, "the source directory is on another metadata server");
    if (auto st = co_await may_rename(req, *m); !st) co_return Reply::from(st.error());
    if (!ns_->is_local(m->dst_dir)) co_return co_await move_across(req, *m);
    // An entry this server is moving away or removing stays put until done.
    for (auto [dir, name] : {std::pair{m->src_dir, m->src_name}, std::pair{m->dst_dir, m->dst_name}}) {
        if (busy_.empty()) break;
        if (auto slot = ns_->resolve(dir, name); slot && busy_.contains(EntryKey::of(slot->id)))
            co_return Reply::fail(EBUSY, "the entry is being moved or removed");
    }
    // What it replaces of other servers (another server's inode, the other
    // shards of a striped directory) is held for removal first, removed
    // once it is replaced (as rmdir and unlink do).
    if (!(m->flags & (kRenameExchange | kRenameNoReplace)))
        if (auto victim = held_victim(m->dst_dir, m->dst_name))
            if (auto src = ns_->resolve(m->src_dir, m->src_name); src && victim->replaceable_by(src->id, src->type))
                co_return co_await rename_over_held(req, *m, *victim);
    auto out = co_await rename_here(*m, 0);
    if (!out) co_return Reply::from(out.error());
    std::vector<pfs_entry_id> ids{m->src_dir, m->dst_dir, out->attr.id};
    co_return co_await moved_reply(req, std::move(ids), std::move(*out));
}

awaitable<Result<Outcome>> Service::rename_here(const pfs_rename& m, uint32_t flags, const pfs_entry_id* victim) {
    flags |= m.flags;
    auto rename = [&](uint32_t with) -> Result<Outcome> {
        if (victim && !still_names(m.dst_dir, m.dst_name, *victim))
            return Error{-EBUSY, "the target changed while the rename waited"};
        return ns_->rename(m.src_dir, m.src_name, m.dst_dir, m.dst_name, flags | with, now());
    };
    auto out = rename(0);
    if (!out && out.error().code == -EXDEV && !(flags & kRenameExchange)) {
        // A directory whose way up leaves this server: walk it across.
        auto slot = ns_->resolve(m.src_dir, m.src_name);
        if (slot && slot->type == DT_DIR) {
            if (auto st = co_await check_not_below(slot->id, m.dst_dir); !st) co_return st.error();
            out = rename(kRenameAncestryChecked);
        }
    }
    co_return out;
}

awaitable<Reply> Service::on_setattr(Request& req) {
    auto m = body(req, pfs_x_setattr);
    if (!m) co_return malformed(PFS_MSG_SETATTR);
    const Timespec stamp = now();
    AttrChanges changes;
    if (m->valid & PFS_SET_MODE) changes.mode = m->mode;
    if (m->valid & PFS_SET_UID) changes.uid = m->uid;
    if (m->valid & PFS_SET_GID) changes.gid = m->gid;
    if (m->valid & PFS_SET_ATIME)
        changes.atime = (m->valid & PFS_SET_ATIME_NOW) ? stamp : from_wire(m->atime);
    if (m->valid & PFS_SET_MTIME)
        changes.mtime = (m->valid & PFS_SET_MTIME_NOW) ? stamp : from_wire(m->mtime);
    const bool explicit_time = ((m->valid & PFS_SET_ATIME) && !(m->valid & PFS_SET_ATIME_NOW)) ||
                               ((m->valid & PFS_SET_MTIME) && !(m->valid & PFS_SET_MTIME_NOW));
    auto current = ns_->getattr(m->id);
    if (!current) co_return Reply::from(current.error());
    // A size report with nothing new (fsync after a lazy one at close)
    // changes nothing, not even ctime, and needs no permission: it asks
    // that what came before be durable, and is answered once it is.
    if ((m->valid & ~PFS_SET_LAZY) == PFS_SET_SIZE_EXTEND && m->size <= current->size)
        co_return co_await finish(ok_with(pfs_x_attr, to_wire(*current)));
    if (m->valid & (PFS_SET_SIZE | PFS_SET_SIZE_EXTEND)) changes.size = m->size;
    // Checked (and adjusted: set-ID bits) before anything is cut.
    if (auto st = ns_->may_setattr(m->id, caller(req), changes, !explicit_time); !st) co_return Reply::from(st.error());
    if (auto st = co_await setattr_shards(m->id, changes); !st) co_return Reply::from(st.error());
    if (m->valid & PFS_SET_SIZE_EXTEND) {
        changes.size.reset();
        if (m->size > current->size) changes.size = m->size;
    } else if (m->valid & PFS_SET_SIZE) {
        // Cut the chunks, durably, before the new size is committed: a
        // crash in between leaves zeros past the old end, never old data
        // that a later extension would expose. Always, not only below the
        // size known here: clients report how far they wrote only at
        // close and fsync, so the chunks may hold bytes past it.
        if (auto st = co_await truncate_chunks(m->id, m->size); !st) co_return Reply::from(st.error());
    }
    const bool lazy = (m->valid & PFS_SET_LAZY) && !(m->valid & PFS_SET_SIZE);
    auto out = lazy ? ns_->setattr_lazily(m->id, changes, stamp) : ns_->setattr(m->id, changes, stamp);
    if (!out) co_return Reply::from(out.error());
    changed(req, std::span<const pfs_entry_id>(&m->id, 1));
    if (lazy) co_return finish_lazily(ok_with(pfs_x_attr, to_wire(out->attr)));
    co_return co_await finish(ok_with(pfs_x_attr, to_wire(out->attr)));
}

// READDIR and READDIR_PLUS: the same page; READDIR_PLUS adds each entry's
// attributes, where this server has them, the caller could look the name up
// (X) and the callback table has room, and watches each such entry for the
// caller as LOOKUP would (and starts a count of its st_blocks as LOOKUP
// would: a listing is how ls -l and find stat).
awaitable<Reply> Service::on_readdir(Request& req) {
    const uint16_t type = req.frame.header.type;
    auto m = body(req, pfs_x_readdir);
    if (!m) co_return malformed(type);
    if (auto st = allowed(req, m->dir, R_OK); !st) co_return Reply::from(st.error());
    auto page = ns_->readdir(m->dir, m->cookie, m->max_entries);
    if (!page) co_return Reply::from(page.error());
    watched(req, m->dir);
    const bool plus = type == PFS_MSG_READDIR_PLUS;
    const bool attrs = plus && static_cast<bool>(allowed(req, m->dir, X_OK)) &&
                       callbacks_.has_room(page->entries.size());
    std::vector<pfs_dirent_plus> out(page->entries.size());
    for (size_t i = 0; i < out.size(); ++i) {
        const DirEntry& e = page->entries[i];
        out[i].ent = pfs_dirent{e.id, e.cookie, e.type, {}};
        set_field(out[i].ent.name, e.name);
        if (!attrs || e.cookie <= 2 || !ns_->is_local(e.id)) continue;  // ".", "..", elsewhere
        auto attr = ns_->getattr(e.id);
        if (!attr) continue;
        watched(req, e.id);
        count_blocks_if_unknown(*attr);
        out[i].has_attr = 1;
        out[i].attr = to_wire(*attr);
    }
    pfs_dir_page head{page->next_cookie, static_cast<uint8_t>(page->eof ? 1 : 0),
                      static_cast<uint32_t>(out.size())};
    auto payload = encode_payload([&](pfs_xdr* x) {
        if (pfs_x_dir_page(x, &head)) return;
        for (auto& d : out)
            if (plus ? pfs_x_dirent_plus(x, &d) : pfs_x_dirent(x, &d.ent)) return;
    });
    co_return payload ? Reply::ok(std::move(*payload)) : Reply::from(payload.error());
}

awaitable<Reply> Service::on_open(Request& req) {
    auto m = body(req, pfs_x_open);
    if (!m) co_return malformed(PFS_MSG_OPEN);
    auto attr = ns_->getattr(m->id);
    if (!attr) co_return Reply::from(attr.error());
    const int mask = open_mask(m->flags);
    if (auto st = allowed(req, m->id, mask); !st) co_return Reply::from(st.error());
    watched(req, m->id);
    co_return co_await opened_reply(req, *attr, mask);
}

awaitable<Reply> Service::opened_reply(const Request& req, const Attr& attr, int mask) {
    auto layout = co_await layout_for(req, attr.id);
    if (!layout && S_ISREG(attr.mode)) co_return Reply::from(layout.error());
    auto reply = attr_and_layout(attr, layout);
    if (!reply) co_return Reply::from(reply.error());
    // An inline file's content goes as the reply's bulk data, where the
    // request has room for all of it (PFS_FLAG_INLINE_CONTENT).
    const auto& bulk = req.frame.bulk;
    const bool wants = (req.frame.header.flags & PFS_FLAG_INLINE_CONTENT) && mask == R_OK && bulk &&
                       attr.size <= bulk->out_len;
    if (wants && layout && is_inline_layout(*layout)) {
        if (auto data = co_await inline_.content(attr.id, attr.size)) {
            reply->data = std::move(*data);
            // The client has all of the file and asked to send no CLOSE:
            // its open is not counted (PFS_FLAG_UNTRACKED).
            if (req.frame.header.flags & PFS_FLAG_UNTRACKED) {
                reply->flags = PFS_FLAG_UNTRACKED;
                co_return std::move(*reply);
            }
        }
    }
    // Not journaled: after a restart nothing is open.
    if (auto st = open_for(req.frame.header.client_id, attr.id); !st) co_return Reply::from(st.error());
    co_return std::move(*reply);
}

awaitable<Reply> Service::on_open_name(Request& req) {
    auto m = body(req, pfs_x_open_name);
    if (!m) co_return malformed(PFS_MSG_OPEN_NAME);
    co_return co_await find_name(req, m->dir, m->name, open_mask(m->flags));
}

// A name looked up, and opened if it is a regular file of this server
// (mask: what the open asks of it).
awaitable<Reply> Service::find_name(Request& req, const pfs_entry_id& dir, std::string_view name, int mask) {
    if (auto st = allowed(req, dir, X_OK); !st) co_return Reply::from(st.error());
    auto slot = ns_->resolve(dir, name);
    watched(req, dir);
    if (!slot) co_return Reply::from(slot.error());
    // An inode of another server is only looked up: the client opens it
    // there (a file's answer has no layout).
    if (!ns_->is_local(slot->id)) co_return co_await remote_attr(slot->id);
    auto attr = ns_->getattr(slot->id);
    if (!attr) co_return Reply::from(attr.error());
    watched(req, attr->id);
    if (!S_ISREG(attr->mode)) co_return Reply::ok(*encode(pfs_x_attr, to_wire(*attr)));
    if (auto st = allowed(req, attr->id, mask); !st) co_return Reply::from(st.error());
    co_return co_await opened_reply(req, *attr, mask);
}

awaitable<Reply> Service::on_close(Request& req) {
    auto m = body(req, pfs_x_entry_id);
    if (!m) co_return malformed(PFS_MSG_CLOSE);
    auto freed = close_for(req.frame.header.client_id, *m);
    if (!freed) co_return Reply::from(freed.error());
    co_return co_await finish(Reply::ok(), *freed);
}

awaitable<Reply> Service::on_close_many(Request& req) {
    auto m = body(req, pfs_x_close_many);
    if (!m) co_return malformed(PFS_MSG_CLOSE_MANY);
    // Every entry is closed, whatever happens to the others: the client
    // does not send them again.
    std::vector<FreedFile> freed;
    std::optional<Error> first_error;
    for (uint32_t i = 0; i < m->count; ++i) {
        auto f = close_for(req.frame.header.client_id, m->ids[i]);
        if (!f && !first_error) first_error = f.error();
        if (f && *f) freed.push_back(std::move(**f));
    }
    Reply reply = first_error ? Reply::from(*first_error) : Reply::ok();
    co_return co_await finish(std::move(reply), std::move(freed));
}

awaitable<Reply> Service::on_getxattr(Request& req) {
    auto m = body(req, pfs_x_xattr_req);
    if (!m) co_return malformed(PFS_MSG_GETXATTR);
    if (auto st = ns_->may_xattr(m->id, caller(req), m->name, false); !st) co_return Reply::from(st.error());
    auto value = ns_->get_xattr(m->id, m->name);
    if (!value) co_return Reply::from(value.error());
    co_return Reply::ok(Bytes(value->begin(), value->end()));
}

awaitable<Reply> Service::on_setxattr(Request& req) {
    pfs_xattr_req m{};
    pfs_xdr x;
    const auto& payload = req.frame.payload;
    pfs_xdr_init_decode(&x, payload.data(), static_cast<uint32_t>(payload.size()));
    if (pfs_x_xattr_req(&x, &m) || payload.size() - x.pos > PFS_XATTR_VALUE_MAX)
        co_return malformed(PFS_MSG_SETXATTR);
    std::string value(payload.begin() + x.pos, payload.end());
    const std::string_view name = m.name;
    if (auto may = ns_->may_xattr(m.id, caller(req), name, true); !may) co_return Reply::from(may.error());
    if (name == kAclAccess || name == kAclDefault) {
        if (auto valid = check_acl(value, name == kAclDefault); !valid) co_return Reply::from(valid.error());
        if (auto st = co_await xattr_shards(m, PFS_MSG_SETXATTR, value); !st) co_return Reply::from(st.error());
    }
    auto st = ns_->set_xattr(m.id, m.name, value, m.flags, now());
    if (st) changed(req, std::span<const pfs_entry_id>(&m.id, 1));
    co_return co_await finish(ok_empty(st));
}

awaitable<Reply> Service::on_listxattr(Request& req) {
    auto m = body(req, pfs_x_entry_id);
    if (!m) co_return malformed(PFS_MSG_LISTXATTR);
    auto names = ns_->list_xattrs(*m);
    if (!names) co_return Reply::from(names.error());
    const Caller who = caller(req);
    Bytes out;
    for (const auto& n : *names) {
        if (!lists_xattr(n, who)) continue;
        out.insert(out.end(), n.begin(), n.end());
        out.push_back(0);
    }
    co_return Reply::ok(std::move(out));
}

awaitable<Reply> Service::on_removexattr(Request& req) {
    auto m = body(req, pfs_x_xattr_req);
    if (!m) co_return malformed(PFS_MSG_REMOVEXATTR);
    if (auto may = ns_->may_xattr(m->id, caller(req), m->name, true); !may) co_return Reply::from(may.error());
    if (auto st = co_await xattr_shards(*m, PFS_MSG_REMOVEXATTR, {}); !st) co_return Reply::from(st.error());
    auto st = ns_->remove_xattr(m->id, m->name, now());
    if (st) changed(req, std::span<const pfs_entry_id>(&m->id, 1));
    co_return co_await finish(ok_empty(st));
}

awaitable<const std::vector<pfs_target_info>*> Service::capacity_now() {
    const auto now = std::chrono::steady_clock::now();
    if (now - capacity_asked_ >= std::chrono::seconds(1)) {
        // Asked at most once a second even while pfs-mgmtd fails to answer.
        capacity_asked_ = now;
        auto fetched = co_await cluster_.fetch_targets();
        if (!fetched && capacity_)
            log::warn("cannot ask pfs-mgmtd for the targets' capacity; statfs answers from the map",
                      {{"error", fetched.error().message}});
        if (fetched) capacity_ = std::move(*fetched);
        else capacity_.reset();
    }
    co_return capacity_ ? &*capacity_ : &cluster_.targets();
}

awaitable<Reply> Service::on_statfs(Request& req) {
    if (!req.frame.payload.empty()) co_return malformed(PFS_MSG_STATFS);
    pfs_statfs s{};
    const std::vector<pfs_target_info>* targets = co_await capacity_now();
    for (const auto& t : *targets) {
        s.storage.bytes_total += t.cap.bytes_total;
        s.storage.bytes_free += t.cap.bytes_free;
        s.storage.inodes_total += t.cap.inodes_total;
        s.storage.inodes_free += t.cap.inodes_free;
    }
    s.inodes_used = ns_->counts().inodes;
    s.inodes_free = UINT32_MAX;  // the namespace is limited by memory, not a table
    co_return Reply::ok(*encode(pfs_x_statfs, s));
}

// A client's syncfs(2): every change answered before is durable (those
// answered before their sync too: creates, unlinks, size reports), and so
// is the inline store's data.
awaitable<Reply> Service::on_sync_all(Request& req) {
    if (!req.frame.payload.empty()) co_return malformed(PFS_MSG_SYNC_ALL);
    if (auto st = co_await inline_.sync_all(); !st) co_return Reply::from(st.error());
    co_return co_await finish(Reply::ok());
}

awaitable<Reply> Service::on_get_pattern(Request& req) {
    auto m = body(req, pfs_x_entry_id);
    if (!m) co_return malformed(PFS_MSG_GET_PATTERN);
    auto p = ns_->pattern(*m);
    co_return p ? Reply::ok(*encode(pfs_x_pattern, to_wire(*p))) : Reply::from(p.error());
}

awaitable<Reply> Service::on_set_pattern(Request& req) {
    auto m = body(req, pfs_x_set_pattern);
    if (!m) co_return malformed(PFS_MSG_SET_PATTERN);
    auto dir = ns_->getattr(m->dir);
    if (!dir) co_return Reply::from(dir.error());
    if (const Caller who = caller(req); !who.root() && who.uid != dir->uid)
        co_return Reply::fail(EPERM, "only the directory's owner may change its stripe pattern");
    if (auto st = check_pattern(from_wire(m->pattern)); !st) co_return Reply::from(st.error());
    auto to_shards = co_await to_other_shards(m->dir, PFS_MSG_SET_PATTERN, [&](const pfs_entry_id& shard) {
        pfs_set_pattern sp{shard, m->pattern};
        return encode(pfs_x_set_pattern, sp);
    });
    if (!to_shards) co_return Reply::from(to_shards.error());
    co_return co_await finish(ok_empty(ns_->set_pattern(m->dir, from_wire(m->pattern), now())));
}

}  // namespace pfs::meta
