// ucx_util.cpp - UCX error text.
#include "comm/transport/ucx/ucx_util.h"

#include <fmt/format.h>

#include "comm/base/error.h"

namespace plexus::comm::ucx {

static_assert(kMaxRanks == 524288, "19 bits of rank in the wire tag");
static_assert(wire_tag(3, uint64_t{1} << 44) == ((uint64_t{3} << 45) | (uint64_t{1} << 44)),
              "the rank sits just above the P2P bit");

plx_result_t ucx_error(int rank, std::string_view call, ucs_status_t status,
                       std::string_view detail) {
  std::string message = fmt::format("rank {}: {} failed: {} ({})", rank, call,
                                    ucs_status_string(status), static_cast<int>(status));
  if (!detail.empty()) message += fmt::format(": {}", detail);
  return set_error(PLX_ERROR_TRANSPORT, std::move(message));
}

}  // namespace plexus::comm::ucx
