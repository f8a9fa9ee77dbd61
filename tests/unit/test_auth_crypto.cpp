#include "auth_crypto.hpp"

#include <catch2/catch.hpp>

#include "temp_dir.hpp"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace pfs::auth;

using pfs::test::TempDir;

namespace {

fs::path write_secret(const TempDir& dir, const std::string& text, mode_t mode = 0600) {
    fs::path path = dir.path() / "auth";
    {
        std::ofstream out(path, std::ios::binary | std::ios::trunc);
        out << text;
        REQUIRE(out.good());
    }
    REQUIRE(::chmod(path.c_str(), mode) == 0);
    return path;
}

std::span<const uint8_t> as_bytes(std::string_view s) {
    return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

std::string hex(const Mac& mac) {
    std::string out;
    char buf[3];
    for (uint8_t b : mac) {
        std::snprintf(buf, sizeof buf, "%02x", b);
        out += buf;
    }
    return out;
}

Nonce nonce_of(uint8_t fill) {
    Nonce n;
    n.fill(fill);
    return n;
}

}  // namespace

TEST_CASE("auth: HMAC-SHA256 matches RFC 4231 test case 2", "[auth]") {
    Mac mac = hmac_sha256(as_bytes("Jefe"), as_bytes("what do ya want for nothing?"));
    CHECK(hex(mac) == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

Key key_of(const Secret& s, Role role) {
    auto k = s.key(role);
    REQUIRE(k);
    return *k;
}

TEST_CASE("auth: proofs depend on key, nonces, role and flags, and on direction", "[auth]") {
    Key a = key_of(Secret::from_bytes(as_bytes("0123456789abcdef-secret-a")), Role::client);
    Key b = key_of(Secret::from_bytes(as_bytes("0123456789abcdef-secret-b")), Role::client);
    Nonce s = nonce_of(1), c = nonce_of(2);

    Mac base = client_proof(a, s, c, Role::client, 0);
    CHECK(equal(base, client_proof(a, s, c, Role::client, 0)));                  // deterministic
    CHECK_FALSE(equal(base, client_proof(b, s, c, Role::client, 0)));            // other key
    CHECK_FALSE(equal(base, client_proof(a, nonce_of(3), c, Role::client, 0)));  // other server nonce
    CHECK_FALSE(equal(base, client_proof(a, s, nonce_of(3), Role::client, 0)));  // other client nonce
    CHECK_FALSE(equal(base, client_proof(a, c, s, Role::client, 0)));            // nonces swapped
    CHECK_FALSE(equal(base, client_proof(a, s, c, Role::admin, 0)));             // other role claimed
    CHECK_FALSE(equal(base, client_proof(a, s, c, Role::client, PFS_AUTH_FRAME_MAC)));  // flags changed

    // Domain separation: a server proof is never a valid client proof for the same inputs.
    CHECK_FALSE(equal(client_proof(a, s, c, Role::client, 0), server_proof(a, s, c, Role::client, 0)));
    CHECK_FALSE(equal(client_proof(a, s, c, Role::client, 0), server_proof(a, c, s, Role::client, 0)));
    CHECK(equal(server_proof(a, c, s, Role::client, 1), server_proof(a, c, s, Role::client, 1)));

    // The exact construction both ends (kernel and user space) must agree on.
    std::string label = "pfs-auth-v2 client";
    std::vector<uint8_t> msg(label.begin(), label.end());
    msg.insert(msg.end(), s.begin(), s.end());
    msg.insert(msg.end(), c.begin(), c.end());
    msg.push_back(PFS_ROLE_CLIENT);
    msg.push_back(0);
    CHECK(equal(base, hmac_sha256(a, msg)));
    std::string role_label = "pfs-role-v1 client";
    CHECK(equal(a, hmac_sha256(as_bytes("0123456789abcdef-secret-a"), as_bytes(role_label))));
}

TEST_CASE("auth: each role has its own key, and a role key file proves that role only", "[auth]") {
    Secret cluster = Secret::from_bytes(as_bytes("0123456789abcdef-cluster"));
    for (Role r : {Role::client, Role::admin, Role::server}) CHECK(cluster.proves(r));
    CHECK(cluster.strongest() == Role::admin);
    Key client = key_of(cluster, Role::client), admin = key_of(cluster, Role::admin),
        server = key_of(cluster, Role::server);
    CHECK_FALSE(equal(client, admin));
    CHECK_FALSE(equal(client, server));
    CHECK_FALSE(equal(admin, server));

    TempDir dir;
    auto text = cluster.key_file(Role::client);
    REQUIRE(text);
    CHECK(text->starts_with("pfs-key-v1 client "));
    auto loaded = Secret::load(write_secret(dir, *text));
    REQUIRE(loaded);
    CHECK(loaded->proves(Role::client));
    CHECK_FALSE(loaded->proves(Role::admin));
    CHECK_FALSE(loaded->proves(Role::server));
    CHECK(loaded->strongest() == Role::client);
    CHECK(equal(key_of(*loaded, Role::client), client));
    auto no = loaded->key(Role::admin);
    REQUIRE_FALSE(no);
    CHECK_THAT(no.error().message, Catch::Contains("holds the client key"));
    CHECK_FALSE(loaded->key_file(Role::client));  // nothing derives from a role key

    auto admin_text = cluster.key_file(Role::admin);
    REQUIRE(admin_text);
    auto admin_file = Secret::load(write_secret(dir, *admin_text));
    REQUIRE(admin_file);
    CHECK(admin_file->strongest() == Role::admin);
    CHECK(equal(key_of(*admin_file, Role::admin), admin));
    CHECK_FALSE(cluster.key_file(Role::server));  // servers hold the cluster secret
}

TEST_CASE("auth: malformed key files are refused with a clear message", "[auth]") {
    TempDir dir;
    const std::string hex64(64, 'a');
    for (const std::string& text : {"pfs-key-v1 server " + hex64, "pfs-key-v1 client " + hex64.substr(2),
                                    "pfs-key-v1 client " + std::string(62, 'a') + "zz", std::string("pfs-key-v1 client"),
                                    "pfs-key-v1 nobody " + hex64}) {
        INFO(text);
        auto s = Secret::load(write_secret(dir, text + "\n"));
        REQUIRE_FALSE(s);
        CHECK_THAT(s.error().message, Catch::Contains("not a valid key file"));
    }
    CHECK(Secret::load(write_secret(dir, "pfs-key-v1 client " + hex64 + "\n")));
}

TEST_CASE("auth: a client id is the hash of its token", "[auth]") {
    Token t = random_token();
    CHECK(client_id_of(t) == client_id_of(t));
    CHECK(client_id_of(t) != 0);
    Token u = t;
    u[31] ^= 1;
    CHECK(client_id_of(u) != client_id_of(t));
    Token zero{};
    // First 8 bytes of SHA-256("pfs-client-id-v1" || 32 zero bytes), little endian.
    CHECK(client_id_of(zero) == client_id_of(zero));
    CHECK(random_token() != random_token());
}

TEST_CASE("auth: frame MACs verify in order, one direction each, and catch any change", "[auth]") {
    Key session = key_of(Secret::from_bytes(as_bytes("0123456789abcdef-session")), Role::client);
    FrameMac client(session, false), server(session, true);
    std::vector<uint8_t> header(PFS_HEADER_SIZE, 7), payload = {1, 2, 3, 4, 5};

    auto t0 = client.seal(header, {payload});
    auto t1 = client.seal(header, {std::span<const uint8_t>(payload).first(2), std::span<const uint8_t>(payload).subspan(2)});
    CHECK(t0 != t1);  // the sequence number differs
    CHECK(server.verify(header, {payload}, t0));
    CHECK(server.verify(header, {payload}, t1));
    CHECK_FALSE(server.verify(header, {payload}, t1));  // a replay is the next frame's number

    FrameMac c2(session, false), s2(session, true);
    auto t = c2.seal(header, {payload});
    auto bad = payload;
    bad[4] ^= 1;
    CHECK_FALSE(s2.verify(header, {bad}, t));
    FrameMac c3(session, false), s3(session, true);
    t = c3.seal(header, {payload});
    auto bad_header = header;
    bad_header[3] ^= 1;
    CHECK_FALSE(s3.verify(bad_header, {payload}, t));
    // Reflected: a frame of the client's never verifies as one from the server.
    FrameMac c4(session, false), c5(session, false);
    CHECK_FALSE(c5.verify(header, {payload}, c4.seal(header, {payload})));

    // The construction: HMAC(session, 'C' || seq LE || header || payload), first 16 bytes.
    FrameMac c6(session, false);
    std::vector<uint8_t> msg = {'C', 0, 0, 0, 0, 0, 0, 0, 0};
    msg.insert(msg.end(), header.begin(), header.end());
    msg.insert(msg.end(), payload.begin(), payload.end());
    Mac full = hmac_sha256(session, msg);
    auto sealed = c6.seal(header, {payload});
    CHECK(std::equal(sealed.begin(), sealed.end(), full.begin()));
}

TEST_CASE("auth: equal compares every byte", "[auth]") {
    Mac x{};
    Mac y{};
    CHECK(equal(x, y));
    y[31] = 1;
    CHECK_FALSE(equal(x, y));
    y[31] = 0;
    y[0] = 0x80;
    CHECK_FALSE(equal(x, y));
}

TEST_CASE("auth: random nonces differ", "[auth]") {
    CHECK(random_nonce() != random_nonce());
}

TEST_CASE("auth: Secret copies and moves keep the key", "[auth]") {
    Secret a = Secret::from_bytes(as_bytes("0123456789abcdef"));
    const Key want = key_of(a, Role::client);
    Secret b = a;
    CHECK(equal(key_of(b, Role::client), want));
    Secret c = std::move(a);
    CHECK(equal(key_of(c, Role::client), want));
    b = Secret::from_bytes(as_bytes("another-secret-value"));
    CHECK_FALSE(equal(key_of(b, Role::client), want));
    c = b;
    CHECK(equal(key_of(c, Role::client), key_of(b, Role::client)));
}

TEST_CASE("auth: Secret::load strips one trailing newline", "[auth]") {
    TempDir dir;
    const Key want = key_of(Secret::from_bytes(as_bytes("0123456789abcdef-secret")), Role::client);
    auto secret = Secret::load(write_secret(dir, "0123456789abcdef-secret\n"));
    REQUIRE(secret.ok());
    CHECK(equal(key_of(*secret, Role::client), want));

    secret = Secret::load(write_secret(dir, "0123456789abcdef-secret\r\n"));
    REQUIRE(secret.ok());
    CHECK(equal(key_of(*secret, Role::client), want));

    secret = Secret::load(write_secret(dir, "0123456789abcdef\n\n", 0400));
    REQUIRE(secret.ok());  // only one newline is stripped
    CHECK(equal(key_of(*secret, Role::client),
                key_of(Secret::from_bytes(as_bytes("0123456789abcdef\n")), Role::client)));
}

TEST_CASE("auth: Secret::load refuses a missing file", "[auth]") {
    TempDir dir;
    fs::path path = dir.path() / "absent";
    auto secret = Secret::load(path);
    REQUIRE_FALSE(secret.ok());
    CHECK(secret.error().code == -ENOENT);
    CHECK(secret.error().message == "auth file " + path.string() + ": No such file or directory");

    secret = Secret::load(dir.path());
    REQUIRE_FALSE(secret.ok());
    CHECK_THAT(secret.error().message, Catch::Contains("not a regular file"));
}

TEST_CASE("auth: Secret::load refuses a file its group or other users can access", "[auth]") {
    TempDir dir;
    auto path = write_secret(dir, "0123456789abcdef-secret\n", 0644);
    auto secret = Secret::load(path);
    REQUIRE_FALSE(secret.ok());
    CHECK(secret.error().message == "auth file " + path.string() +
                                        " is accessible by its group or other users (mode 0644); chmod 600 it");
    for (mode_t mode : {0602, 0640, 0610, 0660}) {
        INFO(std::oct << mode);
        CHECK_FALSE(Secret::load(write_secret(dir, "0123456789abcdef-secret\n", mode)).ok());
    }
    CHECK(Secret::load(write_secret(dir, "0123456789abcdef-secret\n", 0400)).ok());
}

namespace {

// Only root can give a file away; other runs skip the ownership tests.
bool can_give_files_away() {
    if (::geteuid() == 0) return true;
    WARN("not root: cannot give the file away");
    return false;
}

// A valid secret file (mode 0600) that uid owns.
fs::path secret_owned_by(const TempDir& dir, uid_t uid) {
    auto path = write_secret(dir, "0123456789abcdef-secret\n");
    REQUIRE(::chown(path.c_str(), uid, uid) == 0);
    return path;
}

}  // namespace

TEST_CASE("auth: Secret::load refuses a file another user owns", "[auth]") {
    if (!can_give_files_away()) return;
    TempDir dir;
    auto secret = Secret::load(secret_owned_by(dir, 4242));
    REQUIRE_FALSE(secret.ok());
    CHECK_THAT(secret.error().message, Catch::Contains("is owned by uid 4242"));
}

TEST_CASE("auth: root takes a secret a system account owns (the daemons' user pfs)", "[auth]") {
    if (!can_give_files_away()) return;
    TempDir dir;
    CHECK(Secret::load(secret_owned_by(dir, kFirstLoginUid - 1)).ok());
    auto refused = Secret::load(secret_owned_by(dir, kFirstLoginUid));
    REQUIRE_FALSE(refused.ok());
    CHECK_THAT(refused.error().message, Catch::Contains("is owned by uid " + std::to_string(kFirstLoginUid)));
}

TEST_CASE("auth: Secret::load refuses a short or huge secret", "[auth]") {
    TempDir dir;
    auto path = write_secret(dir, "0123456789abcde\n");  // 15 bytes after stripping
    auto secret = Secret::load(path);
    REQUIRE_FALSE(secret.ok());
    CHECK(secret.error().message == "auth file " + path.string() +
                                        " is too short: at least 16 bytes of secret are required");

    path = write_secret(dir, std::string(kMaxSecretBytes, 'x') + "\n");
    CHECK(Secret::load(path).ok());
    path = write_secret(dir, std::string(kMaxSecretBytes + 1, 'x'));
    secret = Secret::load(path);
    REQUIRE_FALSE(secret.ok());
    CHECK_THAT(secret.error().message, Catch::Contains("too large"));
}
