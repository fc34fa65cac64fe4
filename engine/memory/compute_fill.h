// compute_fill.h - setting a buffer the layers use to one value, where the compute device
// (engine/device/compute.h) works: a kernel on cuda, so the pages of a managed buffer stay on
// the GPU instead of migrating to the host for a std::fill every step; std::fill on the cpu.
//
// data must be a buffer a layer may receive (a MemoryPool::kDevice TrackedBuffer or a
// ComputeVector); host-only memory (a kHost TrackedBuffer, a plugin's buffer) takes std::fill.
#pragma once

#include <cstddef>

namespace plexus::engine {

// data[0..count) = value. Does nothing when count is 0. On cuda it returns once the kernel has
// finished (cuda::fill synchronizes).
void compute_fill(float* data, size_t count, float value);

}  // namespace plexus::engine
