// pfs-ctl: the administration tool. Asks pfs-mgmtd about nodes, targets and
// pools and changes them, and works on the file system itself (entries,
// stripe patterns, copies in and out); tables for people, --json for scripts.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "commands.hpp"
#include "exit_status.hpp"
#include "log.hpp"
#include "rdma/rails.hpp"
#include "rdma/verbs.hpp"

using namespace pfs;
using namespace pfs::ctl;

namespace {

constexpr const char* kSummary =
    "PFS administration: nodes, storage targets, storage pools and free space, as reported by pfs-mgmtd;\n"
    "entries, stripe patterns and copies in and out of the file system.\n"
    "Exit status: 0 done, 1 refused by a server or a file system error (no such file, ...), 2 usage error,\n"
    "3 a server unreachable or authentication failed; fsck: 0 clean, 1 problems found, 2 not checked.";

int fail(const Error& e) {
    std::fprintf(stderr, "pfs-ctl: %s\n", e.message.c_str());
    if (e.code == kExitUsage && e.message.find("usage: ") == std::string::npos)
        std::fputs("Try 'pfs-ctl help' for the list of commands.\n", stderr);
    return e.code & 0xff;
}

void declare_options(Options& options) {
    MgmtClient::add_options(options);
    options.add()
        ("json", po::bool_switch(), "print one JSON document instead of tables")
        ("type", po::value<std::string>()->value_name("TYPE"), "node list: only nodes of TYPE (meta, storage, client)")
        ("state", po::bool_switch(), "target list: add reachability and consistency")
        ("space", po::bool_switch(), "target list: add capacity and capacity pool")
        ("id", po::value<std::string>()->value_name("N"), "pool create: the id for the new pool")
        ("parents,p", po::bool_switch(), "mkdir: create missing parents; no error if the directory exists")
        ("meta-node", po::value<std::string>()->value_name("N"),
         "mkdir: the metadata server (node id) that is to own the new directory")
        ("stripe", po::value<std::string>()->value_name("N"),
         "mkdir: stripe the new directory's entries over N metadata servers (by name hash); its "
         "subdirectories inherit it")
        ("dir-stripes", po::value<std::string>()->value_name("N"),
         "entry set: new subdirectories are striped over N metadata servers (0, 1: not striped)")
        ("long,l", po::bool_switch(), "ls: with mode, links, owner, size and time")
        ("recursive,r", po::bool_switch(), "rm, cp: whole directory trees")
        ("chunk-size", po::value<std::string>()->value_name("SIZE"),
         "entry set: chunk size for new files (512K, 1M, 4M: a power of two, 64K..1G)")
        ("num-targets", po::value<std::string>()->value_name("N"), "entry set: targets per new file")
        ("pool", po::value<std::string>()->value_name("POOL"), "entry set: storage pool (id or name) for new files")
        ("inline-max", po::value<std::string>()->value_name("SIZE"),
         "entry set: new files keep up to SIZE bytes with their metadata server (0: none; at most the chunk "
         "size and 1M)")
        ("interval", po::value<std::string>()->value_name("S"), "stats server: seconds between the samples (default 1)")
        ("by-type", po::bool_switch(), "stats server: a row per message type")
        ("readonly", po::bool_switch(), "fsck: only check, change nothing")
        ("repair", po::bool_switch(), "fsck: check, then delete orphan chunks and empty orphan directories")
        ("command", po::value<std::vector<std::string>>()->value_name("WORDS"),
         "the command: NOUN VERB [ARGS] (listed below)");
    options.positional("command", -1);
}

std::string full_help(const Options& options) { return options.help() + "\n" + commands_help(); }

// The command the words name; `used` is set to how many words name it.
Result<const Command*> lookup(const std::vector<std::string>& words, size_t& used) {
    used = 1;
    if (const Command* cmd = find_command(words[0], "")) return cmd;
    if (!is_noun(words[0])) return usage_error("unknown command '" + words[0] + "'");
    std::string verbs;
    for (const auto& c : all_commands())
        if (c.noun == words[0]) verbs += (verbs.empty() ? "" : ", ") + std::string(c.verb);
    if (words.size() < 2) return usage_error("'" + words[0] + "' needs one of: " + verbs);
    used = 2;
    if (const Command* cmd = find_command(words[0], words[1])) return cmd;
    return usage_error("unknown command '" + words[0] + " " + words[1] + "'; '" + words[0] + "' takes: " + verbs);
}

Status check_usage(const Command& cmd, const Options& options, size_t args) {
    for (std::string_view flag : kCommandFlags) {
        if (!options.has(std::string(flag))) continue;
        bool taken = false;
        for (std::string_view f : cmd.flags) taken = taken || f == flag;
        if (!taken)
            return usage_error("--" + std::string(flag) + " does not apply to '" + command_words(cmd) +
                               "'\nusage: " + usage_line(cmd));
    }
    if (args < cmd.min_args || args > cmd.max_args) return usage_error("usage: " + usage_line(cmd));
    return ok_status();
}

void print_transport_stats(std::FILE* out) {
    std::fprintf(out, "{\"transport_stats\": %s, \"rails\": %s}\n", rdma::counters_json().c_str(),
                 rdma::rail_counters_json().c_str());
}

int run(int argc, char** argv) {
    log::set_component("pfs-ctl");
    log::set_level(log::Level::warn);
    // PFS_LOG_LEVEL=debug|info|warn|error: what libpfs says on stderr.
    if (const char* env = std::getenv("PFS_LOG_LEVEL")) {
        log::Level level;
        if (log::parse_level(env, level)) log::set_level(level);
    }
    Options options("pfs-ctl", kSummary);
    declare_options(options);
    auto outcome = options.parse(argc, argv);
    if (outcome.kind == ParseOutcome::Kind::help) {
        std::fputs(full_help(options).c_str(), stdout);
        return kExitOk;
    }
    if (outcome.kind == ParseOutcome::Kind::version) {
        std::fputs(outcome.message.c_str(), stdout);
        return kExitOk;
    }
    if (outcome.kind == ParseOutcome::Kind::error) {
        std::string msg = outcome.message;  // fail() adds its own hint
        if (msg.ends_with(" (try --help)")) msg.resize(msg.size() - sizeof " (try --help)" + 1);
        return fail(usage_error(msg));
    }

    auto words = options.has("command") ? options.get<std::vector<std::string>>("command")
                                        : std::vector<std::string>{};
    if (words.empty()) return fail(usage_error("no command given"));
    if (words[0] == "help") {
        std::fputs(full_help(options).c_str(), stdout);
        return kExitOk;
    }
    size_t used = 0;
    auto cmd = lookup(words, used);
    if (!cmd) return fail(cmd.error());
    std::vector<std::string> args(words.begin() + static_cast<ptrdiff_t>(used), words.end());
    if (auto st = check_usage(**cmd, options, args.size()); !st) return fail(st.error());

    auto mgmt = MgmtClient::open(options);
    if (!mgmt) return fail(mgmt.error());
    Context ctx{**mgmt, options, std::move(args), options.get<bool>("json"), nullptr};
    auto output = (*cmd)->run(ctx);
    if (options.get<bool>("transport-stats")) print_transport_stats(stderr);
    if (!output) return fail(output.error());
    std::fputs(output->c_str(), stdout);
    if (std::fflush(stdout) != 0) return kExitRefused;
    return ctx.exit_status;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        return run(argc, argv);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "pfs-ctl: internal error: %s\n", e.what());
    } catch (...) {
        std::fprintf(stderr, "pfs-ctl: internal error\n");
    }
    return kExitRefused;
}
