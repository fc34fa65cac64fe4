// device_state.cpp - freeing a communicator's device state in a CUDA build (IPC slots, the
// pipelined staging's stream and events, the pinned buffer), and the CUDA error helper of
// device_paths.h.
#include <fmt/format.h>

#include <initializer_list>

#include "comm/base/error.h"
#include "comm/base/log.h"
#include "comm/core/communicator.h"
#include "comm/device/device_paths.h"

namespace plexus::comm::device {

plx_result_t cuda_result(cudaError_t err, const char* fn, int rank, const std::string& what) {
  if (err == cudaSuccess) return PLX_SUCCESS;
  (void)cudaGetLastError();  // clear it: it is reported here
  const plx_result_t code =
      err == cudaErrorInvalidResourceHandle || err == cudaErrorInvalidValue
          ? PLX_ERROR_INVALID_ARGUMENT
          : PLX_ERROR_SYSTEM;
  return set_error(code, fmt::format("{}: rank {}: {}: {}: {}", fn, rank, what,
                                     cudaGetErrorName(err), cudaGetErrorString(err)));
}

DeviceState& device_state(plx_comm* comm) {
  if (!comm->device) comm->device.reset(new DeviceState());
  return *comm->device;
}

void DeviceState::close_ipc() {
  if (own_slots == nullptr && peer_slots.empty()) {
    ipc = IpcState::Off;
    return;
  }
  int previous = -1;
  const bool switch_device = cudaGetDevice(&previous) == cudaSuccess && ipc_device >= 0 &&
                             previous != ipc_device && cudaSetDevice(ipc_device) == cudaSuccess;
  for (void* peer : peer_slots) {
    if (peer != nullptr && peer != own_slots) (void)cudaIpcCloseMemHandle(peer);
  }
  peer_slots.clear();
  if (own_slots != nullptr) (void)cudaFree(own_slots);
  own_slots = nullptr;
  (void)cudaGetLastError();  // a sticky error from earlier work is not ours to report here
  if (switch_device) (void)cudaSetDevice(previous);
  ipc = IpcState::Off;
}

void DeviceState::close_copies() {
  if (copy_stream == nullptr) return;
  int previous = -1;
  const bool switch_device = cudaGetDevice(&previous) == cudaSuccess && copy_device >= 0 &&
                             previous != copy_device && cudaSetDevice(copy_device) == cudaSuccess;
  // A copy may still be queued after a failed call: let it finish before its events go.
  (void)cudaStreamSynchronize(static_cast<cudaStream_t>(copy_stream));
  for (size_t i = 0; i < kCopySlots; ++i) {
    for (void* event : {copy_in_done[i], copy_out_done[i]}) {
      if (event != nullptr) (void)cudaEventDestroy(static_cast<cudaEvent_t>(event));
    }
    copy_in_done[i] = nullptr;
    copy_out_done[i] = nullptr;
  }
  (void)cudaStreamDestroy(static_cast<cudaStream_t>(copy_stream));
  copy_stream = nullptr;
  copy_device = -1;
  (void)cudaGetLastError();  // as in close_ipc: not ours to report here
  if (switch_device) (void)cudaSetDevice(previous);
}

void DeviceStateFree::operator()(DeviceState* state) const { delete state; }

DeviceState::~DeviceState() {
  close_ipc();
  close_copies();
  if (pinned != nullptr) {
    if (cudaFreeHost(pinned) != cudaSuccess) {
      (void)cudaGetLastError();
      log_message(LogLevel::Warn, "cudaFreeHost of the pinned staging buffer failed");
    }
  }
}

}  // namespace plexus::comm::device
