#include "handshake.hpp"

#include <openssl/crypto.h>

namespace pfs {
namespace {

Error timed_out_or(const Channel::Deadline& deadline, Error e) {
    if (deadline.expired()) return Error{-ETIMEDOUT, "authentication handshake timed out"};
    return e;
}

Error unexpected(const Frame& f, const char* wanted) {
    return Error{PFS_E_PROTO, std::string("expected ") + wanted + ", got message type " +
                                  std::to_string(f.header.type) + " (" + pfs_msg_name(f.header.type) + ")"};
}

template <size_t N>
std::array<uint8_t, N> to_array(const uint8_t (&bytes)[N]) {
    std::array<uint8_t, N> out;
    std::copy(std::begin(bytes), std::end(bytes), out.begin());
    return out;
}

// Wipes a key copy however the function leaves.
struct Wiped {
    auth::Key& key;
    ~Wiped() { OPENSSL_cleanse(key.data(), key.size()); }
};

// From now on every frame both ways carries a MAC under the session key.
void start_frame_macs(Channel& conn, const auth::Key& role_key, const auth::Nonce& server_nonce,
                      const auth::Nonce& client_nonce, bool server_side, uint8_t flags) {
    auth::Key session = auth::session_key(role_key, server_nonce, client_nonce);
    conn.set_frame_mac(std::make_unique<auth::FrameMac>(session, server_side), (flags & PFS_AUTH_DATA_MAC) != 0);
    OPENSSL_cleanse(session.data(), session.size());
}

}  // namespace

awaitable<Result<PeerAuth>> server_handshake(std::shared_ptr<Channel> conn, const auth::Secret& secret,
                                             std::chrono::milliseconds timeout, bool require_mac) {
    Channel::Deadline deadline(conn, timeout);
    pfs_auth_challenge challenge{};
    auth::Nonce server_nonce = auth::random_nonce();
    std::copy(server_nonce.begin(), server_nonce.end(), challenge.nonce);
    conn->send(Frame{make_header(PFS_MSG_AUTH_CHALLENGE), *encode(pfs_x_auth_challenge, challenge)});

    auto frame = co_await conn->read_frame(kHandshakeMaxPayload);
    if (!frame) co_return timed_out_or(deadline, frame.error());
    if (frame->header.type != PFS_MSG_AUTH_RESPONSE || frame->header.flags != 0)
        co_return unexpected(*frame, "AUTH_RESPONSE");
    auto response = decode(frame->payload, pfs_x_auth_response);
    if (!response) co_return Error{PFS_E_PROTO, "malformed AUTH_RESPONSE"};

    const auto role = static_cast<auth::Role>(response->role);
    auto client_nonce = to_array(response->nonce);
    Frame reply{make_header(PFS_MSG_AUTH_RESPONSE, PFS_FLAG_REPLY, frame->header.request_id), {}};
    auto refuse = [&](const std::string& why) -> Error {
        reply.payload = encode_reply(Reply::fail(PFS_E_AUTH, "authentication refused"));
        conn->send(reply);
        conn->close_when_sent();
        return Error{PFS_E_AUTH, why};
    };
    auto key = secret.key(role);
    if (!key) co_return refuse(std::string("cannot check the ") + auth::role_name(role) + " key: " + key.error().message);
    Wiped wipe{*key};
    if (!auth::equal(to_array(response->mac), auth::client_proof(*key, server_nonce, client_nonce, role, response->flags)))
        co_return refuse(std::string("peer does not know the ") + auth::role_name(role) + " key");

    const bool data_mac = response->flags & PFS_AUTH_DATA_MAC;
    PeerAuth peer{role, require_mac || data_mac || (response->flags & PFS_AUTH_FRAME_MAC), data_mac};
    pfs_auth_proof proof{};
    proof.flags = static_cast<uint8_t>((peer.frame_mac ? PFS_AUTH_FRAME_MAC : 0) | (data_mac ? PFS_AUTH_DATA_MAC : 0));
    auth::Mac mac = auth::server_proof(*key, client_nonce, server_nonce, role, proof.flags);
    std::copy(mac.begin(), mac.end(), proof.mac);
    reply.payload = encode_reply(Reply::ok(*encode(pfs_x_auth_proof, proof)));
    conn->send(reply);
    if (peer.frame_mac) start_frame_macs(*conn, *key, server_nonce, client_nonce, true, proof.flags);
    co_return peer;
}

awaitable<Status> client_handshake(std::shared_ptr<Channel> conn, const auth::Secret& secret, auth::Role role,
                                   MacWish wish, std::chrono::milliseconds timeout) {
    auto key = secret.key(role);
    if (!key) co_return key.error();
    Wiped wipe{*key};
    Channel::Deadline deadline(conn, timeout);
    auto frame = co_await conn->read_frame(kHandshakeMaxPayload);
    if (!frame) co_return timed_out_or(deadline, frame.error());
    if (frame->header.type != PFS_MSG_AUTH_CHALLENGE) co_return unexpected(*frame, "AUTH_CHALLENGE");
    auto challenge = decode(frame->payload, pfs_x_auth_challenge);
    if (!challenge) co_return Error{PFS_E_PROTO, "malformed AUTH_CHALLENGE"};

    auto server_nonce = to_array(challenge->nonce);
    auth::Nonce client_nonce = auth::random_nonce();
    pfs_auth_response response{};
    response.role = static_cast<uint8_t>(role);
    response.flags = wish == MacWish::frames_and_data ? PFS_AUTH_FRAME_MAC | PFS_AUTH_DATA_MAC
                   : wish == MacWish::frames          ? PFS_AUTH_FRAME_MAC
                                                      : 0;
    auth::Mac mac = auth::client_proof(*key, server_nonce, client_nonce, role, response.flags);
    std::copy(client_nonce.begin(), client_nonce.end(), response.nonce);
    std::copy(mac.begin(), mac.end(), response.mac);
    conn->send(Frame{make_header(PFS_MSG_AUTH_RESPONSE, 0, 1), *encode(pfs_x_auth_response, response)});

    frame = co_await conn->read_frame(kHandshakeMaxPayload);
    if (!frame) {
        // A server that refuses us closes right after its error reply.
        co_return timed_out_or(deadline, frame.error());
    }
    if (frame->header.type != PFS_MSG_AUTH_RESPONSE || !(frame->header.flags & PFS_FLAG_REPLY))
        co_return unexpected(*frame, "AUTH_RESPONSE reply");
    auto reply = decode_reply(frame->payload);
    if (!reply) co_return reply.error();
    if (reply->status == PFS_E_AUTH)
        co_return Error{PFS_E_AUTH, std::string("authentication refused by the server (wrong ") + auth::role_name(role) +
                                        " key or cluster secret?)"};
    if (reply->status != PFS_OK) co_return reply_error(*reply);
    auto proof = decode(reply->body, pfs_x_auth_proof);
    if (!proof) co_return Error{PFS_E_PROTO, "malformed server proof"};
    if (!auth::equal(to_array(proof->mac), auth::server_proof(*key, client_nonce, server_nonce, role, proof->flags)))
        co_return Error{PFS_E_AUTH, "server could not prove it knows the shared secret"};
    if ((response.flags & proof->flags) != response.flags)
        co_return Error{PFS_E_AUTH, (response.flags & ~proof->flags & PFS_AUTH_FRAME_MAC)
                                        ? "server refused frame MACs"
                                        : "server refused MACs over bulk data"};
    if ((proof->flags & PFS_AUTH_DATA_MAC) && !(proof->flags & PFS_AUTH_FRAME_MAC))
        co_return Error{PFS_E_PROTO, "server proof asks for data MACs without frame MACs"};
    if (proof->flags & PFS_AUTH_FRAME_MAC)
        start_frame_macs(*conn, *key, server_nonce, client_nonce, false, proof->flags);
    co_return ok_status();
}

}  // namespace pfs
