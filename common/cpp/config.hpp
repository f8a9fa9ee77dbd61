// Command line + config file for daemons and CLIs, on Boost.Program_options.
//
// Every program gets --help/-h, --config FILE and --log-level; the program adds its own options
// through add(). Values given on the command line win over the config file (ini syntax,
// `key = value`, `#` comments). parse() never throws: bad input becomes ParseOutcome::error
// with a message fit to print to the operator.
#pragma once

#include <boost/program_options.hpp>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pfs {

namespace po = boost::program_options;

struct ParseOutcome {
    enum class Kind { run, help, version, error } kind = Kind::run;
    std::string message;  // help: the help text; version: the version line; error: what was wrong
};

// The one version of PFS (the VERSION file, through CMake), e.g. "0.1.0".
std::string_view version();
// "PROGRAM VERSION (protocol N)\n", what --version prints.
std::string version_line(std::string_view program);

class Options {
public:
    // `program` is e.g. "pfs-mgmtd"; its default config file is /etc/pfs/mgmtd.conf.
    Options(std::string program, std::string summary);

    // The caller's own options, with defaults and help text:
    //   opts.add()("port", po::value<int>()->default_value(8000), "TCP port");
    po::options_description_easy_init add();

    // Collects up to `max_count` (-1: unlimited) positional words into the option `name`, which
    // the caller declares through add(). Without this, positional words are errors.
    Options& positional(const std::string& name, int max_count);

    ParseOutcome parse(int argc, const char* const* argv);

    const po::variables_map& vm() const { return vm_; }
    template <class T>
    T get(const std::string& name) const {
        return vm()[name].as<T>();
    }
    // True when given on the command line or in the config file, not merely defaulted.
    bool has(const std::string& name) const;

    // Usage line, summary, and every option with its default and description.
    std::string help() const;

    // The config file actually read, or "" if none was.
    const std::string& config_file() const { return config_file_; }
    const std::string& default_config_file() const { return default_config_; }

private:
    ParseOutcome parse_checked(int argc, const char* const* argv);
    ParseOutcome read_config_file(const std::string& path, bool explicit_path);

    std::string program_;
    std::string summary_;
    std::string default_config_;
    po::options_description generic_;  // command line only: --help, --config
    po::options_description common_;   // command line or file: --log-level
    po::options_description user_;
    po::positional_options_description positional_;
    std::vector<std::pair<std::string, int>> positional_names_;  // for the usage line
    po::variables_map vm_;
    std::string config_file_;
};

}  // namespace pfs
