// pfs-ctl's commands: "NOUN VERB [ARGS]", one function each, producing the
// text to print on stdout (a table, or one JSON document with --json).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "config.hpp"
#include "fs_client.hpp"
#include "mgmt_client.hpp"

namespace pfs::ctl {

struct Context {
    MgmtClient& mgmt;
    const Options& options;         // --type, --state, --space, --id, ...
    std::vector<std::string> args;  // the words after NOUN VERB
    bool json = false;
    std::unique_ptr<FsClient> fs_client;
    // What pfs-ctl exits with after printing the output (fsck: 1 = problems found).
    int exit_status = 0;

    // The file system, connected on first use (fs_views.cpp).
    Result<FsClient*> fs();
};

using CommandFn = Result<std::string> (*)(Context&);

struct Command {
    std::string_view noun;
    std::string_view verb;
    std::string_view synopsis;  // arguments and flags, e.g. "NAME [--id N]"
    std::string_view summary;   // one line
    std::vector<std::string_view> flags;  // the per-command options it takes
    size_t min_args = 0;
    size_t max_args = 0;  // SIZE_MAX: no limit
    CommandFn run = nullptr;
};

// Options that only some commands take; main() checks them against Command::flags.
inline constexpr std::string_view kCommandFlags[] = {
    "type", "state", "space", "id", "parents", "long", "recursive", "chunk-size", "num-targets", "pool",
    "interval", "by-type", "readonly", "repair"};

const std::vector<Command>& all_commands();
const Command* find_command(std::string_view noun, std::string_view verb);
bool is_noun(std::string_view noun);
// "NOUN VERB"
std::string command_words(const Command& cmd);
// "pfs-ctl NOUN VERB SYNOPSIS"
std::string usage_line(const Command& cmd);
// Every command with its one-line summary, for --help and "pfs-ctl help".
std::string commands_help();

// The commands themselves (list_commands.cpp, df.cpp, admin_commands.cpp,
// entry_commands.cpp, fs_commands.cpp, transfer_commands.cpp).
Result<std::string> node_list(Context& ctx);
Result<std::string> target_list(Context& ctx);
Result<std::string> pool_list(Context& ctx);
Result<std::string> df(Context& ctx);
Result<std::string> pool_create(Context& ctx);
Result<std::string> pool_assign(Context& ctx);
Result<std::string> target_set_state(Context& ctx);
Result<std::string> auth_key(Context& ctx);
Result<std::string> entry_info(Context& ctx);
Result<std::string> entry_set(Context& ctx);
Result<std::string> stat_entry(Context& ctx);
Result<std::string> make_dir(Context& ctx);
Result<std::string> list_dir(Context& ctx);
Result<std::string> remove_entry(Context& ctx);
Result<std::string> move_entry(Context& ctx);
Result<std::string> copy(Context& ctx);
Result<std::string> cat(Context& ctx);
// stats_command.cpp, fsck_command.cpp
Result<std::string> stats_server(Context& ctx);
Result<std::string> stats_client(Context& ctx);  // stats_client.cpp
Result<std::string> fsck(Context& ctx);

}  // namespace pfs::ctl
