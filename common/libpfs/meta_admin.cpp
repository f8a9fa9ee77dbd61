#include "meta_admin.hpp"

namespace pfs::client {

awaitable<Result<std::vector<pfs_detached_dir>>> list_detached(Cluster& cluster, uint32_t meta_node) {
    std::vector<pfs_detached_dir> out;
    pfs_list_detached req{0};
    for (;;) {
        auto body = co_await cluster.call_meta_ok(meta_node, PFS_MSG_LIST_DETACHED, encode(pfs_x_list_detached, req));
        if (!body) co_return body.error();
        auto page = decode(*body, pfs_x_detached_page);
        if (!page) co_return page.error();
        for (uint32_t i = 0; i < page->count; ++i) {
            if (page->dirs[i].id.ino <= req.after) co_return Error{PFS_E_PROTO, "LIST_DETACHED went backwards"};
            out.push_back(page->dirs[i]);
            req.after = page->dirs[i].id.ino;
        }
        if (page->eof || page->count == 0) co_return out;
    }
}

awaitable<Result<std::vector<uint8_t>>> entry_states(Cluster& cluster, uint32_t owner,
                                                     std::span<const pfs_entry_id> dirs) {
    std::vector<uint8_t> out;
    for (size_t first = 0; first < dirs.size(); first += PFS_ENTRY_CHECK_MAX) {
        pfs_entry_check req{};
        for (size_t i = first; i < dirs.size() && req.count < PFS_ENTRY_CHECK_MAX; ++i) req.ids[req.count++] = dirs[i];
        auto body = co_await cluster.call_meta_ok(owner, PFS_MSG_ENTRY_CHECK, encode(pfs_x_entry_check, req));
        if (!body) co_return body.error();
        auto states = decode(*body, pfs_x_entry_states);
        if (!states) co_return states.error();
        if (states->count != req.count) co_return Error{PFS_E_PROTO, "ENTRY_CHECK answered the wrong count"};
        out.insert(out.end(), states->states, states->states + states->count);
    }
    co_return out;
}

}  // namespace pfs::client
