// grad_clip.cpp - global L2 gradient-norm clipping, on the selected compute device.
#include "engine/optim/grad_clip.h"

#include <cmath>

#include "engine/device/compute.h"
#include "engine/device/cuda_layers.h"

namespace plexus::engine {

double grad_sum_squares(const float* grads, size_t n) {
  if (n == 0) return 0.0;
  if (on_cuda()) return cuda::sum_squares(grads, n);
  double sum = 0.0;
  for (size_t i = 0; i < n; ++i) sum += static_cast<double>(grads[i]) * grads[i];
  return sum;
}

float clip_coefficient(double sum_squares, float max_norm) {
  if (max_norm <= 0.0f) return 1.0f;
  const double coef = max_norm / (std::sqrt(sum_squares) + 1e-6);
  // NaN compares false: pass it through, as torch.clamp(coef, max=1) does
  return coef < 1.0 || std::isnan(coef) ? static_cast<float>(coef) : 1.0f;
}

void scale_gradients(float* grads, size_t n, float factor) {
  if (n == 0 || factor == 1.0f) return;
  if (on_cuda()) return cuda::scale(grads, n, factor);
  for (size_t i = 0; i < n; ++i) grads[i] *= factor;
}

float clip_grad_norm(float* grads, size_t n, float max_norm) {
  const double sum_squares = grad_sum_squares(grads, n);
  const float coef = clip_coefficient(sum_squares, max_norm);
  scale_gradients(grads, n, coef);
  return static_cast<float>(std::sqrt(sum_squares));
}

}  // namespace plexus::engine
