// eager_limit.cpp - see eager_limit.h.
#include "comm/transport/ofi/eager_limit.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <optional>
#include <string>

namespace plexus::comm::ofi {
namespace {

constexpr long kRxmDefaultBufferBytes = 16384;  // RXM_BUF_SIZE
constexpr long kMinBufferBytes = 1L << 10;
constexpr long kMaxBufferBytes = static_cast<long>(kMaxRxmBufferBytes);

// libfabric's fi_param_get for a size_t: strtol(value, NULL, 0). nullopt when it overflows or
// finds no digit.
std::optional<long> read_size(const char* text) {
  char* end = nullptr;
  errno = 0;
  const long value = std::strtol(text, &end, 0);
  if (errno != 0 || end == text) return std::nullopt;
  return value;
}

bool is_rxm(std::string_view provider) {
  return provider.find("ofi_rxm") != std::string_view::npos;
}

// Both variables of this process, read once.
struct RxmEnvironment {
  std::optional<std::string> buffer_size, eager_limit;
};
const RxmEnvironment& process_environment() {
  static const RxmEnvironment env = [] {
    RxmEnvironment e;
    if (const char* v = std::getenv("FI_OFI_RXM_BUFFER_SIZE")) e.buffer_size = v;
    if (const char* v = std::getenv("FI_OFI_RXM_EAGER_LIMIT")) e.eager_limit = v;
    return e;
  }();
  return env;
}

const char* c_str(const std::optional<std::string>& value) {
  return value ? value->c_str() : nullptr;
}

}  // namespace

size_t eager_limit_bytes(std::string_view provider, const char* rxm_buffer_size,
                         const char* rxm_eager_limit) {
  if (!is_rxm(provider)) return 0;
  // The environment is not trusted: anything this cannot mirror leaves the limit unknown.
  long buffer = kRxmDefaultBufferBytes;
  if (rxm_buffer_size != nullptr) {
    const std::optional<long> value = read_size(rxm_buffer_size);
    if (!value) return 0;
    buffer = *value;
  }
  if (buffer < kMinBufferBytes || buffer > kMaxBufferBytes) return 0;
  size_t limit = static_cast<size_t>(buffer) - kRxmHeaderBoundBytes;
  if (rxm_eager_limit != nullptr) {
    const std::optional<long> eager = read_size(rxm_eager_limit);
    if (!eager || *eager < kMinBufferBytes || *eager > kMaxBufferBytes) return 0;
    limit = std::min(limit, static_cast<size_t>(*eager));
  }
  return limit;
}

size_t process_eager_limit_bytes(std::string_view provider) {
  const RxmEnvironment& env = process_environment();
  return eager_limit_bytes(provider, c_str(env.buffer_size), c_str(env.eager_limit));
}

std::string rxm_buffer_size_problem(std::string_view provider, const char* rxm_buffer_size) {
  if (!is_rxm(provider) || rxm_buffer_size == nullptr) return "";
  char* end = nullptr;
  errno = 0;
  // Past a long, strtol gives LONG_MIN or LONG_MAX (ERANGE): negative or too large alike.
  const long value = std::strtol(rxm_buffer_size, &end, 0);
  if (end == rxm_buffer_size) return "";  // no digits: rxm's default, with its warning
  if (errno != ERANGE && value >= 0 && value <= kMaxBufferBytes) return "";
  return fmt::format("FI_OFI_RXM_BUFFER_SIZE='{}' is {}; ofi_rxm allocates its receive pools in "
                     "buffers of that size (past {} bytes a communicator's setup stalls or fails "
                     "with ENOMEM): unset it or give at most {}",
                     rxm_buffer_size, value < 0 ? "negative" : "too large", kMaxRxmBufferBytes,
                     kMaxRxmBufferBytes);
}

std::string process_rxm_buffer_size_problem(std::string_view provider) {
  return rxm_buffer_size_problem(provider, c_str(process_environment().buffer_size));
}

}  // namespace plexus::comm::ofi
