#include <cuda_runtime.h>

#include "engine/device/device.h"

namespace plexus::engine {

bool cuda_compiled() { return true; }

int cuda_device_count(std::string* why) {
  int n = 0;
  cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    if (why) *why = std::string("cudaGetDeviceCount: ") + cudaGetErrorString(err);
    return 0;
  }
  if (n == 0 && why) *why = "no CUDA device is visible";
  return n;
}

size_t cuda_device_memory_bytes() {
  size_t free_bytes = 0, total_bytes = 0;
  if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) return 0;
  return total_bytes;
}

}  // namespace plexus::engine
