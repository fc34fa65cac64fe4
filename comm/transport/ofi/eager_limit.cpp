// eager_limit.cpp - see eager_limit.h.
#include "comm/transport/ofi/eager_limit.h"

#include <charconv>
#include <cstdlib>
#include <cstring>

namespace plexus::comm::ofi {
namespace {

constexpr size_t kRxmDefaultBufferBytes = size_t{16} << 10;  // RXM_BUF_SIZE
constexpr size_t kMinBufferBytes = size_t{1} << 10;
constexpr size_t kMaxBufferBytes = size_t{1} << 30;

// FI_OFI_RXM_BUFFER_SIZE as libfabric reads it, or the default where it is unset or not a plain
// byte count in range (the environment is not trusted; libfabric refuses what is too small).
size_t rxm_buffer_bytes() {
  const char* text = std::getenv("FI_OFI_RXM_BUFFER_SIZE");
  if (text == nullptr || *text == '\0') return kRxmDefaultBufferBytes;
  size_t value = 0;
  const char* end = text + std::strlen(text);
  const auto [ptr, ec] = std::from_chars(text, end, value);
  if (ec != std::errc() || ptr != end || value < kMinBufferBytes || value > kMaxBufferBytes) {
    return kRxmDefaultBufferBytes;
  }
  return value;
}

}  // namespace

size_t eager_limit_bytes(std::string_view provider) {
  if (provider.find("ofi_rxm") == std::string_view::npos) return 0;
  return rxm_buffer_bytes() - kRxmHeaderBoundBytes;
}

}  // namespace plexus::comm::ofi
