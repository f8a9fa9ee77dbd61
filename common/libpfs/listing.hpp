// A directory listing as a server sent it, made safe to use as paths.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "filesystem.hpp"

namespace pfs::client {

// A name as a server sent it, fit for a message: non-printable bytes as \xNN.
std::string printable_name(std::string_view name);

// The names of a listing become paths (pfs-ctl's cp -r and rm -r, a
// program's own walk): after the listing's own "." and "..", a name that is
// not a plain one ("", ".", "..", anything with a '/' or a NUL) could lead
// out of the directory, so such a listing is refused whole.
Result<std::vector<Entry>> plain_entries(std::vector<Entry>&& entries);

}  // namespace pfs::client
