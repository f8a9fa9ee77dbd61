#include "listing.hpp"

#include <cstdio>

namespace pfs::client {

std::string printable_name(std::string_view name) {
    std::string out;
    for (unsigned char c : name) {
        if (c >= 0x20 && c < 0x7f && c != '\\') {
            out += static_cast<char>(c);
        } else {
            char hex[5];
            std::snprintf(hex, sizeof hex, "\\x%02x", c);
            out += hex;
        }
    }
    return out;
}

Result<std::vector<Entry>> plain_entries(std::vector<Entry>&& entries) {
    std::vector<Entry> out;
    out.reserve(entries.size());
    for (size_t i = 0; i < entries.size(); ++i) {
        auto& e = entries[i];
        if ((i == 0 && e.name == ".") || (i == 1 && e.name == "..")) continue;
        if (e.name.empty() || e.name == "." || e.name == ".." ||
            e.name.find_first_of(std::string_view("/\0", 2)) != std::string::npos)
            return Error{PFS_E_PROTO, "the metadata server listed an entry named \"" + printable_name(e.name) +
                                          "\", which is not a plain name: listing refused"};
        out.push_back(std::move(e));
    }
    return out;
}

}  // namespace pfs::client
