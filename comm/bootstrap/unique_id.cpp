// unique_id.cpp - encoding of the rendezvous address in plx_unique_id_t (see unique_id.h).
#include "comm/bootstrap/unique_id.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "comm/base/error.h"

namespace plexus::bootstrap {

namespace {

constexpr uint8_t kMagic[8] = {'P', 'L', 'X', 'U', 'I', 'D', 0x02, 0x00};
constexpr size_t kKeyOffset = 8;
constexpr size_t kPortOffset = kKeyOffset + kJobKeyBytes;
constexpr size_t kLengthOffset = kPortOffset + 2;
constexpr size_t kAddressOffset = kLengthOffset + 1;
static_assert(kAddressOffset + kMaxAddressChars <= PLX_UNIQUE_ID_BYTES);

}  // namespace

void encode_unique_id(const RendezvousAddress& address, plx_unique_id_t* id) {
  auto* bytes = reinterpret_cast<uint8_t*>(id->internal);
  std::memset(bytes, 0, PLX_UNIQUE_ID_BYTES);
  std::memcpy(bytes, kMagic, sizeof(kMagic));
  std::memcpy(bytes + kKeyOffset, address.key.data(), kJobKeyBytes);
  bytes[kPortOffset] = static_cast<uint8_t>(address.port & 0xff);
  bytes[kPortOffset + 1] = static_cast<uint8_t>((address.port >> 8) & 0xff);
  const size_t length = std::min(address.host.size(), kMaxAddressChars);
  bytes[kLengthOffset] = static_cast<uint8_t>(length);
  std::memcpy(bytes + kAddressOffset, address.host.data(), length);
}

plx_result_t decode_unique_id(const plx_unique_id_t& id, RendezvousAddress* out) {
  const auto* bytes = reinterpret_cast<const uint8_t*>(id.internal);
  if (std::memcmp(bytes, kMagic, sizeof(kMagic)) != 0) {
    return set_error(PLX_ERROR_INVALID_ARGUMENT,
                     "unique id is malformed: bad magic (was it made by plx_get_unique_id?)");
  }
  const size_t length = bytes[kLengthOffset];
  const int port = bytes[kPortOffset] | (bytes[kPortOffset + 1] << 8);
  if (length == 0 || length > kMaxAddressChars) {
    return set_error(PLX_ERROR_INVALID_ARGUMENT,
                     fmt::format("unique id is malformed: address length {} not in 1..{}", length,
                                 kMaxAddressChars));
  }
  if (port == 0) {
    return set_error(PLX_ERROR_INVALID_ARGUMENT, "unique id is malformed: port 0");
  }
  for (size_t i = kAddressOffset + length; i < PLX_UNIQUE_ID_BYTES; ++i) {
    if (bytes[i] != 0) {
      return set_error(PLX_ERROR_INVALID_ARGUMENT,
                       fmt::format("unique id is malformed: nonzero padding at byte {}", i));
    }
  }
  RendezvousAddress address;
  address.host.assign(reinterpret_cast<const char*>(bytes + kAddressOffset), length);
  address.port = port;
  std::memcpy(address.key.data(), bytes + kKeyOffset, kJobKeyBytes);
  *out = address;
  return PLX_SUCCESS;
}

}  // namespace plexus::bootstrap
