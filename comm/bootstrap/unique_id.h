// unique_id.h - what a plx_unique_id_t holds: where the rendezvous server listens.
//
// Layout of the 128 bytes (little-endian): magic "PLXUID" 0x01 0x00 (8 bytes), nonce (8), port (2),
// address length (1), address text (up to 64), zeros. The nonce is random per server, so a rank
// holding a stale id is refused instead of joining a stranger's communicator; the env path
// (MASTER_ADDR/MASTER_PORT) uses nonce 0.
#pragma once

#include <cstdint>
#include <string>

#include "plexus/plexus.h"

namespace plexus::bootstrap {

struct RendezvousAddress {
  std::string host;  // numeric IPv4/IPv6 address or a host name
  int port = 0;
  uint64_t nonce = 0;
};

constexpr size_t kMaxAddressChars = 64;

// Fills *id. The host must be at most kMaxAddressChars characters (checked by the caller).
void encode_unique_id(const RendezvousAddress& address, plx_unique_id_t* id);

// Returns PLX_ERROR_INVALID_ARGUMENT ("unique id is malformed: <why>") for bytes that
// plx_get_unique_id did not produce.
plx_result_t decode_unique_id(const plx_unique_id_t& id, RendezvousAddress* out);

}  // namespace plexus::bootstrap
