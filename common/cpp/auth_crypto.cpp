#include "auth_crypto.hpp"

#include "fd.hpp"
#include "log.hpp"

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

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

constexpr std::string_view kClientLabel = "pfs-auth-v1 client";
constexpr std::string_view kServerLabel = "pfs-auth-v1 server";
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

Mac proof(const Secret& secret, std::string_view label, const Nonce& first, const Nonce& second) {
    std::array<uint8_t, kClientLabel.size() + 2 * sizeof(Nonce)> msg;
    auto out = std::copy(label.begin(), label.end(), msg.begin());
    out = std::copy(first.begin(), first.end(), out);
    std::copy(second.begin(), second.end(), out);
    return hmac_sha256(secret.bytes(), msg);
}

}  // namespace

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
    if ((st.st_mode & 0007) != 0) {
        char mode[16];
        std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
        return Error{-EACCES, "auth file " + p + " is accessible by other users (mode " + mode +
                                  "); chmod 600 it"};
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
    if (len < kMinSecretBytes) {
        return Error{-EINVAL, "auth file " + p + " is too short: at least " +
                                  std::to_string(kMinSecretBytes) +
                                  " bytes of secret are required"};
    }
    if (len > kMaxSecretBytes) return too_large(p);
    return Secret(std::vector<uint8_t>(buf.begin(), buf.begin() + static_cast<ptrdiff_t>(len)));
}

Secret Secret::from_bytes(std::span<const uint8_t> bytes) {
    return Secret(std::vector<uint8_t>(bytes.begin(), bytes.end()));
}

Secret::Secret(const Secret& other) : bytes_(other.bytes_) {}

Secret::Secret(Secret&& other) noexcept : bytes_(std::move(other.bytes_)) { other.bytes_.clear(); }

Secret& Secret::operator=(const Secret& other) {
    if (this != &other) {
        wipe();
        bytes_ = other.bytes_;
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

Mac client_proof(const Secret& secret, const Nonce& server_nonce, const Nonce& client_nonce) {
    return proof(secret, kClientLabel, server_nonce, client_nonce);
}

Mac server_proof(const Secret& secret, const Nonce& client_nonce, const Nonce& server_nonce) {
    return proof(secret, kServerLabel, client_nonce, server_nonce);
}

bool equal(const Mac& a, const Mac& b) { return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0; }

}  // namespace pfs::auth
