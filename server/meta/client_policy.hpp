// Whose uid a request's uid is: the identity a client claims is trusted
// only as far as its network is (NFS's root_squash and all_squash). Root
// on a client not listed as trusted acts as the anonymous user; every user
// of an all-squash network does. Connections that proved the server or
// admin role are never squashed.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "access.hpp"
#include "auth_crypto.hpp"
#include "result.hpp"

namespace pfs::meta {

// An IPv4 or IPv6 network, "ADDR/BITS" or one address.
class Network {
public:
    static Result<Network> parse(std::string_view text);
    // IPv4-mapped IPv6 addresses match IPv4 networks.
    bool contains(std::string_view address) const;

private:
    std::array<uint8_t, 16> bytes_{};
    unsigned prefix_ = 0;
    bool v4_ = false;
};

struct ClientPolicySettings {
    std::string trusted = "127.0.0.0/8,::1";  // root stays root from these
    bool root_squash = true;                  // root from elsewhere: anon
    std::string all_squash;                   // everyone from these: anon
    uint32_t anon_uid = 65534;
    uint32_t anon_gid = 65534;
};

class ClientPolicy {
public:
    // Comma-separated networks; a clear error for a malformed one.
    static Result<ClientPolicy> create(const ClientPolicySettings& settings);
    ClientPolicy() = default;

    // The caller a request stands for: uid, gid and groups as it claims
    // them, from peer_address over a connection of role.
    Caller caller(uint32_t uid, uint32_t gid, std::vector<uint32_t> groups, std::string_view peer_address,
                  auth::Role role) const;

private:
    static bool in(const std::vector<Network>& nets, std::string_view address);

    std::vector<Network> trusted_;
    std::vector<Network> all_squash_;
    bool root_squash_ = true;
    uint32_t anon_uid_ = 65534;
    uint32_t anon_gid_ = 65534;
};

}  // namespace pfs::meta
