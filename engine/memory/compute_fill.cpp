// compute_fill.cpp - compute_fill on the selected device (see compute_fill.h).
#include "engine/memory/compute_fill.h"

#include <algorithm>

#include "engine/device/compute.h"
#include "engine/device/cuda_layers.h"

namespace plexus::engine {

void compute_fill(float* data, size_t count, float value) {
  if (count == 0) return;
  if (on_cuda()) return cuda::fill(data, count, value);
  std::fill(data, data + count, value);
}

}  // namespace plexus::engine
