// device_checks.cpp - the checks of device_collective.h that both builds share: calls that take
// host buffers only (non-blocking forms, groups) refuse a stream or a device buffer.
#include <fmt/format.h>

#include "comm/core/communicator.h"
#include "comm/core/error.h"
#include "comm/device/cuda_driver.h"
#include "comm/device/device_collective.h"

namespace plexus::comm::device {

plx_result_t reject_device_buffers(const char* fn, const plx_comm* comm, const void* stream,
                                   const DeviceArgs& args, const char* where) {
  if (stream != nullptr) {
    return set_error(PLX_ERROR_UNSUPPORTED,
                     fmt::format("{}: rank {}: stream {} is not NULL {}; streams and device "
                                 "buffers are supported by blocking calls outside groups only",
                                 fn, comm->rank, stream, where));
  }
  if (!cuda_driver_loaded()) return PLX_SUCCESS;  // no driver: no device memory
  const struct {
    const char* name;
    const void* ptr;
    size_t count;
  } buffers[] = {{"sendbuf", args.send, args.send_count}, {"recvbuf", args.recv, args.recv_count}};
  for (const auto& b : buffers) {
    if (b.count > 0 && driver_says_device(b.ptr)) {
      return set_error(PLX_ERROR_UNSUPPORTED,
                       fmt::format("{}: rank {}: {} {} is device memory {}; device buffers are "
                                   "supported by blocking calls outside groups only (use the "
                                   "blocking form with a stream)",
                                   fn, comm->rank, b.name, b.ptr, where));
    }
  }
  return PLX_SUCCESS;
}

}  // namespace plexus::comm::device
