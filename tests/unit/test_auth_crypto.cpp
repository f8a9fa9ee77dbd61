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

TEST_CASE("auth: proofs depend on secret and nonces, and on direction", "[auth]") {
    Secret a = Secret::from_bytes(as_bytes("0123456789abcdef-secret-a"));
    Secret b = Secret::from_bytes(as_bytes("0123456789abcdef-secret-b"));
    Nonce s = nonce_of(1), c = nonce_of(2);

    Mac base = client_proof(a, s, c);
    CHECK(equal(base, client_proof(a, s, c)));                  // deterministic
    CHECK_FALSE(equal(base, client_proof(b, s, c)));            // other secret
    CHECK_FALSE(equal(base, client_proof(a, nonce_of(3), c)));  // other server nonce
    CHECK_FALSE(equal(base, client_proof(a, s, nonce_of(3))));  // other client nonce
    CHECK_FALSE(equal(base, client_proof(a, c, s)));            // nonces swapped

    // Domain separation: a server proof is never a valid client proof for the same inputs.
    CHECK_FALSE(equal(client_proof(a, s, c), server_proof(a, s, c)));
    CHECK_FALSE(equal(client_proof(a, s, c), server_proof(a, c, s)));
    CHECK(equal(server_proof(a, c, s), server_proof(a, c, s)));

    // The exact construction both ends (kernel and user space) must agree on.
    std::vector<uint8_t> msg(reinterpret_cast<const uint8_t*>("pfs-auth-v1 client"),
                             reinterpret_cast<const uint8_t*>("pfs-auth-v1 client") + 18);
    msg.insert(msg.end(), s.begin(), s.end());
    msg.insert(msg.end(), c.begin(), c.end());
    CHECK(equal(base, hmac_sha256(a.bytes(), msg)));
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

TEST_CASE("auth: Secret copies and moves keep the bytes", "[auth]") {
    Secret a = Secret::from_bytes(as_bytes("0123456789abcdef"));
    Secret b = a;
    CHECK(std::string_view(reinterpret_cast<const char*>(b.bytes().data()), b.bytes().size()) ==
          "0123456789abcdef");
    Secret c = std::move(a);
    CHECK(c.bytes().size() == 16);
    CHECK(a.bytes().empty());
    b = Secret::from_bytes(as_bytes("another-secret-value"));
    CHECK(b.bytes().size() == 20);
    c = b;
    CHECK(c.bytes().size() == 20);
}

TEST_CASE("auth: Secret::load strips one trailing newline", "[auth]") {
    TempDir dir;
    auto path = write_secret(dir, "0123456789abcdef-secret\n");
    auto secret = Secret::load(path);
    REQUIRE(secret.ok());
    std::string_view got(reinterpret_cast<const char*>(secret->bytes().data()),
                         secret->bytes().size());
    CHECK(got == "0123456789abcdef-secret");

    path = write_secret(dir, "0123456789abcdef-secret\r\n");
    secret = Secret::load(path);
    REQUIRE(secret.ok());
    CHECK(secret->bytes().size() == 23);

    path = write_secret(dir, "0123456789abcdef\n\n", 0640);
    secret = Secret::load(path);
    REQUIRE(secret.ok());
    CHECK(secret->bytes().size() == 17);  // only one newline is stripped
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

TEST_CASE("auth: Secret::load refuses a file other users can access", "[auth]") {
    TempDir dir;
    auto path = write_secret(dir, "0123456789abcdef-secret\n", 0644);
    auto secret = Secret::load(path);
    REQUIRE_FALSE(secret.ok());
    CHECK(secret.error().message == "auth file " + path.string() +
                                        " is accessible by other users (mode 0644); chmod 600 it");

    path = write_secret(dir, "0123456789abcdef-secret\n", 0602);
    CHECK_FALSE(Secret::load(path).ok());
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
