// adamw_element.h - the AdamW update of one element (engine/optim/adamw.h), shared by the CPU
// loop (engine/optim/adamw.cpp) and the CUDA kernel (cuda_adamw.cu), so that both devices run
// the same operations in the same order.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#if defined(__CUDACC__)
#define PLEXUS_HOST_DEVICE __host__ __device__
#else
#define PLEXUS_HOST_DEVICE
#endif

namespace plexus::engine {

// One step's scalars: decay = lr * weight_decay; c1 = 1 - beta1^t and c2 = 1 - beta2^t, the
// bias corrections of step t (1-based).
struct AdamWStep {
  float lr, beta1, beta2, eps, decay;
  float c1, c2;
};

// The corrections in double: beta^t for large t underflows gracefully to 0.
inline AdamWStep adamw_step_scalars(float lr, float beta1, float beta2, float eps,
                                    float weight_decay, int64_t step) {
  AdamWStep s;
  s.lr = lr;
  s.beta1 = beta1;
  s.beta2 = beta2;
  s.eps = eps;
  s.decay = lr * weight_decay;
  s.c1 = static_cast<float>(1.0 - std::pow(static_cast<double>(beta1), step));
  s.c2 = static_cast<float>(1.0 - std::pow(static_cast<double>(beta2), step));
  return s;
}

// Element i: decoupled decay where decay_mask is null or nonzero, then the moments and the step.
PLEXUS_HOST_DEVICE inline void adamw_element(float* params, const float* grads, float* m,
                                             float* v, const uint8_t* decay_mask, size_t i,
                                             const AdamWStep& s) {
  const float g = grads[i];
  float p = params[i];
  if (decay_mask == nullptr || decay_mask[i] != 0) p -= s.decay * p;
  const float mi = s.beta1 * m[i] + (1.0f - s.beta1) * g;
  const float vi = s.beta2 * v[i] + (1.0f - s.beta2) * g * g;
  m[i] = mi;
  v[i] = vi;
  const float m_hat = mi / s.c1;
  const float v_hat = vi / s.c2;
  params[i] = p - s.lr * m_hat / (sqrtf(v_hat) + s.eps);
}

}  // namespace plexus::engine
