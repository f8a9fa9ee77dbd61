// pfs-ctl's exit statuses. Inside pfs-ctl, a failed step's Error carries in
// `code` the exit status it leads to, so that the reason for failing travels
// with the message all the way up to main().
#pragma once

#include <string>

#include "result.hpp"

namespace pfs::ctl {

enum Exit : int {
    kExitOk = 0,
    kExitRefused = 1,      // pfs-mgmtd answered and said no (unknown target, pool exists, ...)
    kExitUsage = 2,        // unknown command or option, bad arguments
    kExitUnreachable = 3,  // no answer: connection, timeout, authentication, auth file
    // fsck could not check (a server did not answer, or no --readonly):
    // exits 2 as fsck documents, but is no usage error. main() exits with
    // the low byte.
    kExitNotChecked = 0x100 | 2,
};

inline Error refused(std::string message) { return Error{kExitRefused, std::move(message)}; }
inline Error usage_error(std::string message) { return Error{kExitUsage, std::move(message)}; }
inline Error unreachable(std::string message) { return Error{kExitUnreachable, std::move(message)}; }

}  // namespace pfs::ctl
