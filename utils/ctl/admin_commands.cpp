// Commands that change the map (pool create, pool assign, target
// set-state) and hand out keys (auth key).
#include "commands.hpp"
#include "daemon.hpp"
#include "exit_status.hpp"
#include "views.hpp"

namespace pfs::ctl {
namespace {

// What a mutation prints: a confirmation, or {"ok":true} with --json.
std::string done(const Context& ctx, const std::string& what) {
    return ctx.json ? render_json({{"ok", true}}) : what + "\n";
}

}  // namespace

Result<std::string> pool_create(Context& ctx) {
    uint32_t id = 0;
    if (ctx.options.has("id")) {
        auto parsed = parse_id(ctx.options.get<std::string>("id"), "pool id");
        if (!parsed) return parsed.error();
        id = *parsed;
    }
    auto created = ctx.mgmt.create_pool(id, ctx.args[0]);
    if (!created) return created.error();
    if (ctx.json) return render_json({{"pool_id", created->pool_id}, {"name", text(created->name)}});
    return "created pool " + labelled(created->pool_id, text(created->name)) + "\n";
}

Result<std::string> pool_assign(Context& ctx) {
    std::vector<uint32_t> target_ids;
    for (size_t i = 1; i < ctx.args.size(); ++i) {
        auto id = parse_id(ctx.args[i], "target id");
        if (!id) return id.error();
        target_ids.push_back(*id);
    }
    // Check everything first, so that a typo does not leave half the targets moved.
    auto snap = fetch(ctx.mgmt, kPools | kTargets);
    if (!snap) return snap.error();
    auto pool = resolve_pool(*snap, ctx.args[0]);
    if (!pool) return pool.error();
    for (uint32_t id : target_ids)
        if (!snap->target(id)) return refused("unknown target: no target " + std::to_string(id));

    std::string moved;
    for (uint32_t id : target_ids) {
        auto st = ctx.mgmt.assign_pool(id, pool->pool_id);
        if (!st) {
            if (moved.empty()) return st.error();
            return Error{st.error().code, st.error().message + " (targets " + moved + " were moved already)"};
        }
        moved += (moved.empty() ? "" : ", ") + std::to_string(id);
    }
    std::string noun = target_ids.size() == 1 ? "target " : "targets ";
    return done(ctx, noun + moved + " now in pool " + labelled(pool->pool_id, text(pool->name)));
}

Result<std::string> target_set_state(Context& ctx) {
    auto id = parse_id(ctx.args[0], "target id");
    if (!id) return id.error();
    auto state = parse_consistency(ctx.args[1]);
    if (!state) return state.error();
    auto st = ctx.mgmt.set_target_state(*id, *state);
    if (!st) return st.error();
    return done(ctx, "target " + std::to_string(*id) + " consistency set to " + consistency_name(*state));
}

Result<std::string> auth_key(Context& ctx) {
    auto role = auth::parse_role(ctx.args[0]);
    if (!role || *role == auth::Role::server)
        return usage_error("auth key: the role is client or admin (servers hold the cluster secret itself)");
    auto secret = daemon::load_secret(ctx.options);
    if (!secret) return unreachable(secret.error().message);
    auto text = secret->key_file(*role);
    if (!text) return refused("auth key: " + text.error().message);
    if (ctx.json) return render_json({{"role", auth::role_name(*role)}, {"key_file", *text}});
    return *text;
}

}  // namespace pfs::ctl
