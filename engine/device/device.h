// device.h - the compute devices the engine can use.
#pragma once

#include <cstddef>
#include <string>

namespace plexus::engine {

// Whether this build has CUDA code compiled in.
bool cuda_compiled();

// Number of CUDA devices visible to this process (0 without CUDA, a driver or a GPU).
// When 0, *why (if non-null) says which of those is missing.
int cuda_device_count(std::string* why);

// Total memory in bytes of the current CUDA device (the one select_compute_device chose), 0
// without CUDA or a device.
size_t cuda_device_memory_bytes();

}  // namespace plexus::engine
