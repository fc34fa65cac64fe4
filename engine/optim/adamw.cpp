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
  const float decay = config.lr * config.weight_decay;
  parallel_for(n, kGrain, [&](size_t i0, size_t i1) {
    for (size_t i = i0; i < i1; ++i) {
      const float g = grads[i];
      float p = params[i];
      if (decay_mask == nullptr || decay_mask[i] != 0) p -= decay * p;
      const float mi = b1 * m[i] + (1.0f - b1) * g;
      const float vi = b2 * v[i] + (1.0f - b2) * g * g;
      m[i] = mi;
      v[i] = vi;
      const float m_hat = mi / c1;
      const float v_hat = vi / c2;
      params[i] = p - config.lr * m_hat / (std::sqrt(v_hat) + config.eps);
    }
  });
}

}  // namespace plexus::engine
