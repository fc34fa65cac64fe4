#include "engine/device/device.h"

namespace plexus::engine {

bool cuda_compiled() { return false; }

int cuda_device_count(std::string* why) {
  if (why) *why = "this build has no CUDA (configure with -DPLEXUS_CUDA=ON and a CUDA toolkit)";
  return 0;
}

size_t cuda_device_memory_bytes() { return 0; }

}  // namespace plexus::engine
