// ofi_util.cpp - libfabric error text and the API version asked for.
#include "comm/transport/ofi/ofi_util.h"

#include <fmt/format.h>

#include "comm/base/error.h"

namespace plexus::comm::ofi {

plx_result_t ofi_error(int rank, std::string_view call, long ret, std::string_view detail) {
  std::string message = fmt::format("rank {}: {} failed: {} ({})", rank, call,
                                    fi_strerror(static_cast<int>(ret < 0 ? -ret : ret)), ret);
  if (!detail.empty()) message += fmt::format(": {}", detail);
  return set_error(PLX_ERROR_TRANSPORT, std::move(message));
}

uint32_t requested_api_version(uint32_t library_version) {
  return library_version >= kDeviceRdmaApiVersion ? library_version : kMinApiVersion;
}

uint32_t api_version() {
  static const uint32_t version = requested_api_version(fi_version());
  return version;
}

}  // namespace plexus::comm::ofi
