#include "filesystem.hpp"

#include <algorithm>
#include <memory>
#include <random>

namespace pfs::client {
namespace {

std::vector<std::string_view> components(std::string_view path) {
    std::vector<std::string_view> parts;
    size_t i = 0;
    while (i < path.size()) {
        size_t j = path.find('/', i);
        if (j == std::string_view::npos) j = path.size();
        if (j > i) parts.push_back(path.substr(i, j - i));
        i = j + 1;
    }
    return parts;
}

Result<Bytes> name_req(const pfs_entry_id& dir, std::string_view name) {
    pfs_name_req m{dir, {}};
    if (!set_field(m.name, name)) return Error{-ENAMETOOLONG, "name too long: " + std::string(name)};
    return encode(pfs_x_name_req, m);
}

Result<Bytes> xattr_req(const pfs_entry_id& id, std::string_view name, uint32_t flags) {
    pfs_xattr_req m{id, {}, flags};
    if (!set_field(m.name, name)) return Error{-ERANGE, "xattr name too long"};
    return encode(pfs_x_xattr_req, m);
}

StripeLayout from_wire(const pfs_layout& l) {
    StripeLayout out;
    out.chunk_size = l.chunk_size;
    out.pool_id = l.pool_id;
    out.targets.assign(l.targets, l.targets + l.count);
    return out;
}

// An attribute, then (files) a layout.
Result<OpenFile> decode_open(const Bytes& body) {
    OpenFile f;
    auto wire = std::make_unique<pfs_layout>();
    bool has_layout = false;
    auto st = decode_payload(body, [&](pfs_xdr* x) {
        if (pfs_x_attr(x, &f.attr)) return;
        if (pfs_xdr_remaining(x) > 0) {
            has_layout = true;
            pfs_x_layout(x, wire.get());
        }
    });
    if (!st) return st.error();
    if (has_layout) f.layout = from_wire(*wire);
    return f;
}

}  // namespace

FileSystem::FileSystem(Cluster& cluster, FileSystemOptions options)
    : cluster_(cluster),
      io_(cluster),
      options_(options),
      as_(options.as ? *options.as : Credentials::of_process()),
      keeper_(cluster, cluster.identities().create(), options.session_renew_max) {
    cluster_.on_notice(keeper_.client_id(), [this](const pfs_invalidate& n) { invalidate(n); });
}

FileSystem::~FileSystem() {
    cluster_.drop_notices(keeper_.client_id());
    cluster_.identities().forget(keeper_.client_id());
}

void FileSystem::invalidate(const pfs_invalidate& notice) {
    ++notices_;
    if (notice.count == 0) {
        dir_cache_.clear();
        return;
    }
    auto named = [&](const pfs_entry_id& id) {
        return std::any_of(notice.ids, notice.ids + notice.count, [&](const pfs_entry_id& n) {
            return n.ino == id.ino && n.owner_node == id.owner_node && n.generation == id.generation;
        });
    };
    std::erase_if(dir_cache_, [&](const auto& kv) { return named(kv.second.parent) || named(kv.second.id); });
}

awaitable<Result<Bytes>> FileSystem::meta(const pfs_entry_id& owner, uint16_t type, Result<Bytes> payload,
                                          uint64_t* epoch) {
    auto r = co_await meta_reply(owner, type, std::move(payload), epoch, {});
    if (!r) co_return r.error();
    co_return std::move(r->body);
}

awaitable<Result<Reply>> FileSystem::meta_reply(const pfs_entry_id& owner, uint16_t type, Result<Bytes> payload,
                                                uint64_t* epoch, Bulk bulk) {
    const uint32_t node = owner.owner_node;
    keeper_.used(node);
    uint64_t sent = keeper_.epoch(node), got = 0;
    auto r = co_await cluster_.call_meta(node, type, std::move(payload), keeper_.client_id(), &as_, &got, bulk);
    keeper_.seen(node, sent, got);
    if (epoch) *epoch = got;
    co_return r;
}

awaitable<Result<FileSystem::OpenReply>> FileSystem::open_call(const pfs_entry_id& owner, uint16_t type,
                                                               Result<Bytes> payload, uint64_t* epoch,
                                                               bool read_only) {
    // Room for the content (not zeroed: only what arrives is kept), then
    // a copy of just what came, so a handle of a small file holds that much.
    auto room = read_only ? std::make_unique_for_overwrite<uint8_t[]>(kOpenContentMax) : nullptr;
    Bulk bulk;
    if (room) bulk.into = std::span<uint8_t>(room.get(), kOpenContentMax);
    bulk.untracked = read_only;
    auto r = co_await meta_reply(owner, type, std::move(payload), epoch, bulk);
    if (!r) co_return r.error();
    std::shared_ptr<Bytes> data;
    if (room) data = std::make_shared<Bytes>(room.get(), room.get() + std::min<size_t>(r->data_len, kOpenContentMax));
    co_return OpenReply{std::move(r->body), std::move(data), (r->flags & PFS_FLAG_UNTRACKED) != 0};
}

awaitable<Result<pfs_attr>> FileSystem::attr_call(const pfs_entry_id& owner, uint16_t type, Result<Bytes> payload) {
    auto body = co_await meta(owner, type, std::move(payload));
    if (!body) co_return body.error();
    co_return decode(*body, pfs_x_attr);
}

awaitable<Result<pfs_entry_id>> FileSystem::root() {
    auto node = cluster_.root_meta();
    if (!node) co_return node.error();
    co_return pfs_entry_id{PFS_ROOT_INO, *node, PFS_ROOT_GENERATION};
}

std::string FileSystem::cache_key(const pfs_entry_id& dir, std::string_view name) {
    return std::to_string(dir.owner_node) + ":" + std::to_string(dir.ino) + ":" + std::to_string(dir.generation) +
           "/" + std::string(name);
}

awaitable<Result<pfs_attr>> FileSystem::resolve(std::string_view path) {
    auto attr = co_await walk(path, options_.dir_cache_ttl.count() > 0);
    if (!attr && attr.error().code == -ESTALE && !dir_cache_.empty()) {
        // A cached directory is gone on the server: walk again, asking.
        dir_cache_.clear();
        attr = co_await walk(path, false);
    }
    co_return attr;
}

awaitable<Result<pfs_attr>> FileSystem::walk(std::string_view path, bool use_cache) {
    auto dir = co_await root();
    if (!dir) co_return dir.error();
    auto parts = components(path);
    if (parts.empty()) co_return co_await attr_call(*dir, PFS_MSG_GETATTR, encode(pfs_x_entry_id, *dir));
    // One LOOKUP per component, but directories on the way may come from
    // the cache; the last component is always asked for (fresh attributes).
    auto now = std::chrono::steady_clock::now();
    Result<pfs_attr> attr = Error{};
    pfs_entry_id at = *dir;
    bool striped = false;  // the root never is
    for (size_t i = 0; i < parts.size(); ++i) {
        bool last = i + 1 == parts.size();
        if (use_cache && !last) {
            auto hit = dir_cache_.find(cache_key(at, parts[i]));
            if (hit != dir_cache_.end() && hit->second.expires > now) {
                at = hit->second.id;
                striped = hit->second.striped;
                continue;
            }
        }
        auto where = co_await name_dir(at, striped, parts[i]);
        if (!where) co_return where.error();
        // A notice that arrives while the LOOKUP is out may be about what
        // its reply says: the reply (on another connection, or sent before
        // the change) may then be older than the notice, and is not cached.
        const uint64_t notices_before = notices_;
        attr = co_await attr_call(*where, PFS_MSG_LOOKUP, name_req(*where, parts[i]));
        if (!attr) break;
        striped = (attr->xattrs & PFS_ATTR_STRIPED) != 0;
        // The last one too: the parent of the next create or unlink in it.
        if ((attr->mode & S_IFMT) == S_IFDIR && options_.dir_cache_ttl.count() > 0 && notices_ == notices_before)
            dir_cache_[cache_key(at, parts[i])] = CachedDir{*where, attr->id, striped, now + options_.dir_cache_ttl};
        at = attr->id;
    }
    co_return attr;
}

awaitable<Result<const std::vector<pfs_entry_id>*>> FileSystem::shards_of(const pfs_entry_id& dir) {
    const std::string key = cache_key(dir, {});
    if (auto it = shards_.find(key); it != shards_.end()) co_return &it->second;
    auto body = co_await meta(dir, PFS_MSG_DIR_SHARDS, encode(pfs_x_entry_id, dir));
    if (!body) co_return body.error();
    auto list = std::make_unique<pfs_dir_shards>();
    if (auto st = decode_payload(*body, [&](pfs_xdr* x) { pfs_x_dir_shards(x, list.get()); }); !st)
        co_return st.error();
    if (list->ids[0].ino != dir.ino || list->ids[0].owner_node != dir.owner_node)
        co_return Error{PFS_E_PROTO, "DIR_SHARDS named another directory first"};
    auto& ids = shards_[key];
    ids.assign(list->ids, list->ids + list->count);
    co_return &ids;
}

awaitable<Result<pfs_entry_id>> FileSystem::name_dir(const pfs_entry_id& dir, bool striped, std::string_view name) {
    if (!striped || name == "." || name == "..") co_return dir;
    auto ids = co_await shards_of(dir);
    if (!ids) co_return ids.error();
    co_return (**ids)[pfs_dir_shard(name.data(), static_cast<uint32_t>(name.size()),
                                    static_cast<uint32_t>((*ids)->size()))];
}

awaitable<Result<std::vector<pfs_entry_id>>> FileSystem::shards(std::string_view path) {
    auto dir = co_await resolve(path);
    if (!dir) co_return dir.error();
    if ((dir->mode & S_IFMT) != S_IFDIR) co_return Error{-ENOTDIR, std::string(path) + " is not a directory"};
    auto ids = co_await shards_of(dir->id);
    if (!ids) co_return ids.error();
    co_return **ids;
}

std::optional<FileSystem::CachedDir> FileSystem::cached_dir(const pfs_entry_id& root,
                                                            std::span<const std::string_view> parts) const {
    CachedDir at{.parent = root, .id = root, .striped = false, .expires = {}};  // the root is never striped
    if (parts.empty()) return at;
    if (options_.dir_cache_ttl.count() <= 0) return std::nullopt;
    const auto now = std::chrono::steady_clock::now();
    for (const auto& part : parts) {
        auto hit = dir_cache_.find(cache_key(at.id, part));
        if (hit == dir_cache_.end() || hit->second.expires <= now) return std::nullopt;
        at = hit->second;
    }
    return at;
}

awaitable<Result<FileSystem::Parent>> FileSystem::resolve_parent(std::string_view path, bool fresh) {
    auto parts = components(path);
    if (parts.empty()) co_return Error{-EINVAL, "the root has no parent"};
    const std::string_view name = parts.back();
    parts.pop_back();
    auto top = co_await root();
    if (!top) co_return top.error();
    // Within dir_cache_ttl of its last lookup (and no notice about it
    // since), a directory's id is taken as the cache has it, as the
    // directories above a looked-up name are: the server checks the rest.
    std::optional<CachedDir> dir = fresh && !parts.empty() ? std::nullopt : cached_dir(*top, parts);
    const bool cached = dir.has_value() && !parts.empty();
    if (!dir) {
        std::string dir_path;
        for (const auto& part : parts) (dir_path += '/') += part;
        auto attr = co_await resolve(dir_path);
        if (!attr) co_return attr.error();
        if ((attr->mode & S_IFMT) != S_IFDIR) co_return Error{-ENOTDIR, dir_path + " is not a directory"};
        dir = CachedDir{.parent = {}, .id = attr->id, .striped = (attr->xattrs & PFS_ATTR_STRIPED) != 0, .expires = {}};
    }
    auto where = co_await name_dir(dir->id, dir->striped, name);
    if (!where) co_return where.error();
    co_return Parent{*where, std::string(name), cached};
}

awaitable<Result<pfs_attr>> FileSystem::stat(std::string_view path) { co_return co_await resolve(path); }

awaitable<Result<pfs_attr>> FileSystem::mkdir(std::string_view path, uint32_t mode, uint32_t meta_node,
                                               uint32_t stripes) {
    co_return co_await at_parent(path, [&](const Parent& parent) -> awaitable<Result<pfs_attr>> {
        if (meta_node != 0 || stripes != 0) {
            pfs_mkdir_on m{parent.dir, {}, mode, meta_node, stripes};
            if (!set_field(m.name, parent.name)) co_return Error{-ENAMETOOLONG, "name too long"};
            co_return co_await attr_call(parent.dir, PFS_MSG_MKDIR_ON, encode(pfs_x_mkdir_on, m));
        }
        pfs_create m{parent.dir, {}, mode, 0};
        if (!set_field(m.name, parent.name)) co_return Error{-ENAMETOOLONG, "name too long"};
        co_return co_await attr_call(parent.dir, PFS_MSG_MKDIR, encode(pfs_x_create, m));
    });
}

awaitable<Status> FileSystem::rmdir(std::string_view path) {
    co_return co_await at_parent(path, [&](const Parent& parent) -> awaitable<Status> {
        dir_cache_.clear();
        auto r = co_await meta(parent.dir, PFS_MSG_RMDIR, name_req(parent.dir, parent.name));
        if (!r) co_return r.error();
        co_return ok_status();
    });
}

awaitable<Status> FileSystem::unlink(std::string_view path) {
    co_return co_await at_parent(path, [&](const Parent& parent) -> awaitable<Status> {
        auto r = co_await meta(parent.dir, PFS_MSG_UNLINK, name_req(parent.dir, parent.name));
        if (!r) co_return r.error();
        co_return ok_status();
    });
}

awaitable<Status> FileSystem::rename(std::string_view from, std::string_view to, uint32_t flags) {
    // Both looked up: the rename may move directories the cache names.
    auto src = co_await resolve_parent(from, true);
    if (!src) co_return src.error();
    auto dst = co_await resolve_parent(to, true);
    if (!dst) co_return dst.error();
    auto m = std::make_unique<pfs_rename>();
    m->src_dir = src->dir;
    m->dst_dir = dst->dir;
    m->flags = flags;
    if (!set_field(m->src_name, src->name) || !set_field(m->dst_name, dst->name))
        co_return Error{-ENAMETOOLONG, "name too long"};
    auto payload = encode_payload([&](pfs_xdr* x) { pfs_x_rename(x, m.get()); });
    dir_cache_.clear();
    auto r = co_await meta(src->dir, PFS_MSG_RENAME, std::move(payload));
    if (!r) co_return r.error();
    co_return ok_status();
}

awaitable<Result<pfs_attr>> FileSystem::link(std::string_view existing, std::string_view path) {
    auto target = co_await resolve(existing);
    if (!target) co_return target.error();
    co_return co_await at_parent(path, [&](const Parent& parent) -> awaitable<Result<pfs_attr>> {
        pfs_link m{target->id, parent.dir, {}};
        if (!set_field(m.name, parent.name)) co_return Error{-ENAMETOOLONG, "name too long"};
        co_return co_await attr_call(parent.dir, PFS_MSG_LINK, encode(pfs_x_link, m));
    });
}

awaitable<Result<pfs_attr>> FileSystem::symlink(std::string_view target, std::string_view path) {
    co_return co_await at_parent(path, [&](const Parent& parent) -> awaitable<Result<pfs_attr>> {
        auto m = std::make_unique<pfs_symlink>();
        m->dir = parent.dir;
        if (!set_field(m->name, parent.name) || !set_field(m->target, target))
            co_return Error{-ENAMETOOLONG, "name or target too long"};
        auto payload = encode_payload([&](pfs_xdr* x) { pfs_x_symlink(x, m.get()); });
        co_return co_await attr_call(parent.dir, PFS_MSG_SYMLINK, std::move(payload));
    });
}

awaitable<Result<pfs_attr>> FileSystem::mknod(std::string_view path, uint32_t mode, uint32_t rdev) {
    if (!pfs_mknod_mode_valid(mode)) co_return Error{-EINVAL, "mknod makes FIFOs, sockets and devices"};
    co_return co_await at_parent(path, [&](const Parent& parent) -> awaitable<Result<pfs_attr>> {
        pfs_mknod m{parent.dir, {}, mode, rdev};
        if (!set_field(m.name, parent.name)) co_return Error{-ENAMETOOLONG, "name too long"};
        co_return co_await attr_call(parent.dir, PFS_MSG_MKNOD, encode(pfs_x_mknod, m));
    });
}

awaitable<Result<std::string>> FileSystem::readlink(std::string_view path) {
    auto attr = co_await resolve(path);
    if (!attr) co_return attr.error();
    auto body = co_await meta(attr->id, PFS_MSG_READLINK, encode(pfs_x_entry_id, attr->id));
    if (!body) co_return body.error();
    auto p = std::make_unique<pfs_path>();
    auto st = decode_payload(*body, [&](pfs_xdr* x) { pfs_x_path(x, p.get()); });
    if (!st) co_return st.error();
    co_return std::string(p->path);
}

awaitable<Result<std::vector<Entry>>> FileSystem::readdir(std::string_view path) {
    auto dir = co_await resolve(path);
    if (!dir) co_return dir.error();
    co_return co_await readdir(dir->id);
}

awaitable<Result<std::vector<Entry>>> FileSystem::readdir(const pfs_entry_id& dir) {
    co_return co_await list(dir, PFS_MSG_READDIR);
}

awaitable<Result<std::vector<Entry>>> FileSystem::readdir_plus(std::string_view path) {
    auto dir = co_await resolve(path);
    if (!dir) co_return dir.error();
    co_return co_await list(dir->id, PFS_MSG_READDIR_PLUS);
}

awaitable<Result<std::vector<Entry>>> FileSystem::list(const pfs_entry_id& dir, uint16_t type) {
    const bool plus = type == PFS_MSG_READDIR_PLUS;
    std::vector<Entry> entries;
    pfs_readdir req{dir, 0, 1024};
    for (;;) {
        // A striped directory's cookies name the shard to ask next.
        if (const uint32_t shard = pfs_cookie_shard(req.cookie); shard > 0) {
            auto ids = co_await shards_of(dir);
            if (!ids) co_return ids.error();
            if (shard >= (*ids)->size()) co_return Error{PFS_E_PROTO, "readdir cookie of no shard"};
            req.dir = (**ids)[shard];
        }
        auto body = co_await meta(req.dir, type, encode(pfs_x_readdir, req));
        if (!body) co_return body.error();
        pfs_dir_page page{};
        std::vector<pfs_dirent_plus> ents;
        auto st = decode_payload(*body, [&](pfs_xdr* x) {
            if (pfs_x_dir_page(x, &page)) return;
            ents.resize(page.count);
            for (auto& e : ents)
                if (plus ? pfs_x_dirent_plus(x, &e) : pfs_x_dirent(x, &e.ent)) return;
        });
        if (!st) co_return st.error();
        for (const auto& e : ents)
            entries.push_back(
                Entry{e.ent.name, e.ent.id, e.ent.type, e.has_attr ? std::optional(e.attr) : std::nullopt});
        // An empty page moves on only to another shard.
        if (page.eof || (ents.empty() && pfs_cookie_shard(page.next_cookie) <= pfs_cookie_shard(req.cookie))) break;
        req.cookie = page.next_cookie;
    }
    co_return entries;
}

awaitable<Result<pfs_attr>> FileSystem::setattr(std::string_view path, const pfs_setattr& changes) {
    auto attr = co_await resolve(path);
    if (!attr) co_return attr.error();
    pfs_setattr m = changes;
    m.id = attr->id;
    co_return co_await attr_call(attr->id, PFS_MSG_SETATTR, encode(pfs_x_setattr, m));
}

awaitable<Status> FileSystem::truncate(std::string_view path, uint64_t size) {
    pfs_setattr m{};
    m.valid = PFS_SET_SIZE;
    m.size = size;
    auto r = co_await setattr(path, m);
    if (!r) co_return r.error();
    co_return ok_status();
}

awaitable<Status> FileSystem::set_xattr(std::string_view path, std::string_view name, std::string_view value,
                                        uint32_t flags) {
    auto attr = co_await resolve(path);
    if (!attr) co_return attr.error();
    auto payload = xattr_req(attr->id, name, flags);
    if (payload) payload->insert(payload->end(), value.begin(), value.end());
    auto r = co_await meta(attr->id, PFS_MSG_SETXATTR, std::move(payload));
    if (!r) co_return r.error();
    co_return ok_status();
}

awaitable<Result<std::string>> FileSystem::get_xattr(std::string_view path, std::string_view name) {
    auto attr = co_await resolve(path);
    if (!attr) co_return attr.error();
    auto body = co_await meta(attr->id, PFS_MSG_GETXATTR, xattr_req(attr->id, name, 0));
    if (!body) co_return body.error();
    co_return std::string(body->begin(), body->end());
}

awaitable<Result<std::vector<std::string>>> FileSystem::list_xattrs(std::string_view path) {
    auto attr = co_await resolve(path);
    if (!attr) co_return attr.error();
    auto body = co_await meta(attr->id, PFS_MSG_LISTXATTR, encode(pfs_x_entry_id, attr->id));
    if (!body) co_return body.error();
    std::vector<std::string> names;
    std::string current;
    for (uint8_t c : *body) {
        if (c == 0) {
            names.push_back(std::move(current));
            current.clear();
        } else {
            current += static_cast<char>(c);
        }
    }
    co_return names;
}

awaitable<Status> FileSystem::remove_xattr(std::string_view path, std::string_view name) {
    auto attr = co_await resolve(path);
    if (!attr) co_return attr.error();
    auto r = co_await meta(attr->id, PFS_MSG_REMOVEXATTR, xattr_req(attr->id, name, 0));
    if (!r) co_return r.error();
    co_return ok_status();
}

awaitable<Result<pfs_statfs>> FileSystem::statfs() {
    auto dir = co_await root();
    if (!dir) co_return dir.error();
    auto body = co_await meta(*dir, PFS_MSG_STATFS, Bytes{});
    if (!body) co_return body.error();
    co_return decode(*body, pfs_x_statfs);
}

awaitable<Result<pfs_pattern>> FileSystem::get_pattern(std::string_view path) {
    auto dir = co_await resolve(path);
    if (!dir) co_return dir.error();
    auto body = co_await meta(dir->id, PFS_MSG_GET_PATTERN, encode(pfs_x_entry_id, dir->id));
    if (!body) co_return body.error();
    co_return decode(*body, pfs_x_pattern);
}

awaitable<Status> FileSystem::set_pattern(std::string_view path, const pfs_pattern& pattern) {
    auto dir = co_await resolve(path);
    if (!dir) co_return dir.error();
    auto r = co_await meta(dir->id, PFS_MSG_SET_PATTERN, encode(pfs_x_set_pattern, pfs_set_pattern{dir->id, pattern}));
    if (!r) co_return r.error();
    co_return ok_status();
}

awaitable<Result<StripeLayout>> FileSystem::layout(std::string_view path) {
    auto file = co_await open(path, O_RDONLY);
    if (!file) co_return file.error();
    auto layout = file->layout;
    (void)co_await close(*file);
    co_return layout;
}

awaitable<Result<StripeLayout>> FileSystem::layout(const pfs_entry_id& id) {
    uint64_t epoch = 0;
    auto reply = co_await open_call(id, PFS_MSG_OPEN, encode(pfs_x_open, pfs_open{id, O_RDONLY}), &epoch, false);
    auto file = opened(std::move(reply), epoch, O_RDONLY);
    if (!file) co_return file.error();
    auto layout = file->layout;
    (void)co_await close(*file);
    co_return layout;
}

Result<OpenFile> FileSystem::opened(Result<OpenReply> reply, uint64_t epoch, int flags) {
    if (!reply) return reply.error();
    auto file = decode_open(reply->body);
    if (!file) return file.error();
    // An inline file's content came whole, or not at all.
    if (reply->data && is_inline_layout(file->layout) && reply->data->size() == file->attr.size)
        file->content = std::move(reply->data);
    file->untracked = reply->untracked;
    file->open_epoch = epoch;
    file->open_flags = static_cast<uint32_t>(flags & O_ACCMODE);
    // Open on the server now: the session must outlive it.
    file->owner = next_owner_++;
    keeper_.hold();
    return file;
}

// OPEN_NAME looks a regular file up and opens it in one round trip; other
// types, and files of another metadata server (no layout: not opened), come
// back only looked up and are opened by id, as are the root, "." and "..".
awaitable<Result<FileSystem::OpenReply>> FileSystem::open_existing(std::string_view path, uint32_t flags,
                                                                   uint64_t* epoch) {
    const bool read_only = (flags & O_ACCMODE) == O_RDONLY;
    auto parts = components(path);
    if (!parts.empty() && parts.back() != "." && parts.back() != "..") {
        co_return co_await at_parent(path, [&](const Parent& parent) -> awaitable<Result<OpenReply>> {
            pfs_open_name m{parent.dir, {}, flags};
            if (!set_field(m.name, parent.name)) co_return Error{-ENAMETOOLONG, "name too long"};
            auto reply =
                co_await open_call(parent.dir, PFS_MSG_OPEN_NAME, encode(pfs_x_open_name, m), epoch, read_only);
            if (!reply) co_return reply;
            auto found = decode_open(reply->body);
            if (!found) co_return found.error();
            if ((found->attr.mode & S_IFMT) == S_IFREG && !found->layout.targets.empty()) co_return reply;
            co_return co_await open_call(found->attr.id, PFS_MSG_OPEN,
                                         encode(pfs_x_open, pfs_open{found->attr.id, flags}), epoch, read_only);
        });
    }
    auto attr = co_await resolve(path);
    if (!attr) co_return attr.error();
    co_return co_await open_call(attr->id, PFS_MSG_OPEN, encode(pfs_x_open, pfs_open{attr->id, flags}), epoch,
                                 read_only);
}

awaitable<Result<OpenFile>> FileSystem::open(std::string_view path, int flags, uint32_t mode) {
    Result<OpenReply> reply = Error{};
    uint64_t epoch = 0;
    if (flags & O_CREAT) {
        reply = co_await at_parent(path, [&](const Parent& parent) -> awaitable<Result<OpenReply>> {
            // An existing file is opened with the permissions this open asks of it.
            const uint32_t create_flags = PFS_CREATE_OPEN | PFS_CREATE_ACCESS(flags) |
                                          ((flags & O_EXCL) ? uint32_t{PFS_CREATE_EXCL} : 0u);
            pfs_create m{parent.dir, {}, mode & 07777, create_flags};
            if (!set_field(m.name, parent.name)) co_return Error{-ENAMETOOLONG, "name too long"};
            co_return co_await open_call(parent.dir, PFS_MSG_CREATE, encode(pfs_x_create, m), &epoch, false);
        });
    } else {
        reply = co_await open_existing(path, static_cast<uint32_t>(flags), &epoch);
    }
    auto file = opened(std::move(reply), epoch, flags);
    if (!file) co_return file.error();
    if ((file->attr.mode & S_IFMT) == S_IFDIR && (flags & O_ACCMODE) != O_RDONLY) {
        (void)co_await close(*file);
        co_return Error{-EISDIR, std::string(path) + " is a directory"};
    }
    if ((flags & O_TRUNC) && (flags & O_ACCMODE) != O_RDONLY && file->attr.size > 0) {
        pfs_setattr m{};
        m.id = file->attr.id;
        m.valid = PFS_SET_SIZE;
        auto attr = co_await attr_call(file->attr.id, PFS_MSG_SETATTR, encode(pfs_x_setattr, m));
        if (!attr) {
            (void)co_await close(*file);
            co_return attr.error();
        }
        file->attr = *attr;
    }
    co_return file;
}

awaitable<Status> FileSystem::check(OpenFile& file) {
    const pfs_entry_id id = file.attr.id;
    if (file.gone) co_return Error{-ESTALE, "inode " + std::to_string(id.ino) + " is gone"};
    if (file.untracked) co_return ok_status();  // nothing of ours on the server to lose
    co_await keeper_.verify(id.owner_node);
    if (!keeper_.lost(id.owner_node, file.open_epoch)) co_return ok_status();
    // Our open went with the session: open the file again, by its id. A
    // file that is gone was unlinked and freed meanwhile; its chunks may
    // be deleted, or another file's by now.
    uint64_t epoch = 0;
    auto body = co_await meta(id, PFS_MSG_OPEN, encode(pfs_x_open, pfs_open{id, file.open_flags}), &epoch);
    if (!body) {
        int code = body.error().code;
        if (code != -ENOENT && code != -ESTALE) co_return body.error();
        file.gone = true;
        co_return Error{-ESTALE, "inode " + std::to_string(id.ino) + " was lost with our session on metadata server " +
                                     std::to_string(id.owner_node) + " and is gone"};
    }
    file.open_epoch = epoch;
    co_return ok_status();
}

awaitable<Status> FileSystem::refresh_layout(OpenFile& file) {
    auto body = co_await meta(file.attr.id, PFS_MSG_GET_LAYOUT, encode(pfs_x_entry_id, file.attr.id));
    if (!body) co_return body.error();
    auto wire = decode(*body, pfs_x_layout);
    if (!wire) co_return wire.error();
    // What the inline target acknowledged was synced to the new targets
    // when the data moved: only their verifiers count from here.
    file.layout = from_wire(*wire);
    co_return ok_status();
}

awaitable<Result<size_t>> FileSystem::read(OpenFile& file, uint64_t offset, std::span<uint8_t> out) {
    if (auto st = co_await check(file); !st) co_return st.error();
    // Our own writes count even before the metadata server has heard of them.
    uint64_t size = std::max<uint64_t>(file.attr.size, file.written_end);
    if (offset >= size) co_return size_t{0};
    size_t n = static_cast<size_t>(std::min<uint64_t>(out.size(), size - offset));
    // Read with the open, while the file is no larger than it was then;
    // once it is known to have grown, where its data is now.
    if (file.content && (file.open_flags & O_ACCMODE) == O_RDONLY && size > file.content->size())
        file.content.reset();
    if (file.content && (file.open_flags & O_ACCMODE) == O_RDONLY) {
        std::copy_n(file.content->begin() + static_cast<ptrdiff_t>(offset), n, out.begin());
        co_return n;
    }
    auto st = co_await with_layout(file, [&](const StripeLayout& layout) {
        return io_.read(layout, file.attr.id, offset, out.first(n));
    });
    if (!st) co_return st.error();
    co_return n;
}

awaitable<Result<pfs_attr>> FileSystem::attr(OpenFile& file) {
    if (auto st = co_await check(file); !st) co_return st.error();
    auto now = co_await attr_call(file.attr.id, PFS_MSG_GETATTR, encode(pfs_x_entry_id, file.attr.id));
    if (!now) co_return now.error();
    file.attr = *now;
    now->size = std::max<uint64_t>(now->size, file.written_end);
    co_return now;
}

awaitable<Status> FileSystem::write(OpenFile& file, uint64_t offset, std::span<const uint8_t> data) {
    if ((file.attr.mode & S_IFMT) != S_IFREG) co_return Error{-EINVAL, "not a regular file"};
    if (offset > PFS_MAX_FILE_OFFSET || data.size() > PFS_MAX_FILE_OFFSET - offset)
        co_return Error{-EFBIG, "a write past the largest file offset"};
    // Writes nothing and changes nothing, not even the size (POSIX).
    if (data.empty()) co_return ok_status();
    if (auto checked = co_await check(file); !checked) co_return checked;
    bool recorded = false;
    auto st = co_await with_layout(file, [&](const StripeLayout& layout) {
        recorded = is_inline_layout(layout);
        return io_.write(layout, file.attr.id, offset, data, &file.verifiers);
    });
    if (!st) co_return st;
    file.written_end = std::max<uint64_t>(file.written_end, offset + data.size());
    // The inline store recorded the size and mtime with the data: no
    // report owed for it (a file never moves back inline).
    if (recorded)
        file.attr.size = std::max<uint64_t>(file.attr.size, file.written_end);
    else
        file.unreported = true;
    co_return ok_status();
}

awaitable<Status> FileSystem::report_size(OpenFile& file, SizeReport how) {
    // Also a write inside the size: its mtime, and the server counts the
    // file's st_blocks again.
    const bool news = file.unreported || file.written_end > file.attr.size;
    // fsync reports even with nothing new, through any handle of a regular
    // file (a read-only one too: such a report needs no permission): the
    // server then answers once its journal has everything before, the lazy
    // reports of other handles' and other clients' closes included.
    const bool lazy = how == SizeReport::lazy;
    const bool regular = (file.attr.mode & S_IFMT) == S_IFREG;
    if (!news && (lazy || !regular)) co_return ok_status();
    pfs_setattr m{};
    m.id = file.attr.id;
    m.valid = PFS_SET_SIZE_EXTEND;
    if (news) m.valid |= PFS_SET_MTIME | PFS_SET_MTIME_NOW;  // the server's clock
    if (lazy) m.valid |= PFS_SET_LAZY;
    m.size = file.written_end;
    auto attr = co_await attr_call(file.attr.id, PFS_MSG_SETATTR, encode(pfs_x_setattr, m));
    if (!attr) co_return attr.error();
    file.attr = *attr;
    file.unreported = false;
    co_return ok_status();
}

awaitable<Status> FileSystem::fsync(OpenFile& file) {
    if (auto st = co_await check(file); !st) co_return st;
    if ((file.attr.mode & S_IFMT) == S_IFREG) {
        auto st = co_await with_layout(file, [&](const StripeLayout& layout) {
            return io_.sync(layout, file.attr.id, &file.verifiers);
        });
        if (!st) co_return st;
    }
    co_return co_await report_size(file, SizeReport::durable);
}

awaitable<Status> FileSystem::close(OpenFile& file) {
    // Closed already: a second CLOSE would undo another handle's open.
    if (file.owner == 0) co_return Error{-EBADF, "the file is closed"};
    const pfs_entry_id id = file.attr.id;
    Status st = file.gone ? ok_status() : co_await report_size(file, SizeReport::lazy);
    if (file.locked) {
        // What fcntl and flock locks do at the last close of a file.
        auto posix = co_await unlock(file, PFS_LOCK_POSIX);
        auto whole = co_await unlock(file, PFS_LOCK_FLOCK);
        if (st && !posix) st = posix;
        if (st && !whole) st = whole;
        file.locked = false;
    }
    // An open the server lost with our session is not closed there: the
    // session we have now may hold another open of the file.
    Result<Bytes> r = Bytes{};
    if (!file.gone && !file.untracked && !keeper_.lost(id.owner_node, file.open_epoch))
        r = co_await meta(id, PFS_MSG_CLOSE, encode(pfs_x_entry_id, id));
    if (file.owner != 0) {
        file.owner = 0;
        keeper_.release();
    }
    if (!st) co_return st;
    if (!r) co_return r.error();
    co_return ok_status();
}

}  // namespace pfs::client
