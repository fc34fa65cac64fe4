// device_deferred_stub.cpp - run_deferred() of device_deferred.h in a libplexus built without
// CUDA: there is no device buffer to stage (device_collective_stub.cpp refuses one before), so a
// call that gets here anyway is refused, naming the function and the rank.
#include <fmt/format.h>

#include "comm/base/error.h"
#include "comm/core/communicator.h"
#include "comm/device/device_deferred.h"

namespace plexus::comm::device {

plx_result_t run_deferred(const char* fn, plx_comm* comm, void*, int, const DeviceArgs&,
                          const HostRun&) {
  return set_error(PLX_ERROR_UNSUPPORTED,
                   fmt::format("{}: rank {}: device buffers need CUDA, but this libplexus was "
                               "built without CUDA (configure with -DPLEXUS_CUDA=ON and a CUDA "
                               "toolkit)",
                               fn, comm->rank));
}

}  // namespace plexus::comm::device
