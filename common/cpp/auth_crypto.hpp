// Cryptography of the connection handshake: the shared secret, nonces and HMAC-SHA256 proofs.
//
// Both sides prove knowledge of the secret over fresh nonces from both sides, so a recorded
// handshake cannot be replayed and no static token crosses the wire. The two proofs use
// different labels so that a server's proof can never be reflected back as a client's.
#pragma once

#include "result.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <utility>
#include <vector>

namespace pfs::auth {

using Mac = std::array<uint8_t, 32>;    // HMAC-SHA256
using Nonce = std::array<uint8_t, 32>;

inline constexpr size_t kMinSecretBytes = 16;
inline constexpr size_t kMaxSecretBytes = 64 * 1024;

// The shared secret from the auth file. Its bytes are wiped whenever a copy dies.
class Secret {
public:
    // The file must be a regular file not accessible by "others"; one trailing newline
    // (\n or \r\n) is not part of the secret.
    static Result<Secret> load(const std::filesystem::path& path);
    static Secret from_bytes(std::span<const uint8_t> bytes);

    std::span<const uint8_t> bytes() const { return bytes_; }

    Secret(const Secret& other);
    Secret(Secret&& other) noexcept;
    Secret& operator=(const Secret& other);
    Secret& operator=(Secret&& other) noexcept;
    ~Secret();

private:
    explicit Secret(std::vector<uint8_t> bytes) : bytes_(std::move(bytes)) {}
    void wipe() noexcept;

    std::vector<uint8_t> bytes_;
};

// Aborts the process (after a log line) if the RNG fails: there is no safe way on.
Nonce random_nonce();

Mac hmac_sha256(std::span<const uint8_t> key, std::span<const uint8_t> data);

// HMAC(secret, "pfs-auth-v1 client" || server_nonce || client_nonce)
Mac client_proof(const Secret& secret, const Nonce& server_nonce, const Nonce& client_nonce);
// HMAC(secret, "pfs-auth-v1 server" || client_nonce || server_nonce)
Mac server_proof(const Secret& secret, const Nonce& client_nonce, const Nonce& server_nonce);

// Constant time, so a peer cannot learn a proof byte by byte from response timing.
bool equal(const Mac& a, const Mac& b);

}  // namespace pfs::auth
