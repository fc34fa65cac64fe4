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

}  // namespace plexus::engine
