// unique_id.h - what a plx_unique_id_t holds: where the rendezvous server listens.
//
// Layout of the 128 bytes (little-endian): magic "PLXUID" 0x02 0x00 (8 bytes), job key (32),
// port (2), address length (1), address text (up to 64), zeros. The key is random per server
// (job_key.h): only a holder of the id can prove it in the handshake (handshake.h), so a rank
// with a stale id is refused instead of joining a stranger's communicator. The env path
// (MASTER_ADDR/MASTER_PORT) takes its key from job_key_from_env().
#pragma once

#include <cstdint>
#include <string>

#include "comm/bootstrap/job_key.h"

#include "plexus/plexus.h"

namespace plexus::bootstrap {

struct RendezvousAddress {
  std::string host;  // numeric IPv4/IPv6 address or a host name
  int port = 0;
  JobKeyBytes key{};  // proven in the handshake, never sent
};

constexpr size_t kMaxAddressChars = 64;

// Fills *id. The host must be at most kMaxAddressChars characters (checked by the caller).
void encode_unique_id(const RendezvousAddress& address, plx_unique_id_t* id);

// Returns PLX_ERROR_INVALID_ARGUMENT ("unique id is malformed: <why>") for bytes that
// plx_get_unique_id did not produce.
plx_result_t decode_unique_id(const plx_unique_id_t& id, RendezvousAddress* out);

}  // namespace plexus::bootstrap
