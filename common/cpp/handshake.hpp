// Challenge-response authentication that opens every connection: the
// server sends a fresh nonce, the client answers with its own nonce and an
// HMAC over both under the shared secret, and the server proves itself the
// same way. Nothing else is served before this succeeds.
#pragma once

#include <chrono>

#include "auth_crypto.hpp"
#include "connection.hpp"

namespace pfs {

// Largest handshake frame: an unauthenticated peer cannot make us allocate more.
inline constexpr uint32_t kHandshakeMaxPayload = 256;

awaitable<Status> server_handshake(std::shared_ptr<Connection> conn, const auth::Secret& secret,
                                   std::chrono::milliseconds timeout);
awaitable<Status> client_handshake(std::shared_ptr<Connection> conn, const auth::Secret& secret,
                                   std::chrono::milliseconds timeout);

}  // namespace pfs
