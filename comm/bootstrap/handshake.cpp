// handshake.cpp - the MACs of the rendezvous challenge-response (see handshake.h).
#include "comm/bootstrap/handshake.h"

#include <fmt/format.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sys/random.h>

#include <cerrno>
#include <cstring>
#include <string_view>
#include <vector>

#include "comm/base/error.h"

namespace plexus::bootstrap {

plx_result_t random_nonce(Nonce* out) {
  size_t filled = 0;
  while (filled < out->size()) {
    const ssize_t got = getrandom(out->data() + filled, out->size() - filled, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      return set_error(PLX_ERROR_SYSTEM, fmt::format("getrandom failed: {}", std::strerror(errno)));
    }
    filled += static_cast<size_t>(got);
  }
  return PLX_SUCCESS;
}

Mac handshake_mac(const JobKeyBytes& key, MacPurpose purpose, const Nonce& server_nonce,
                  const Nonce& client_nonce, int32_t rank, int32_t nranks) {
  // The label and its terminating NUL, then the nonces and the two fields, little-endian.
  const std::string_view label =
      purpose == MacPurpose::Hello ? std::string_view("plexus-hello-v2", 16)
                                   : std::string_view("plexus-welcome-v2", 18);
  std::vector<uint8_t> message;
  message.reserve(label.size() + server_nonce.size() + client_nonce.size() + 8);
  message.insert(message.end(), label.begin(), label.end());
  message.insert(message.end(), server_nonce.begin(), server_nonce.end());
  message.insert(message.end(), client_nonce.begin(), client_nonce.end());
  for (const int32_t field : {rank, nranks}) {
    for (int i = 0; i < 4; ++i) message.push_back(static_cast<uint8_t>(field >> (8 * i)));
  }
  Mac mac{};
  unsigned int length = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), message.data(), message.size(),
       mac.data(), &length);
  return mac;
}

bool macs_equal(const Mac& a, const Mac& b) {
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

void initialize_crypto() {
  // Options 0 would return at once without initialising: ask for something real.
  (void)OPENSSL_init_crypto(OPENSSL_INIT_ADD_ALL_DIGESTS, nullptr);
}

}  // namespace plexus::bootstrap
