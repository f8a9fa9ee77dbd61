#include "commands.hpp"

#include <algorithm>
#include <cstdint>

namespace pfs::ctl {

const std::vector<Command>& all_commands() {
    static const std::vector<Command> commands = {
        {"node", "list", "[--type meta|storage|client]", "list registered nodes with reachability and last heartbeat",
         {"type"}, 0, 0, node_list},
        {"target", "list", "[--state] [--space]", "list storage targets; --state: health, --space: capacity",
         {"state", "space"}, 0, 0, target_list},
        {"target", "set-state", "TARGET good|needs-resync|bad", "override a target's consistency state (admin)",
         {}, 2, 2, target_set_state},
        {"pool", "list", "", "list storage pools and their targets", {}, 0, 0, pool_list},
        {"pool", "create", "NAME [--id N]", "create a storage pool", {"id"}, 1, 1, pool_create},
        {"pool", "assign", "POOL TARGET [TARGET...]", "move targets into a pool (POOL by id or name)",
         {}, 2, SIZE_MAX, pool_assign},
        {"df", "", "", "free space and inodes of metadata nodes and storage targets", {}, 0, 0, df},
        {"entry", "info", "PATH", "type, id, attributes and stripe layout (files) or pattern (directories)",
         {}, 1, 1, entry_info},
        {"entry", "set",
         "[--chunk-size SIZE] [--num-targets N] [--pool POOL] [--inline-max SIZE] [--dir-stripes N] DIR",
         "change the stripe pattern a directory gives new files and directories",
         {"chunk-size", "num-targets", "pool", "inline-max", "dir-stripes"}, 1, 1, entry_set},
        {"stat", "", "PATH", "attributes of a file, directory or symlink", {}, 1, 1, stat_entry},
        {"ls", "", "[-l] [PATH]", "list a directory (-l: with attributes)", {"long"}, 0, 1, list_dir},
        {"mkdir", "", "[-p] [--meta-node N] [--stripe N] PATH",
         "create a directory (-p: with its parents, fine if it exists; --meta-node: owned by metadata server N; "
         "--stripe: its entries spread over N metadata servers, and so its subdirectories')",
         {"parents", "meta-node", "stripe"}, 1, 1, make_dir},
        {"rm", "", "[-r] PATH", "remove a file or symlink (-r: also a directory tree)", {"recursive"}, 1, 1,
         remove_entry},
        {"mv", "", "SRC DST", "rename an entry (into DST if DST is a directory)", {}, 2, 2, move_entry},
        {"cp", "", "[-r] SRC DST", "copy into or out of PFS: one side is pfs:/PATH (-r: directory trees)",
         {"recursive"}, 2, 2, copy},
        {"cat", "", "PATH", "write a file's contents to stdout", {}, 1, 1, cat},
        {"stats", "server", "[--interval S] [--by-type]",
         "requests and MB/s read and written per server (per message type with --by-type)",
         {"interval", "by-type"}, 0, 0, stats_server},
        {"stats", "client", "[MOUNTPOINT]",
         "what this node's pfs.ko mounts moved, per RDMA rail (state, requests, bytes, errors), per transport "
         "and into or out of GPU memory",
         {}, 0, 1, stats_client},
        {"fsck", "", "--readonly | --repair",
         "check the namespace against the chunk files (--repair: then delete orphan chunks and empty orphan "
         "directories): exit 0 clean, 1 problems found, 2 could not check",
         {"readonly", "repair"}, 0, 0, fsck},
        {"auth", "key", "client|admin",
         "print the key file of a role (mode 0600 on the node that uses it), from the cluster secret in --auth-file",
         {}, 1, 1, auth_key},
    };
    return commands;
}

const Command* find_command(std::string_view noun, std::string_view verb) {
    for (const auto& c : all_commands())
        if (c.noun == noun && c.verb == verb) return &c;
    return nullptr;
}

bool is_noun(std::string_view noun) {
    const auto& all = all_commands();
    return std::any_of(all.begin(), all.end(), [&](const Command& c) { return c.noun == noun; });
}

std::string command_words(const Command& cmd) {
    std::string w(cmd.noun);
    if (!cmd.verb.empty()) (w += ' ') += cmd.verb;
    return w;
}

std::string usage_line(const Command& cmd) {
    std::string line = "pfs-ctl " + command_words(cmd);
    if (!cmd.synopsis.empty()) (line += ' ') += cmd.synopsis;
    return line;
}

std::string commands_help() {
    // Summaries line up after the heads; a head too long for that gets its summary below.
    constexpr size_t kMaxWidth = 36;
    std::vector<std::pair<std::string, std::string_view>> lines;
    size_t width = 0;
    for (const auto& cmd : all_commands()) {
        std::string head = command_words(cmd);
        if (!cmd.synopsis.empty()) (head += ' ') += cmd.synopsis;
        if (head.size() <= kMaxWidth) width = std::max(width, head.size());
        lines.emplace_back(std::move(head), cmd.summary);
    }
    std::string out = "Commands:\n";
    for (const auto& [head, summary] : lines) {
        out += "  " + head;
        if (head.size() > width) out += "\n" + std::string(width + 4, ' ');
        else out += std::string(width - head.size() + 2, ' ');
        out += summary;
        out += '\n';
    }
    out += "  help" + std::string(width - 4 + 2, ' ') + "show this help\n";
    return out;
}

}  // namespace pfs::ctl
