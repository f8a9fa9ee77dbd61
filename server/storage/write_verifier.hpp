// A storage target's write verifier (struct pfs_chunk_written): it stays
// the same while nothing the target acknowledged can have been lost, and
// changes when something may have. A clean stop writes everything to disk
// (syncfs) and leaves the verifier in a note for the next start to take
// over; any other start (after a crash, a kill, a power loss) finds no note
// and draws a new one, so clients holding writes acknowledged before it
// learn at their next CHUNK_SYNC that those may be gone.
#pragma once

#include <cstdint>
#include <string>

#include "result.hpp"

namespace pfs {

class WriteVerifier {
public:
    // The note a clean stop left in the target directory dir_fd (removed,
    // durably, so that a crash from now on changes the verifier), or a
    // new random verifier.
    static Result<uint64_t> take(int dir_fd, const std::string& dir_name);
    // After a successful syncfs of the target: the note for the next start.
    static Status leave(int dir_fd, const std::string& dir_name, uint64_t verifier);
};

}  // namespace pfs
