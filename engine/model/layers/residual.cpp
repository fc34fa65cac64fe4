// residual.cpp - residual add forward/backward.
#include "engine/model/layers/residual.h"

#include "engine/device/compute.h"
#include "engine/device/cuda_layers.h"

namespace plexus::engine {

void residual_forward(float* out, const float* inp1, const float* inp2, size_t n) {
  if (on_cuda()) return cuda::residual_forward(out, inp1, inp2, n);
  for (size_t i = 0; i < n; ++i) out[i] = inp1[i] + inp2[i];
}

void residual_backward(float* dinp1, float* dinp2, const float* dout, size_t n) {
  if (on_cuda()) return cuda::residual_backward(dinp1, dinp2, dout, n);
  for (size_t i = 0; i < n; ++i) {
    dinp1[i] += dout[i];
    dinp2[i] += dout[i];
  }
}

}  // namespace plexus::engine
