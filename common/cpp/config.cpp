#include "config.hpp"

#include "log.hpp"
#include "pfs_proto.h"

#include <cerrno>
#include <cstring>
#include <exception>
#include <sstream>

#include <fcntl.h>
#include <unistd.h>

namespace pfs {
namespace {

constexpr const char* kConfigDir = "/etc/pfs/";

std::string default_config_for(const std::string& program) {
    std::string_view name = program;
    if (name.starts_with("pfs-")) name.remove_prefix(4);
    return kConfigDir + std::string(name) + ".conf";
}

// Reads a whole file with POSIX calls so that the failure keeps its errno (iostreams lose it).
int read_whole_file(const std::string& path, std::string& out) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) return errno;
    out.clear();
    char buf[8192];
    int err = 0;
    for (;;) {
        ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0) {
            if (errno == EINTR) continue;
            err = errno;
            break;
        }
        if (n == 0) break;
        out.append(buf, static_cast<size_t>(n));
    }
    ::close(fd);
    return err;
}

ParseOutcome error_outcome(std::string message) {
    return {ParseOutcome::Kind::error, std::move(message)};
}

}  // namespace

std::string_view version() { return PFS_VERSION; }

std::string version_line(std::string_view program) {
    return std::string(program) + " " + std::string(version()) + " (protocol " +
           std::to_string(PFS_PROTO_VERSION) + ")\n";
}

Options::Options(std::string program, std::string summary)
    : program_(std::move(program)),
      summary_(std::move(summary)),
      default_config_(default_config_for(program_)) {
    generic_.add_options()
        ("help,h", "print this help and exit")
        ("version,V", "print the version (and the protocol's) and exit")
        ("config", po::value<std::string>()->default_value(default_config_)->value_name("FILE"),
         "config file (ini syntax: key = value); the default one is read only if it exists");
    common_.add_options()
        ("log-level", po::value<std::string>()->default_value("info")->value_name("LEVEL"),
         "least severe messages logged: debug, info, warn or error");
}

po::options_description_easy_init Options::add() { return user_.add_options(); }

Options& Options::positional(const std::string& name, int max_count) {
    positional_.add(name.c_str(), max_count);
    positional_names_.emplace_back(name, max_count);
    return *this;
}

bool Options::has(const std::string& name) const {
    auto it = vm_.find(name);
    return it != vm_.end() && !it->second.defaulted();
}

std::string Options::help() const {
    std::ostringstream out;
    out << "Usage: " << program_ << " [options]";
    for (const auto& [name, count] : positional_names_) {
        out << " <" << name << '>';
        if (count < 0 || count > 1) out << "...";
    }
    out << "\n\n";
    if (!summary_.empty()) out << summary_ << "\n\n";
    // One flat list: nested groups would each get their own column width and blank lines.
    po::options_description all("Options", 100);
    for (const po::options_description* group : {&generic_, &common_, &user_}) {
        for (const auto& option : group->options()) all.add(option);
    }
    out << all;
    return out.str();
}

ParseOutcome Options::parse(int argc, const char* const* argv) {
    vm_.clear();
    config_file_.clear();
    // Boost reports bad input by throwing; nothing of that may leave this function.
    try {
        return parse_checked(argc, argv);
    } catch (const po::too_many_positional_options_error&) {
        return error_outcome("too many arguments (try --help)");
    } catch (const po::error& e) {
        return error_outcome(std::string(e.what()) + " (try --help)");
    } catch (const std::exception& e) {
        return error_outcome(std::string("cannot parse options: ") + e.what());
    } catch (...) {
        return error_outcome("cannot parse options: unknown error");
    }
}

ParseOutcome Options::parse_checked(int argc, const char* const* argv) {
    po::options_description cmdline;
    cmdline.add(generic_).add(common_).add(user_);

    // No prefix guessing: a script saying --log must not silently mean --log-level, nor change
    // meaning when a new option with the same prefix is added.
    auto style = po::command_line_style::default_style & ~po::command_line_style::allow_guessing;
    po::command_line_parser parser(argc, argv);
    parser.options(cmdline).style(style);
    if (!positional_names_.empty()) parser.positional(positional_);
    po::parsed_options parsed = parser.run();

    // Without a positional description, program_options hands positional words back unnamed
    // and store() would silently drop them.
    for (const po::option& opt : parsed.options) {
        if (opt.string_key.empty()) {
            std::string word = opt.original_tokens.empty() ? std::string() : opt.original_tokens[0];
            return error_outcome("unexpected argument '" + word + "' (try --help)");
        }
    }

    po::variables_map vm;
    po::store(parsed, vm);
    if (vm.count("help")) return {ParseOutcome::Kind::help, help()};
    if (vm.count("version")) return {ParseOutcome::Kind::version, version_line(program_)};

    const bool explicit_config = !vm["config"].defaulted();
    const std::string config_path = vm["config"].as<std::string>();
    vm_ = std::move(vm);
    ParseOutcome file = read_config_file(config_path, explicit_config);
    if (file.kind == ParseOutcome::Kind::error) return file;
    po::notify(vm_);

    const std::string level_text = vm_["log-level"].as<std::string>();
    log::Level level;
    if (!log::parse_level(level_text, level)) {
        return error_outcome("invalid --log-level '" + level_text +
                             "': expected debug, info, warn or error");
    }
    log::set_level(level);
    return {ParseOutcome::Kind::run, {}};
}

ParseOutcome Options::read_config_file(const std::string& path, bool explicit_path) {
    std::string text;
    if (int err = read_whole_file(path, text); err != 0) {
        // The default file is optional; one the operator named is not.
        if (!explicit_path && err == ENOENT) return {ParseOutcome::Kind::run, {}};
        return error_outcome("cannot read config file " + path + ": " + std::strerror(err));
    }

    po::options_description file_options;
    file_options.add(common_).add(user_);
    std::istringstream in(text);
    try {
        // Stored after the command line: store() keeps values already set, so the command
        // line wins.
        po::store(po::parse_config_file(in, file_options, false), vm_);
    } catch (const po::error& e) {
        return error_outcome("config file " + path + ": " + e.what());
    }
    config_file_ = path;
    return {ParseOutcome::Kind::run, {}};
}

}  // namespace pfs
