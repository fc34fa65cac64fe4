// device_collective_stub.cpp - device_collective.h and device_state.h in a libplexus built
// without CUDA: a stream is refused, a device pointer the loaded driver recognises is refused
// (instead of crashing in a host memcpy), everything else runs on the host.
#include <fmt/format.h>

#include "comm/base/error.h"
#include "comm/core/communicator.h"
#include "comm/device/cuda_driver.h"
#include "comm/device/device_collective.h"
#include "comm/device/device_state.h"

namespace plexus::comm::device {

namespace {
constexpr const char* kRebuild = "this libplexus was built without CUDA (configure with "
                                 "-DPLEXUS_CUDA=ON and a CUDA toolkit)";
}  // namespace

plx_result_t run_collective(const char* fn, plx_comm* comm, void* stream, const DeviceArgs& args,
                            const HostRun& host_run) {
  if (stream != nullptr) {
    return set_error(PLX_ERROR_UNSUPPORTED,
                     fmt::format("{}: rank {}: stream {} is not NULL, but {}; pass NULL with "
                                 "host buffers",
                                 fn, comm->rank, stream, kRebuild));
  }
  if (cuda_driver_loaded()) {
    if (args.send_count > 0 && driver_says_device(args.send)) {
      return set_error(PLX_ERROR_UNSUPPORTED,
                       fmt::format("{}: rank {}: sendbuf {} is device memory, but {}", fn,
                                   comm->rank, args.send, kRebuild));
    }
    if (args.recv_count > 0 && driver_says_device(args.recv)) {
      return set_error(PLX_ERROR_UNSUPPORTED,
                       fmt::format("{}: rank {}: recvbuf {} is device memory, but {}", fn,
                                   comm->rank, static_cast<const void*>(args.recv), kRebuild));
    }
  }
  return host_run(args.send, args.recv);
}

void DeviceState::close_ipc() { ipc = IpcState::Off; }

DeviceState::~DeviceState() = default;  // nothing was ever allocated without CUDA

void DeviceStateFree::operator()(DeviceState* state) const { delete state; }

}  // namespace plexus::comm::device
