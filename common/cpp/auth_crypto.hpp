// Cryptography of connections: the auth file's keys, the handshake proofs,
// client identities and the per-frame MACs (HMAC-SHA256 throughout).
//
// Keys. The cluster secret (servers and admin nodes hold it) is never used
// on the wire itself: each role proves itself with its own key,
// HMAC(cluster secret, "pfs-role-v1 " || role name), so a client node can
// be given the client key alone ("pfs-key-v1 client HEX", from `pfs-ctl
// auth key client`) and cannot derive the admin's or a server's key from
// it.
//
// Handshake. Both sides prove the role's key over fresh nonces from both
// sides, so a recorded handshake cannot be replayed and no static token
// crosses the wire; the proofs use different labels so that a server's
// proof can never be reflected back as a client's, and cover the role and
// the connection's flags, so neither can be changed on the way. Both sides
// then derive a session key that keys the frame MACs.
//
// Client identity. A client id is the hash of a random token only that
// client knows: a connection acts for a client id once it showed the token
// (BIND_CLIENT), so knowing another client's id (GETLK reveals it) is not
// enough to end its session or close its files.
#pragma once

#include "result.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <sys/types.h>
#include <utility>
#include <vector>

extern "C" {
#include "pfs_proto.h"
}

namespace pfs::auth {

using Mac = std::array<uint8_t, 32>;  // HMAC-SHA256
using Nonce = std::array<uint8_t, 32>;
using Key = std::array<uint8_t, 32>;
using Token = std::array<uint8_t, PFS_CLIENT_TOKEN_LEN>;
using FrameTag = std::array<uint8_t, PFS_FRAME_MAC_LEN>;

inline constexpr size_t kMinSecretBytes = 16;
inline constexpr size_t kMaxSecretBytes = 64 * 1024;
// Accounts from this uid on are people's (Debian's SYS_UID_MAX is 999):
// root does not take a secret file one of them owns (Secret::load).
inline constexpr uid_t kFirstLoginUid = 1000;

enum class Role : uint8_t {
    client = PFS_ROLE_CLIENT,
    admin = PFS_ROLE_ADMIN,
    server = PFS_ROLE_SERVER,
};
const char* role_name(Role role);
std::optional<Role> parse_role(std::string_view name);

// What an auth file holds: the cluster secret (any role's key derives from
// it) or one role's key. Its bytes are wiped whenever a copy dies.
class Secret {
public:
    // The file must be a regular file that neither its group nor others may
    // access, owned by the user reading it; one trailing newline (\n or
    // \r\n) is not part of the secret. A file starting with "pfs-key-v1 "
    // is a role key: "pfs-key-v1 client|admin HEX(32 bytes)".
    static Result<Secret> load(const std::filesystem::path& path);
    // The cluster secret.
    static Secret from_bytes(std::span<const uint8_t> bytes);
    // One role's key (what a role key file holds).
    static Secret role_key(Role role, const Key& key);

    // Whether this secret can prove role: the cluster secret proves any.
    bool proves(Role role) const { return !only_ || *only_ == role; }
    // admin when it proves admin, else its one role: what a tool acts as.
    Role strongest() const { return only_ ? *only_ : Role::admin; }
    Result<Key> key(Role role) const;
    // The text of a role key file for role (needs the cluster secret).
    Result<std::string> key_file(Role role) const;

    Secret(const Secret& other);
    Secret(Secret&& other) noexcept;
    Secret& operator=(const Secret& other);
    Secret& operator=(Secret&& other) noexcept;
    ~Secret();

private:
    Secret(std::vector<uint8_t> bytes, std::optional<Role> only) : bytes_(std::move(bytes)), only_(only) {}
    void wipe() noexcept;

    std::vector<uint8_t> bytes_;  // the cluster secret, or the role's key
    std::optional<Role> only_;    // set: a role key
};

// Aborts the process (after a log line) if the RNG fails: there is no safe way on.
Nonce random_nonce();
Token random_token();

Mac hmac_sha256(std::span<const uint8_t> key, std::span<const uint8_t> data);

// HMAC(cluster, "pfs-role-v1 " || role name)
Key derive_role_key(std::span<const uint8_t> cluster_secret, Role role);
// HMAC(key, "pfs-auth-v2 client" || server_nonce || client_nonce || role || flags)
Mac client_proof(const Key& key, const Nonce& server_nonce, const Nonce& client_nonce, Role role, uint8_t flags);
// HMAC(key, "pfs-auth-v2 server" || client_nonce || server_nonce || role || flags)
Mac server_proof(const Key& key, const Nonce& client_nonce, const Nonce& server_nonce, Role role, uint8_t flags);
// HMAC(key, "pfs-session-v2" || server_nonce || client_nonce)
Key session_key(const Key& key, const Nonce& server_nonce, const Nonce& client_nonce);
// The first 8 bytes of SHA-256("pfs-client-id-v1" || token), little endian;
// never 0 (which means "no client" on the wire).
uint64_t client_id_of(const Token& token);

// Constant time, so a peer cannot learn a proof byte by byte from response timing.
bool equal(const Mac& a, const Mac& b);

// The MACs of one connection's frames after the handshake: HMAC-SHA256
// under the session key over direction || sequence number (u64 LE) ||
// header || payload, truncated to PFS_FRAME_MAC_LEN. The direction is 'C'
// for frames from the side that connected, 'S' for the other; each
// direction counts its frames from 0, so a frame cannot be dropped,
// replayed, reordered or moved to the other direction unnoticed.
class FrameMac {
public:
    FrameMac(const Key& session, bool server_side);
    ~FrameMac();
    FrameMac(const FrameMac&) = delete;
    FrameMac& operator=(const FrameMac&) = delete;

    // The tag of the next frame sent (the header as encoded, then the
    // payload's pieces in order).
    FrameTag seal(std::span<const uint8_t> header, std::initializer_list<std::span<const uint8_t>> payload);
    // Whether tag is the next received frame's (its payload's pieces in order).
    bool verify(std::span<const uint8_t> header, std::initializer_list<std::span<const uint8_t>> payload,
                const FrameTag& tag);

private:
    FrameTag tag(char direction, uint64_t seq, std::span<const uint8_t> header,
                 std::initializer_list<std::span<const uint8_t>> payload);

    struct Ctx;
    std::unique_ptr<Ctx> ctx_;
    char tx_dir_, rx_dir_;
    uint64_t tx_seq_ = 0, rx_seq_ = 0;
};

}  // namespace pfs::auth
