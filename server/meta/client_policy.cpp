#include "client_policy.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <charconv>
#include <cstring>

namespace pfs::meta {
namespace {

// The address as 16 bytes (IPv4 as IPv4-mapped IPv6), or false.
bool address_bytes(std::string_view text, std::array<uint8_t, 16>& out, bool& v4) {
    std::string s(text);
    in_addr a4{};
    in6_addr a6{};
    if (inet_pton(AF_INET, s.c_str(), &a4) == 1) {
        out.fill(0);
        out[10] = out[11] = 0xff;
        std::memcpy(out.data() + 12, &a4, 4);
        v4 = true;
        return true;
    }
    if (inet_pton(AF_INET6, s.c_str(), &a6) == 1) {
        std::memcpy(out.data(), &a6, 16);
        static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
        v4 = std::memcmp(out.data(), mapped, 12) == 0;
        return true;
    }
    return false;
}

std::vector<std::string_view> split(std::string_view list) {
    std::vector<std::string_view> out;
    while (!list.empty()) {
        auto comma = list.find(',');
        std::string_view item = list.substr(0, comma);
        while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
        while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
        if (!item.empty()) out.push_back(item);
        if (comma == std::string_view::npos) break;
        list.remove_prefix(comma + 1);
    }
    return out;
}

Result<std::vector<Network>> parse_list(std::string_view list, const char* what) {
    std::vector<Network> out;
    for (auto item : split(list)) {
        auto net = Network::parse(item);
        if (!net) return Error{-EINVAL, std::string(what) + ": " + net.error().message};
        out.push_back(*net);
    }
    return out;
}

}  // namespace

Result<Network> Network::parse(std::string_view text) {
    Network n;
    auto slash = text.find('/');
    std::string_view addr = text.substr(0, slash);
    if (!address_bytes(addr, n.bytes_, n.v4_))
        return Error{-EINVAL, "'" + std::string(text) + "' is not an IPv4 or IPv6 address or network"};
    const unsigned max = n.v4_ ? 32 : 128;
    n.prefix_ = max;
    if (slash != std::string_view::npos) {
        std::string_view bits = text.substr(slash + 1);
        unsigned v = 0;
        auto [p, ec] = std::from_chars(bits.data(), bits.data() + bits.size(), v);
        if (ec != std::errc() || p != bits.data() + bits.size() || bits.empty() || v > max)
            return Error{-EINVAL, "'" + std::string(text) + "': the prefix length must be 0.." + std::to_string(max)};
        n.prefix_ = v;
    }
    if (n.v4_) n.prefix_ += 96;  // as IPv4-mapped IPv6
    return n;
}

bool Network::contains(std::string_view address) const {
    std::array<uint8_t, 16> a{};
    bool v4 = false;
    if (!address_bytes(address, a, v4)) return false;
    unsigned left = prefix_;
    for (size_t i = 0; i < a.size() && left; ++i) {
        const unsigned bits = std::min(left, 8u);
        const uint8_t mask = static_cast<uint8_t>(0xff00u >> bits);
        if ((a[i] & mask) != (bytes_[i] & mask)) return false;
        left -= bits;
    }
    return true;
}

Result<ClientPolicy> ClientPolicy::create(const ClientPolicySettings& s) {
    ClientPolicy p;
    auto trusted = parse_list(s.trusted, "--trusted-clients");
    if (!trusted) return trusted.error();
    auto all = parse_list(s.all_squash, "--all-squash-clients");
    if (!all) return all.error();
    p.trusted_ = std::move(*trusted);
    p.all_squash_ = std::move(*all);
    p.root_squash_ = s.root_squash;
    p.anon_uid_ = s.anon_uid;
    p.anon_gid_ = s.anon_gid;
    return p;
}

bool ClientPolicy::in(const std::vector<Network>& nets, std::string_view address) {
    for (const auto& n : nets)
        if (n.contains(address)) return true;
    return false;
}

Caller ClientPolicy::caller(uint32_t uid, uint32_t gid, std::vector<uint32_t> groups, std::string_view peer_address,
                            auth::Role role) const {
    Caller c{uid, gid, std::move(groups)};
    if (role != auth::Role::client) return c;
    if (in(all_squash_, peer_address)) {
        c = Caller{anon_uid_, anon_gid_, {}};
    } else if (root_squash_ && !in(trusted_, peer_address)) {
        // As NFS's root_squash: uid 0 and group 0 stand for nobody.
        if (c.uid == 0) c.uid = anon_uid_;
        if (c.gid == 0) c.gid = anon_gid_;
        std::replace(c.groups.begin(), c.groups.end(), 0u, anon_gid_);
    }
    return c;
}

}  // namespace pfs::meta
