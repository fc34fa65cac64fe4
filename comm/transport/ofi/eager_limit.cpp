// eager_limit.cpp - see eager_limit.h.
#include "comm/transport/ofi/eager_limit.h"

#include <cerrno>
#include <cstdlib>
#include <optional>
#include <string>

namespace plexus::comm::ofi {
namespace {

constexpr long kRxmDefaultBufferBytes = 16384;  // RXM_BUF_SIZE
constexpr long kMinBufferBytes = 1L << 10;
constexpr long kMaxBufferBytes = 1L << 30;

}  // namespace

size_t eager_limit_bytes(std::string_view provider, const char* rxm_buffer_size) {
  if (provider.find("ofi_rxm") == std::string_view::npos) return 0;
  long buffer = kRxmDefaultBufferBytes;
  if (rxm_buffer_size != nullptr) {
    // libfabric's fi_param_get for a size_t: strtol(value, NULL, 0). The environment is not
    // trusted: anything this cannot mirror leaves the limit unknown.
    char* end = nullptr;
    errno = 0;
    buffer = std::strtol(rxm_buffer_size, &end, 0);
    if (errno != 0 || end == rxm_buffer_size) return 0;
  }
  if (buffer < kMinBufferBytes || buffer > kMaxBufferBytes) return 0;
  return static_cast<size_t>(buffer) - kRxmHeaderBoundBytes;
}

size_t process_eager_limit_bytes(std::string_view provider) {
  static const std::optional<std::string> value = []() -> std::optional<std::string> {
    const char* text = std::getenv("FI_OFI_RXM_BUFFER_SIZE");
    if (text == nullptr) return std::nullopt;
    return std::string(text);
  }();
  return eager_limit_bytes(provider, value ? value->c_str() : nullptr);
}

}  // namespace plexus::comm::ofi
