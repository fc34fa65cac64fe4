// grad_clip.cpp - global L2 gradient-norm clipping, on the selected compute device.
#include "engine/optim/grad_clip.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/device/compute.h"
#include "engine/device/cpu_threads.h"
#include "engine/device/cuda_layers.h"

namespace plexus::engine {

namespace {
// Sums of squares are taken per block of this many elements and the blocks' sums added in
// order, so the result does not depend on how many threads computed them.
constexpr size_t kSumBlock = size_t{1} << 16;
constexpr size_t kGrain = 8192;  // fewest elements worth a thread
}  // namespace

double grad_sum_squares(const float* grads, size_t n) {
  if (n == 0) return 0.0;
  if (on_cuda()) return cuda::sum_squares(grads, n);
  std::vector<double> block_sums((n + kSumBlock - 1) / kSumBlock, 0.0);
  parallel_for(block_sums.size(), 1, [&](size_t b0, size_t b1) {
    for (size_t b = b0; b < b1; ++b) {
      const size_t end = std::min(n, (b + 1) * kSumBlock);
      double sum = 0.0;
      for (size_t i = b * kSumBlock; i < end; ++i) sum += static_cast<double>(grads[i]) * grads[i];
      block_sums[b] = sum;
    }
  });
  double sum = 0.0;
  for (double s : block_sums) sum += s;
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
  parallel_for(n, kGrain, [&](size_t i0, size_t i1) {
    for (size_t i = i0; i < i1; ++i) grads[i] *= factor;
  });
}

float clip_grad_norm(float* grads, size_t n, float max_norm) {
  const double sum_squares = grad_sum_squares(grads, n);
  const float coef = clip_coefficient(sum_squares, max_norm);
  scale_gradients(grads, n, coef);
  return static_cast<float>(std::sqrt(sum_squares));
}

}  // namespace plexus::engine
