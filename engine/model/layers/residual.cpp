// residual.cpp - residual add forward/backward.
#include "engine/model/layers/residual.h"

#include "engine/device/compute.h"
#include "engine/device/cpu_threads.h"
#include "engine/device/cuda_layers.h"

namespace plexus::engine {

namespace {
constexpr size_t kGrain = 8192;  // fewest elements worth a thread
}  // namespace

void residual_forward(float* out, const float* inp1, const float* inp2, size_t n) {
  if (on_cuda()) return cuda::residual_forward(out, inp1, inp2, n);
  parallel_for(n, kGrain, [&](size_t i0, size_t i1) {
    for (size_t i = i0; i < i1; ++i) out[i] = inp1[i] + inp2[i];
  });
}

void residual_backward(float* dinp1, float* dinp2, const float* dout, size_t n) {
  if (on_cuda()) return cuda::residual_backward(dinp1, dinp2, dout, n);
  parallel_for(n, kGrain, [&](size_t i0, size_t i1) {
    for (size_t i = i0; i < i1; ++i) {
      dinp1[i] += dout[i];
      dinp2[i] += dout[i];
    }
  });
}

}  // namespace plexus::engine
