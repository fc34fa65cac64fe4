// adamw.cpp - AdamW step over a slice of the flat buffers (see adamw.h for the update), on the
// selected compute device.
#include "engine/optim/adamw.h"

#include <cmath>

#include "engine/device/compute.h"
#include "engine/device/cpu_threads.h"
#include "engine/device/cuda_layers.h"

namespace plexus::engine {

namespace {
constexpr size_t kGrain = 8192;  // fewest elements worth a thread

struct AdamWScalars {
  float b1, b2, c1, c2, decay, lr, eps;
};

// Elements [begin, end). Compiled for AVX-512, AVX2 and the baseline, the best chosen at load
// time; this file is built with -fno-math-errno (engine/CMakeLists.txt) so that sqrt, of a
// value never negative, vectorizes. Every version does the same IEEE operations per element.
__attribute__((target_clones("avx512f", "avx2", "default"))) void adamw_range(
    float* params, const float* grads, float* m, float* v, const uint8_t* decay_mask,
    size_t begin, size_t end, const AdamWScalars& k) {
  for (size_t i = begin; i < end; ++i) {
    const float g = grads[i];
    float p = params[i];
    if (decay_mask == nullptr || decay_mask[i] != 0) p -= k.decay * p;
    const float mi = k.b1 * m[i] + (1.0f - k.b1) * g;
    const float vi = k.b2 * v[i] + (1.0f - k.b2) * g * g;
    m[i] = mi;
    v[i] = vi;
    const float m_hat = mi / k.c1;
    const float v_hat = vi / k.c2;
    params[i] = p - k.lr * m_hat / (std::sqrt(v_hat) + k.eps);
  }
}
}  // namespace

void adamw_step(float* params, const float* grads, float* m, float* v, size_t n, int64_t step,
                const AdamWConfig& config, const uint8_t* decay_mask) {
  if (n == 0 || step < 1) return;
  if (on_cuda()) {
    return cuda::adamw_step(params, grads, m, v, n, step, config.lr, config.beta1, config.beta2,
                            config.eps, config.weight_decay, decay_mask);
  }
  adamw_step_host(params, grads, m, v, n, step, config, decay_mask);
}

void adamw_step_host(float* params, const float* grads, float* m, float* v, size_t n,
                     int64_t step, const AdamWConfig& config, const uint8_t* decay_mask) {
  if (n == 0 || step < 1) return;
  const float b1 = config.beta1, b2 = config.beta2;
  // bias corrections in double: beta^t for large t underflows gracefully to 0
  const float c1 = static_cast<float>(1.0 - std::pow(static_cast<double>(b1), step));
  const float c2 = static_cast<float>(1.0 - std::pow(static_cast<double>(b2), step));
  const AdamWScalars k{b1, b2, c1, c2, config.lr * config.weight_decay, config.lr, config.eps};
  parallel_for(n, kGrain, [&](size_t i0, size_t i1) {
    adamw_range(params, grads, m, v, decay_mask, i0, i1, k);
  });
}

}  // namespace plexus::engine
