// Challenge-response authentication that opens every connection: the
// server sends a fresh nonce; the client answers with its own nonce, the
// role it claims, the flags it asks for and an HMAC over all of them under
// that role's key; the server proves itself the same way and says which
// flags the connection uses. Nothing else is served before this succeeds.
// With PFS_AUTH_FRAME_MAC, every later frame carries a MAC under the
// session key both sides derive (auth_crypto.hpp).
#pragma once

#include <chrono>

#include "auth_crypto.hpp"
#include "channel.hpp"

namespace pfs {

// Largest handshake frame: an unauthenticated peer cannot make us allocate more.
inline constexpr uint32_t kHandshakeMaxPayload = 256;

// Who authenticated, and how the connection goes on.
struct PeerAuth {
    auth::Role role = auth::Role::client;
    bool frame_mac = false;
    bool data_mac = false;  // the MACs cover bulk data too
};

// What a client asks of a connection's frame MACs: none unless the
// server requires them, MACs over frames (header, bulk block, body), or
// over the frames' bulk data as well (PFS_AUTH_DATA_MAC).
enum class MacWish { if_required, frames, frames_and_data };

// require_mac: frame MACs whether the client asks for them or not (they
// cover bulk data only when the client asks for that).
awaitable<Result<PeerAuth>> server_handshake(std::shared_ptr<Channel> conn, const auth::Secret& secret,
                                             std::chrono::milliseconds timeout, bool require_mac);
// A server that refuses what wish asks for is refused.
awaitable<Status> client_handshake(std::shared_ptr<Channel> conn, const auth::Secret& secret, auth::Role role,
                                   MacWish wish, std::chrono::milliseconds timeout);

}  // namespace pfs
