// Runs pfs-ctl from the build tree against a test cluster (system tests).
#pragma once

#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "test_cluster.hpp"

namespace pfs::test {

struct CtlRun {
    int status = -1;
    std::string out;
    std::string err;
};

// Runs pfs-ctl from the build tree against the test cluster.
inline CtlRun ctl(const TestCluster& tc, const std::string& args) {
    const auto err_path = tc.dir() / "ctl.stderr";
    const std::string cmd = std::string(PFS_BIN_DIR) + "/utils/ctl/pfs-ctl --config /dev/null --timeout-ms 3000" +
                            " --mgmtd " + tc.mgmtd().str() + " --auth-file " + (tc.dir() / "auth.secret").string() +
                            " " + args + " 2>" + err_path.string();
    CtlRun r;
    FILE* p = ::popen(cmd.c_str(), "r");
    if (!p) return r;
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
    const int rc = ::pclose(p);
    r.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
    std::ifstream err(err_path);
    r.err.assign(std::istreambuf_iterator<char>(err), std::istreambuf_iterator<char>());
    return r;
}

inline nlohmann::json fsck_json(const TestCluster& tc, int expect_status) {
    auto r = ctl(tc, "fsck --readonly --json");
    INFO(r.out << r.err);
    REQUIRE(r.status == expect_status);
    return nlohmann::json::parse(r.out);
}

}  // namespace pfs::test
