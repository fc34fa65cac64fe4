// handshake.h - how a rank and the rendezvous server prove to each other that they share the
// job's key (job_key.h) without sending it: a challenge-response with HMAC-SHA256 (RFC 2104,
// FIPS 198-1), in both directions, over fresh 32-byte nonces.
//
//   root -> rank   CHALLENGE {version, server_nonce}
//   rank -> root   HELLO {version, rank, nranks, client_nonce,
//                         HMAC(key, "plexus-hello"   | server_nonce | client_nonce | rank | nranks)}
//   root -> rank   WELCOME {HMAC(key, "plexus-welcome" | server_nonce | client_nonce | rank | nranks)}
//
// The server checks the HELLO's MAC before it allocates anything for the connection or reads
// any further message from it; the rank checks the WELCOME before it sends its first
// contribution, so neither side talks to an impostor. The nonces make a recorded HELLO useless
// for a later connection. What this does not do (no encryption of later traffic, a stolen key):
// docs/security.md.
#pragma once

#include <array>
#include <cstdint>

#include "comm/bootstrap/job_key.h"
#include "plexus/plexus.h"

namespace plexus::bootstrap {

constexpr size_t kNonceBytes = 32;
constexpr size_t kMacBytes = 32;
using Nonce = std::array<uint8_t, kNonceBytes>;
using Mac = std::array<uint8_t, kMacBytes>;

enum class MacPurpose { Hello, Welcome };

// A fresh random nonce (getrandom(2)). PLX_ERROR_SYSTEM if the kernel refuses.
plx_result_t random_nonce(Nonce* out);

// The MAC of one direction over both nonces and the claimed rank and size.
Mac handshake_mac(const JobKeyBytes& key, MacPurpose purpose, const Nonce& server_nonce,
                  const Nonce& client_nonce, int32_t rank, int32_t nranks);

// Constant-time comparison (CRYPTO_memcmp), so the time taken says nothing about the key.
bool macs_equal(const Mac& a, const Mac& b);

// Initialises OpenSSL now, on the calling thread. Call it before starting a thread that computes
// MACs and may still be running when the process exits (the rendezvous servers behind
// plx_get_unique_id, stopped at exit by a static registry): OpenSSL's first initialisation
// registers its exit-time cleanup, and exit handlers run in reverse order of registration, so the
// cleanup then runs after those threads are stopped. Made the other way round, the cleanup frees
// a live thread's OpenSSL state, and that thread frees it again as it ends (a double free).
void initialize_crypto();

}  // namespace plexus::bootstrap
