#include "mountstats.hpp"

#include <charconv>
#include <sstream>

namespace pfs::ctl {
namespace {

std::vector<std::string> words_of(const std::string& line) {
    std::istringstream in(line);
    std::vector<std::string> words;
    for (std::string w; in >> w;) words.push_back(std::move(w));
    return words;
}

// mountstats escapes blanks in paths as \040 (octal), like /proc/mounts.
std::string unescape(const std::string& s) {
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '\\' && i + 3 < s.size()) {
            unsigned v = 0;
            auto [p, ec] = std::from_chars(s.data() + i + 1, s.data() + i + 4, v, 8);
            if (ec == std::errc() && p == s.data() + i + 4) {
                out += static_cast<char>(v);
                i += 3;
                continue;
            }
        }
        out += s[i];
    }
    return out;
}

}  // namespace

std::vector<PfsMount> parse_mountstats(std::string_view text) {
    std::vector<PfsMount> mounts;
    bool in_pfs = false;
    std::istringstream in{std::string(text)};
    for (std::string line; std::getline(in, line);) {
        auto w = words_of(line);
        if (w.empty()) continue;
        // "device D mounted on M with fstype T ..."
        if (w[0] == "device") {
            in_pfs = w.size() >= 8 && w[2] == "mounted" && w[3] == "on" && w[5] == "with" && w[6] == "fstype" &&
                     w[7] == "pfs";
            if (in_pfs) mounts.push_back(PfsMount{w[1], unescape(w[4]), {}});
            continue;
        }
        if (!in_pfs || w.size() < 2 || (w[0] != "rail" && w[0] != "transport" && w[0] != "gpu") || w[1].back() != ':') continue;
        MountCounters c;
        c.kind = w[0];
        c.name = w[1].substr(0, w[1].size() - 1);
        bool ok = true;
        for (size_t i = 2; i + 1 < w.size(); i += 2) {
            if (w[i] == "state") {
                c.state = w[i + 1];
                continue;
            }
            int64_t v = 0;
            auto [p, ec] = std::from_chars(w[i + 1].data(), w[i + 1].data() + w[i + 1].size(), v);
            if (ec != std::errc() || p != w[i + 1].data() + w[i + 1].size()) ok = false;
            else c.values[w[i]] = v;
        }
        if (ok) mounts.back().counters.push_back(std::move(c));
    }
    return mounts;
}

}  // namespace pfs::ctl
