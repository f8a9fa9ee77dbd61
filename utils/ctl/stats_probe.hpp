// GET_STATS from many servers at once, for `pfs-ctl stats server`: one
// connection per server, kept between samples so that the second sample
// costs no connection set-up. The Asio machinery stays in stats_probe.cpp.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "config.hpp"
#include "result.hpp"
#include "stats_sample.hpp"

extern "C" {
#include "pfs_proto.h"
}

namespace pfs::ctl {

struct ServerAddress {
    std::string host;
    uint16_t port = 0;
};

// One server's counters at one moment.
using pfs::StatsSample;

class StatsProbe {
public:
    // --auth-file and --timeout-ms from options; no connection yet.
    static Result<std::unique_ptr<StatsProbe>> open(const Options& options, std::vector<ServerAddress> servers);
    // pfs-mgmtd's address as --mgmtd gives it (mgmtd is not in its own map).
    static Result<ServerAddress> mgmtd_address(const Options& options);
    ~StatsProbe();

    // Asks every server at once; one result per server, in order.
    std::vector<Result<StatsSample>> sample();

    struct Impl;
    explicit StatsProbe(std::unique_ptr<Impl> impl);

private:
    std::unique_ptr<Impl> impl_;
};

}  // namespace pfs::ctl
