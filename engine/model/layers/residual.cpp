// residual.cpp - residual add forward/backward.
#include "engine/model/layers/residual.h"

namespace plexus::engine {

void residual_forward(float* out, const float* inp1, const float* inp2, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = inp1[i] + inp2[i];
}

void residual_backward(float* dinp1, float* dinp2, const float* dout, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    dinp1[i] += dout[i];
    dinp2[i] += dout[i];
  }
}

}  // namespace plexus::engine
