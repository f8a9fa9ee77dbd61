#include "handshake.hpp"

namespace pfs {
namespace {

Error timed_out_or(const Connection::Deadline& deadline, Error e) {
    if (deadline.expired()) return Error{-ETIMEDOUT, "authentication handshake timed out"};
    return e;
}

Error unexpected(const Frame& f, const char* wanted) {
    return Error{PFS_E_PROTO, std::string("expected ") + wanted + ", got message type " +
                                  std::to_string(f.header.type) + " (" + pfs_msg_name(f.header.type) + ")"};
}

}  // namespace

awaitable<Status> server_handshake(std::shared_ptr<Connection> conn, const auth::Secret& secret,
                                   std::chrono::milliseconds timeout) {
    Connection::Deadline deadline(conn, timeout);
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

    auth::Nonce client_nonce;
    auth::Mac client_mac;
    std::copy(std::begin(response->nonce), std::end(response->nonce), client_nonce.begin());
    std::copy(std::begin(response->mac), std::end(response->mac), client_mac.begin());
    Frame reply{make_header(PFS_MSG_AUTH_RESPONSE, PFS_FLAG_REPLY, frame->header.request_id), {}};
    if (!auth::equal(client_mac, auth::client_proof(secret, server_nonce, client_nonce))) {
        reply.payload = encode_reply(Reply::fail(PFS_E_AUTH, "wrong shared secret"));
        conn->send(reply);
        conn->close_when_sent();
        co_return Error{PFS_E_AUTH, "peer does not know the shared secret"};
    }
    pfs_auth_proof proof{};
    auth::Mac mac = auth::server_proof(secret, client_nonce, server_nonce);
    std::copy(mac.begin(), mac.end(), proof.mac);
    reply.payload = encode_reply(Reply::ok(*encode(pfs_x_auth_proof, proof)));
    conn->send(reply);
    co_return ok_status();
}

awaitable<Status> client_handshake(std::shared_ptr<Connection> conn, const auth::Secret& secret,
                                   std::chrono::milliseconds timeout) {
    Connection::Deadline deadline(conn, timeout);
    auto frame = co_await conn->read_frame(kHandshakeMaxPayload);
    if (!frame) co_return timed_out_or(deadline, frame.error());
    if (frame->header.type != PFS_MSG_AUTH_CHALLENGE) co_return unexpected(*frame, "AUTH_CHALLENGE");
    auto challenge = decode(frame->payload, pfs_x_auth_challenge);
    if (!challenge) co_return Error{PFS_E_PROTO, "malformed AUTH_CHALLENGE"};

    auth::Nonce server_nonce;
    std::copy(std::begin(challenge->nonce), std::end(challenge->nonce), server_nonce.begin());
    auth::Nonce client_nonce = auth::random_nonce();
    auth::Mac mac = auth::client_proof(secret, server_nonce, client_nonce);
    pfs_auth_response response{};
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
        co_return Error{PFS_E_AUTH, "authentication refused by the server (wrong shared secret?)"};
    if (reply->status != PFS_OK) co_return reply_error(*reply);
    auto proof = decode(reply->body, pfs_x_auth_proof);
    if (!proof) co_return Error{PFS_E_PROTO, "malformed server proof"};
    auth::Mac server_mac;
    std::copy(std::begin(proof->mac), std::end(proof->mac), server_mac.begin());
    if (!auth::equal(server_mac, auth::server_proof(secret, client_nonce, server_nonce)))
        co_return Error{PFS_E_AUTH, "server could not prove it knows the shared secret"};
    co_return ok_status();
}

}  // namespace pfs
