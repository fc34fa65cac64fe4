// memory_kind.cpp - classify_pointer() in a CUDA build: cudaPointerGetAttributes, asked only
// when the process sees a GPU.
#include "comm/device/memory_kind.h"

#include <cuda_runtime.h>

#include "comm/device/cuda_devices.h"

namespace plexus::comm::device {

MemoryInfo classify_pointer(const void* ptr) {
  MemoryInfo info;
  if (cuda_device_count(&info.reason) == 0) return info;  // Host, and why
  cudaPointerAttributes attributes{};
  const cudaError_t err = cudaPointerGetAttributes(&attributes, ptr);
  if (err != cudaSuccess) {
    // CUDA 11+ answers cudaMemoryTypeUnregistered for host memory it does not know; an error
    // (e.g. cudaErrorInvalidValue for some pointers) still means no GPU memory is there.
    (void)cudaGetLastError();
    info.reason = std::string("cudaPointerGetAttributes: ") + cudaGetErrorName(err) + ": " +
                  cudaGetErrorString(err);
    return info;
  }
  switch (attributes.type) {
    case cudaMemoryTypeDevice:
      info.kind = MemoryKind::Device;
      info.device = attributes.device;
      break;
    case cudaMemoryTypeHost:
      info.kind = MemoryKind::PinnedHost;
      info.device = attributes.device;
      break;
    case cudaMemoryTypeManaged:
      info.kind = MemoryKind::Managed;
      info.device = attributes.device;
      break;
    case cudaMemoryTypeUnregistered:
    default: break;  // Host, device -1
  }
  return info;
}

}  // namespace plexus::comm::device
