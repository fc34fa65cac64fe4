// compute_fill.cpp - compute_fill on the selected device (see compute_fill.h).
#include "engine/memory/compute_fill.h"

#include <algorithm>

#include "engine/device/compute.h"
#include "engine/device/cpu_threads.h"
#include "engine/device/cuda_layers.h"

namespace plexus::engine {

namespace {
constexpr size_t kGrain = 65536;  // fewest elements worth a thread
}  // namespace

void compute_fill(float* data, size_t count, float value) {
  if (count == 0) return;
  if (on_cuda()) return cuda::fill(data, count, value);
  parallel_for(count, kGrain,
               [&](size_t i0, size_t i1) { std::fill(data + i0, data + i1, value); });
}

}  // namespace plexus::engine
