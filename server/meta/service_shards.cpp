// Striped directories (the model: DirShards in inode.hpp). A directory D of
// server A striped over N servers keeps each name in shard
// pfs_dir_shard(name, N): shard 0 is D itself, shards 1..N-1 are detached
// directories of other servers whose RemoteParent is D. Clients send name
// operations straight to the name's shard, so creates in one directory
// spread over N journals and N event loops.
//
// mkdir, by D's server A (D's id reserved first):
//   A: asks each shard's server for a detached shard of D (MKDIR_DETACHED
//      with shard_index), which makes it CREATED, durably
//   A: makes D with the list of shards, durably, and answers
// Each shard server settles its CREATED shard as any detached directory:
// ENTRY_CHECK asks A whether D lists it (A answers PENDING while a
// MKDIR_DETACHED is under way); listed, CONFIRMED; not, removed.
// rmdir of D: A prepares the removal of every other shard (RMDIR_DETACHED
// PREPARE: empty, then no new entries), removes D durably, then commits
// them (aborts them when D stays); what a crash cuts short is settled the
// same way.
// Permissions are checked by the shard a request reaches: D's mode, owner
// and ACLs are given to every shard before D takes them.
#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>

#include "access.hpp"
#include "log.hpp"
#include "service.hpp"
#include "service_helpers.hpp"
#include "wire_convert.hpp"

namespace pfs::meta {

Result<uint32_t> Service::stripes_for(uint32_t asked, const StripePattern& parent) const {
    const auto online = static_cast<uint32_t>(std::count_if(
        cluster_.meta_nodes().begin(), cluster_.meta_nodes().end(),
        [](const pfs_node_info& n) { return n.reachability == PFS_REACH_ONLINE; }));
    if (asked > online)
        return Error{-EINVAL, "cannot stripe a directory over " + std::to_string(asked) + " metadata servers: " +
                                  std::to_string(online) + " online"};
    if (asked > 0) return asked;
    return std::max<uint32_t>(1, std::min(parent.dir_stripes, online));
}

std::vector<uint32_t> Service::shard_nodes(uint32_t stripes) const {
    // The ONLINE servers after this one, in node id order.
    const uint32_t self = ns_->owner_node();
    std::vector<uint32_t> nodes;
    for (const auto& n : cluster_.meta_nodes())
        if (n.reachability == PFS_REACH_ONLINE && n.node_id != self) nodes.push_back(n.node_id);
    std::rotate(nodes.begin(), std::upper_bound(nodes.begin(), nodes.end(), self), nodes.end());
    nodes.resize(std::min<size_t>(nodes.size(), stripes - 1));
    return nodes;
}

awaitable<Result<std::vector<pfs_entry_id>>> Service::make_shards(const pfs_entry_id& id,
                                                                  const Namespace::NewDir& plan,
                                                                  std::span<const uint32_t> nodes) {
    const auto stripes = static_cast<uint32_t>(nodes.size() + 1);
    std::vector<pfs_entry_id> shards{id};
    for (uint32_t i = 1; i < stripes; ++i) {
        const uint32_t node = nodes[i - 1];
        pfs_mkdir_detached md{id, plan.mode, plan.uid, plan.gid, to_wire(plan.pattern), stripes, i};
        auto made = co_await cluster_.call_meta_ok(node, PFS_MSG_MKDIR_DETACHED, encode(pfs_x_mkdir_detached, md));
        if (!made) {
            // The shards made so far are settled away by their servers.
            log::warn("shard of a striped directory not made", {{"node", node}, {"error", made.error().message}});
            co_return made.error();
        }
        auto attr = decode(*made, pfs_x_attr);
        if (!attr || !S_ISDIR(attr->mode) || attr->id.owner_node != node)
            co_return Error{PFS_E_PROTO, "bad MKDIR_DETACHED reply"};
        shards.push_back(attr->id);
    }
    co_return shards;
}

awaitable<Result<Attr>> Service::make_striped_dir(const pfs_entry_id& parent, std::string_view name,
                                                  const Namespace::NewDir& plan, uint32_t stripes, bool detached) {
    const auto nodes = shard_nodes(stripes);
    if (nodes.size() + 1 < stripes)
        co_return Error{-EAGAIN, "fewer metadata servers online than the directory's stripes"};
    // Until the directory names its shards, their servers hear PENDING
    // when they ask whether it does (ENTRY_CHECK).
    std::vector<std::unique_ptr<Counted>> in_flight;
    for (uint32_t node : nodes) in_flight.push_back(std::make_unique<Counted>(mkdirs_in_flight_[node]));
    const pfs_entry_id id = ns_->reserve_dir_id();
    auto shards = co_await make_shards(id, plan, nodes);
    if (!shards) {
        ns_->release_dir_id(id);
        co_return shards.error();
    }
    // The parent or the name may have changed meanwhile: then it fails
    // here, and the shards are settled away.
    auto made = detached ? ns_->mkdir_detached(parent, plan.mode, plan.uid, plan.gid, plan.pattern, now(),
                                               std::move(*shards))
                         : ns_->mkdir(parent, name, plan.mode, plan.uid, plan.gid, now(), std::move(*shards),
                                      plan.pattern.dir_stripes);
    if (!made) ns_->release_dir_id(id);
    co_return made;
}

awaitable<void> Service::confirm_detached(std::span<const pfs_entry_id> ids) {
    for (const auto& id : ids) {
        pfs_rmdir_detached rd{id, PFS_RMDIR_CONFIRM};
        auto r = co_await cluster_.call_meta_ok(id.owner_node, PFS_MSG_RMDIR_DETACHED, encode(pfs_x_rmdir_detached, rd));
        if (!r) log::warn("detached directory left to settle", {{"ino", id.ino}, {"error", r.error().message}});
    }
}

awaitable<void> Service::confirm_shards(const pfs_entry_id& dir) {
    auto shards = ns_->shards(dir);
    if (!shards || shards->ids.size() < 2) co_return;
    co_await confirm_detached(std::span<const pfs_entry_id>(shards->ids).subspan(1));
}

awaitable<Reply> Service::on_dir_shards(Request& req) {
    auto m = body(req, pfs_x_entry_id);
    if (!m) co_return malformed(PFS_MSG_DIR_SHARDS);
    auto shards = ns_->shards(*m);
    if (!shards) co_return Reply::from(shards.error());
    if (shards->index > 0) co_return Reply::fail(EINVAL, "a shard of a striped directory: ask the directory");
    auto out = std::make_unique<pfs_dir_shards>();
    out->count = shards->count;
    out->ids[0] = *m;
    for (uint32_t i = 1; i < shards->count; ++i) out->ids[i] = shards->ids[i];
    // Only once the directory is durable: a client must not make entries
    // in shards of a directory a crash may yet undo.
    co_return co_await finish(Reply::ok(*encode_payload([&](pfs_xdr* x) { pfs_x_dir_shards(x, out.get()); })));
}

awaitable<Status> Service::to_other_shards(const pfs_entry_id& dir, uint16_t type,
                                           const std::function<Result<Bytes>(const pfs_entry_id&)>& body_for,
                                           int done_already) {
    auto shards = ns_->shards(dir);
    if (!shards) co_return ok_status();  // no directory: the change fails on its own
    for (size_t i = 1; i < shards->ids.size(); ++i) {
        const pfs_entry_id& shard = shards->ids[i];
        auto done = co_await cluster_.call_meta_ok(shard.owner_node, type, body_for(shard));
        if (!done && done_already != 0 && done.error().code == done_already) continue;
        if (!done) co_return Error{done.error().code, "shard " + std::to_string(i) + " of the striped directory: " +
                                                          done.error().message};
    }
    co_return ok_status();
}

awaitable<Status> Service::setattr_shards(const pfs_entry_id& dir, const AttrChanges& changes) {
    // As the permission check left them (a set-group-ID bit dropped).
    pfs_setattr to_shard{};
    if (changes.mode) {
        to_shard.valid |= PFS_SET_MODE;
        to_shard.mode = *changes.mode;
    }
    if (changes.uid) {
        to_shard.valid |= PFS_SET_UID;
        to_shard.uid = *changes.uid;
    }
    if (changes.gid) {
        to_shard.valid |= PFS_SET_GID;
        to_shard.gid = *changes.gid;
    }
    if (!to_shard.valid) co_return ok_status();
    co_return co_await to_other_shards(dir, PFS_MSG_SETATTR, [&](const pfs_entry_id& shard) {
        to_shard.id = shard;
        return encode(pfs_x_setattr, to_shard);
    });
}

awaitable<Status> Service::xattr_shards(const pfs_xattr_req& m, uint16_t type, std::string_view value) {
    if (std::string_view(m.name) != kAclAccess && std::string_view(m.name) != kAclDefault) co_return ok_status();
    // Whatever each shard has: a change made on some of them before can be
    // made again.
    pfs_xattr_req to_shard = m;
    to_shard.flags = 0;
    const int done_already = type == PFS_MSG_REMOVEXATTR ? -ENODATA : 0;
    co_return co_await to_other_shards(
        m.id, type,
        [&](const pfs_entry_id& shard) -> Result<Bytes> {
            to_shard.id = shard;
            auto b = encode(pfs_x_xattr_req, to_shard);
            if (b) b->insert(b->end(), value.begin(), value.end());
            return b;
        },
        done_already);
}

}  // namespace pfs::meta
