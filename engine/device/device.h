// device.h - the compute devices the engine can use.
#pragma once

#include <string>

namespace plexus::engine {

// Whether this build has CUDA code compiled in.
bool cuda_compiled();

// Number of CUDA devices visible to this process (0 without CUDA, a driver or a GPU).
// When 0, *why (if non-null) says which of those is missing.
int cuda_device_count(std::string* why);

}  // namespace plexus::engine
