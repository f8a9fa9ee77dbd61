// stats client: what pfs.ko's mounts on this node moved, per rail, per
// transport and into or out of GPU memory (from /proc/self/mountstats;
// $PFS_MOUNTSTATS names another file).
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "exit_status.hpp"
#include "mountstats.hpp"
#include "table.hpp"

namespace pfs::ctl {
namespace {

int64_t value_of(const MountCounters& c, const char* key) {
    auto it = c.values.find(key);
    return it == c.values.end() ? 0 : it->second;
}

std::string render_json(const std::vector<PfsMount>& mounts) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& m : mounts) {
        nlohmann::json rails = nlohmann::json::object(), transports = nlohmann::json::object();
        nlohmann::json gpu = nlohmann::json::object();
        for (const auto& c : m.counters) {
            nlohmann::json j(c.values);
            if (!c.state.empty()) j["state"] = c.state;
            if (c.kind == "gpu") gpu = j;
            else (c.kind == "rail" ? rails : transports)[c.name] = j;
        }
        out.push_back({{"device", m.device}, {"mount_point", m.mount_point}, {"rails", rails},
                       {"transports", transports}, {"gpu", gpu}});
    }
    return nlohmann::json{{"mounts", out}}.dump(2) + "\n";
}

std::string render_table(const std::vector<PfsMount>& mounts) {
    Table table({{"MOUNT"}, {"PATH"}, {"STATE"}, {"REQUESTS", Align::right}, {"BYTES", Align::right},
                 {"ERRORS", Align::right}, {"CONNS", Align::right}});
    for (const auto& m : mounts) {
        for (const auto& c : m.counters) {
            // Rails and GPU transfers count bytes and errors; transports, bytes each way and connections.
            const bool transport = c.kind == "transport";
            const int64_t bytes =
                transport ? value_of(c, "bulk_sent") + value_of(c, "bulk_received") : value_of(c, "bytes");
            table.add_row({m.mount_point, transport ? c.name : c.kind + " " + c.name, transport ? "-" : c.state,
                           std::to_string(value_of(c, "requests")),
                           format_bytes(static_cast<uint64_t>(std::max<int64_t>(bytes, 0))),
                           transport ? "-" : std::to_string(value_of(c, "errors")),
                           transport ? std::to_string(value_of(c, "conns")) : "-"});
        }
    }
    if (mounts.empty()) return "no pfs mount on this node\n";
    return table.render();
}

}  // namespace

Result<std::string> stats_client(Context& ctx) {
    const char* env = std::getenv("PFS_MOUNTSTATS");
    const std::string file = env && *env ? env : "/proc/self/mountstats";
    std::ifstream in(file);
    if (!in) return unreachable("cannot read " + file);
    std::stringstream text;
    text << in.rdbuf();
    auto mounts = parse_mountstats(text.str());
    if (!ctx.args.empty()) {
        // "/mnt/pfs/" names /mnt/pfs too.
        auto normal = [](const std::string& p) {
            std::string n = std::filesystem::path(p).lexically_normal().string();
            while (n.size() > 1 && n.back() == '/') n.pop_back();
            return n;
        };
        std::erase_if(mounts, [&](const PfsMount& m) { return normal(m.mount_point) != normal(ctx.args[0]); });
        if (mounts.empty()) return refused(ctx.args[0] + " is not a pfs mount point");
    }
    return ctx.json ? render_json(mounts) : render_table(mounts);
}

}  // namespace pfs::ctl
