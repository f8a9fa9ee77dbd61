#include "auth_crypto.hpp"

#include "fd.hpp"
#include "log.hpp"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/params.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace pfs::auth {
namespace {

constexpr std::string_view kClientLabel = "pfs-auth-v2 client";
constexpr std::string_view kServerLabel = "pfs-auth-v2 server";
constexpr std::string_view kSessionLabel = "pfs-session-v2";
constexpr std::string_view kRoleLabel = "pfs-role-v1 ";
constexpr std::string_view kClientIdLabel = "pfs-client-id-v1";
constexpr std::string_view kKeyFileMagic = "pfs-key-v1 ";
static_assert(kClientLabel.size() == kServerLabel.size());

[[noreturn]] void crypto_failure(const char* what) {
    char detail[256];
    ERR_error_string_n(ERR_get_error(), detail, sizeof detail);
    log::error("cryptographic primitive failed; cannot continue safely",
               {{"operation", what}, {"openssl", detail}});
    std::abort();
}

// Wipes a buffer that held secret bytes however the function leaves.
class Cleanser {
public:
    explicit Cleanser(std::vector<uint8_t>& buf) : buf_(buf) {}
    ~Cleanser() { OPENSSL_cleanse(buf_.data(), buf_.size()); }
    Cleanser(const Cleanser&) = delete;
    Cleanser& operator=(const Cleanser&) = delete;

private:
    std::vector<uint8_t>& buf_;
};

Error too_large(const std::string& path) {
    return Error{-EFBIG, "auth file " + path + " is too large: at most " +
                             std::to_string(kMaxSecretBytes) + " bytes of secret are allowed"};
}

std::span<const uint8_t> bytes_of(std::string_view s) {
    return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

// HMAC(key, label || pieces...), the pieces concatenated.
Mac labelled_mac(std::span<const uint8_t> key, std::string_view label,
                 std::initializer_list<std::span<const uint8_t>> pieces) {
    std::vector<uint8_t> msg(label.begin(), label.end());
    for (auto p : pieces) msg.insert(msg.end(), p.begin(), p.end());
    Cleanser wipe(msg);
    return hmac_sha256(key, msg);
}

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// "ROLE HEX" after the magic: a role key file's content.
Result<Secret> parse_key_file(const std::string& path, std::string_view rest) {
    auto malformed = [&](const std::string& why) {
        return Error{-EINVAL, "auth file " + path + " is not a valid key file (" + why +
                                  "); expected \"pfs-key-v1 client|admin <64 hex digits>\""};
    };
    auto space = rest.find(' ');
    if (space == std::string_view::npos) return malformed("no key");
    auto role = parse_role(rest.substr(0, space));
    if (!role || *role == Role::server)
        return malformed("role must be client or admin; servers need the cluster secret");
    std::string_view hex = rest.substr(space + 1);
    Key key{};
    if (hex.size() != 2 * key.size()) return malformed("key length");
    for (size_t i = 0; i < key.size(); ++i) {
        int hi = hex_value(hex[2 * i]), lo = hex_value(hex[2 * i + 1]);
        if (hi < 0 || lo < 0) return malformed("not hex");
        key[i] = static_cast<uint8_t>(hi << 4 | lo);
    }
    Secret s = Secret::role_key(*role, key);
    OPENSSL_cleanse(key.data(), key.size());
    return s;
}

}  // namespace

const char* role_name(Role role) {
    switch (role) {
    case Role::client: return "client";
    case Role::admin: return "admin";
    case Role::server: return "server";
    }
    return "?";
}

std::optional<Role> parse_role(std::string_view name) {
    for (Role r : {Role::client, Role::admin, Role::server})
        if (name == role_name(r)) return r;
    return std::nullopt;
}

Result<Secret> Secret::load(const std::filesystem::path& path) {
    const std::string p = path.string();
    // O_NONBLOCK: a FIFO planted at the path must not hang the daemon before the type check.
    UniqueFd fd(::open(p.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
    if (fd.get() < 0) return Error{-errno, "auth file " + p + ": " + std::strerror(errno)};

    struct stat st {};
    if (::fstat(fd.get(), &st) < 0) {
        return Error{-errno, "auth file " + p + ": " + std::strerror(errno)};
    }
    if (!S_ISREG(st.st_mode)) return Error{-EINVAL, "auth file " + p + " is not a regular file"};
    if ((st.st_mode & 0077) != 0) {
        char mode[16];
        std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
        return Error{-EACCES, "auth file " + p + " is accessible by its group or other users (mode " + mode +
                                  "); chmod 600 it"};
    }
    // The owner could swap the secret: it must be this process's user. Root
    // also takes a system account's file (uid below 1000, Debian's
    // SYS_UID_MAX): on a server node the secret belongs to the daemons' user
    // pfs, and root's pfs-ctl and mounts use it there.
    const bool system_owned_for_root = ::geteuid() == 0 && st.st_uid < kFirstLoginUid;
    if (st.st_uid != ::geteuid() && !system_owned_for_root) {
        return Error{-EACCES, "auth file " + p + " is owned by uid " + std::to_string(st.st_uid) +
                                  ", not by this process's user (uid " + std::to_string(::geteuid()) +
                                  "); chown it"};
    }
    // Room for the largest secret plus "\r\n" plus one byte to notice a longer file.
    const size_t limit = kMaxSecretBytes + 3;
    if (st.st_size > static_cast<off_t>(limit)) return too_large(p);

    std::vector<uint8_t> buf(limit);
    Cleanser wipe_buf(buf);
    size_t len = 0;
    while (len < buf.size()) {
        ssize_t n = ::read(fd.get(), buf.data() + len, buf.size() - len);
        if (n < 0) {
            if (errno == EINTR) continue;
            return Error{-errno, "auth file " + p + ": " + std::strerror(errno)};
        }
        if (n == 0) break;
        len += static_cast<size_t>(n);
    }

    if (len > 0 && buf[len - 1] == '\n') {
        --len;
        if (len > 0 && buf[len - 1] == '\r') --len;
    }
    std::string_view text(reinterpret_cast<const char*>(buf.data()), len);
    if (text.starts_with(kKeyFileMagic)) return parse_key_file(p, text.substr(kKeyFileMagic.size()));
    if (len < kMinSecretBytes) {
        return Error{-EINVAL, "auth file " + p + " is too short: at least " +
                                  std::to_string(kMinSecretBytes) +
                                  " bytes of secret are required"};
    }
    if (len > kMaxSecretBytes) return too_large(p);
    return Secret(std::vector<uint8_t>(buf.begin(), buf.begin() + static_cast<ptrdiff_t>(len)), std::nullopt);
}

Secret Secret::from_bytes(std::span<const uint8_t> bytes) {
    return Secret(std::vector<uint8_t>(bytes.begin(), bytes.end()), std::nullopt);
}

Secret Secret::role_key(Role role, const Key& key) { return Secret(std::vector<uint8_t>(key.begin(), key.end()), role); }

Result<Key> Secret::key(Role role) const {
    if (!only_) return derive_role_key(bytes_, role);
    if (*only_ != role)
        return Error{PFS_E_AUTH, std::string("this auth file holds the ") + role_name(*only_) + " key, not the " +
                                     role_name(role) + " key"};
    Key k;
    std::copy(bytes_.begin(), bytes_.end(), k.begin());
    return k;
}

Result<std::string> Secret::key_file(Role role) const {
    if (only_) return Error{-EINVAL, "role keys derive from the cluster secret, not from a role key"};
    if (role == Role::server) return Error{-EINVAL, "servers hold the cluster secret, not a role key"};
    auto k = key(role);
    if (!k) return k.error();
    std::string out(kKeyFileMagic);
    out += role_name(role);
    out += ' ';
    char h[3];
    for (uint8_t b : *k) {
        std::snprintf(h, sizeof h, "%02x", b);
        out += h;
    }
    OPENSSL_cleanse(k->data(), k->size());
    return out + "\n";
}

Secret::Secret(const Secret& other) : bytes_(other.bytes_), only_(other.only_) {}

Secret::Secret(Secret&& other) noexcept : bytes_(std::move(other.bytes_)), only_(other.only_) { other.bytes_.clear(); }

Secret& Secret::operator=(const Secret& other) {
    if (this != &other) {
        wipe();
        bytes_ = other.bytes_;
        only_ = other.only_;
    }
    return *this;
}

Secret& Secret::operator=(Secret&& other) noexcept {
    if (this != &other) {
        wipe();
        // Swap rather than move-assign: the other side ends up owning our wiped buffer, so no
        // copy of the old secret outlives this call.
        bytes_.swap(other.bytes_);
        other.bytes_.clear();
        only_ = other.only_;
    }
    return *this;
}

Secret::~Secret() { wipe(); }

void Secret::wipe() noexcept {
    if (!bytes_.empty()) OPENSSL_cleanse(bytes_.data(), bytes_.size());
}

Nonce random_nonce() {
    Nonce nonce;
    if (RAND_bytes(nonce.data(), static_cast<int>(nonce.size())) != 1) {
        crypto_failure("RAND_bytes");
    }
    return nonce;
}

Token random_token() {
    Token t;
    if (RAND_bytes(t.data(), static_cast<int>(t.size())) != 1) crypto_failure("RAND_bytes");
    return t;
}

Mac hmac_sha256(std::span<const uint8_t> key, std::span<const uint8_t> data) {
    // OpenSSL reads a null key as "keep the previous key"; an empty key must stay empty.
    static const uint8_t kEmpty = 0;
    const uint8_t* key_ptr = key.empty() ? &kEmpty : key.data();
    const uint8_t* data_ptr = data.empty() ? &kEmpty : data.data();
    Mac mac;
    unsigned int len = 0;
    if (HMAC(EVP_sha256(), key_ptr, static_cast<int>(key.size()), data_ptr, data.size(),
             mac.data(), &len) == nullptr ||
        len != mac.size()) {
        crypto_failure("HMAC-SHA256");
    }
    return mac;
}

Key derive_role_key(std::span<const uint8_t> cluster_secret, Role role) {
    return labelled_mac(cluster_secret, kRoleLabel, {bytes_of(role_name(role))});
}

Mac client_proof(const Key& key, const Nonce& server_nonce, const Nonce& client_nonce, Role role, uint8_t flags) {
    const uint8_t tail[2] = {static_cast<uint8_t>(role), flags};
    return labelled_mac(key, kClientLabel, {server_nonce, client_nonce, tail});
}

Mac server_proof(const Key& key, const Nonce& client_nonce, const Nonce& server_nonce, Role role, uint8_t flags) {
    const uint8_t tail[2] = {static_cast<uint8_t>(role), flags};
    return labelled_mac(key, kServerLabel, {client_nonce, server_nonce, tail});
}

Key session_key(const Key& key, const Nonce& server_nonce, const Nonce& client_nonce) {
    return labelled_mac(key, kSessionLabel, {server_nonce, client_nonce});
}

uint64_t client_id_of(const Token& token) {
    std::vector<uint8_t> msg(kClientIdLabel.begin(), kClientIdLabel.end());
    msg.insert(msg.end(), token.begin(), token.end());
    uint8_t digest[SHA256_DIGEST_LENGTH];
    if (!SHA256(msg.data(), msg.size(), digest)) crypto_failure("SHA-256");
    OPENSSL_cleanse(msg.data(), msg.size());
    uint64_t id = 0;
    for (int i = 7; i >= 0; --i) id = id << 8 | digest[i];
    return id ? id : 1;
}

bool equal(const Mac& a, const Mac& b) { return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0; }

struct FrameMac::Ctx {
    EVP_MAC* mac = nullptr;
    EVP_MAC_CTX* ctx = nullptr;
    ~Ctx() {
        EVP_MAC_CTX_free(ctx);
        EVP_MAC_free(mac);
    }
};

FrameMac::FrameMac(const Key& session, bool server_side)
    : ctx_(std::make_unique<Ctx>()), tx_dir_(server_side ? 'S' : 'C'), rx_dir_(server_side ? 'C' : 'S') {
    ctx_->mac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
    if (!ctx_->mac) crypto_failure("EVP_MAC_fetch(HMAC)");
    ctx_->ctx = EVP_MAC_CTX_new(ctx_->mac);
    if (!ctx_->ctx) crypto_failure("EVP_MAC_CTX_new");
    char digest[] = "SHA256";
    OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                           OSSL_PARAM_construct_end()};
    if (EVP_MAC_init(ctx_->ctx, session.data(), session.size(), params) != 1) crypto_failure("EVP_MAC_init");
}

FrameMac::~FrameMac() = default;

FrameTag FrameMac::tag(char direction, uint64_t seq, std::span<const uint8_t> header,
                       std::initializer_list<std::span<const uint8_t>> payload) {
    uint8_t head[9];
    head[0] = static_cast<uint8_t>(direction);
    for (int i = 0; i < 8; ++i) head[1 + i] = static_cast<uint8_t>(seq >> (8 * i));
    // A null key restarts with the key given at construction.
    if (EVP_MAC_init(ctx_->ctx, nullptr, 0, nullptr) != 1 || EVP_MAC_update(ctx_->ctx, head, sizeof head) != 1 ||
        EVP_MAC_update(ctx_->ctx, header.data(), header.size()) != 1)
        crypto_failure("EVP_MAC_update");
    for (auto part : payload)
        if (!part.empty() && EVP_MAC_update(ctx_->ctx, part.data(), part.size()) != 1)
            crypto_failure("EVP_MAC_update");
    Mac full;
    size_t len = 0;
    if (EVP_MAC_final(ctx_->ctx, full.data(), &len, full.size()) != 1 || len != full.size())
        crypto_failure("EVP_MAC_final");
    FrameTag out;
    std::copy_n(full.begin(), out.size(), out.begin());
    return out;
}

FrameTag FrameMac::seal(std::span<const uint8_t> header, std::initializer_list<std::span<const uint8_t>> payload) {
    return tag(tx_dir_, tx_seq_++, header, payload);
}

bool FrameMac::verify(std::span<const uint8_t> header, std::initializer_list<std::span<const uint8_t>> payload,
                      const FrameTag& got) {
    FrameTag want = tag(rx_dir_, rx_seq_++, header, payload);
    return CRYPTO_memcmp(want.data(), got.data(), want.size()) == 0;
}

}  // namespace pfs::auth
