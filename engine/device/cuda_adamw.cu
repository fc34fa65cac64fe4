// cuda_adamw.cu - one AdamW step (adamw.h) on CUDA: element-wise, the same update and order
// of operations as adamw.cpp, with the bias corrections computed once on the host in double.
#include <cuda_runtime.h>

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "engine/device/cuda_context.cuh"
#include "engine/device/cuda_layers.h"

namespace plexus::engine::cuda {
namespace {

constexpr unsigned kThreads = 256;

struct Step {
  float lr, beta1, beta2, eps, decay;  // decay = lr * weight_decay
  float c1, c2;                        // 1 - beta1^t, 1 - beta2^t
};

__global__ void adamw_kernel(float* params, const float* grads, float* m, float* v, size_t n,
                             Step s, const uint8_t* decay_mask) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
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
}

}  // namespace

void adamw_step(float* params, const float* grads, float* m, float* v, size_t n, int64_t step,
                float lr, float beta1, float beta2, float eps, float weight_decay,
                const uint8_t* decay_mask) {
  const char* fn = "adamw_step";
  Context& ctx = context(fn);
  if (n == 0 || step < 1) return;  // as adamw.cpp: step < 1 is skipped
  Step s;
  s.lr = lr;
  s.beta1 = beta1;
  s.beta2 = beta2;
  s.eps = eps;
  s.decay = lr * weight_decay;
  s.c1 = static_cast<float>(1.0 - std::pow(static_cast<double>(beta1), step));
  s.c2 = static_cast<float>(1.0 - std::pow(static_cast<double>(beta2), step));
  adamw_kernel<<<grid_for(n, kThreads), kThreads, 0, ctx.stream>>>(params, grads, m, v, n, s,
                                                                   decay_mask);
  check_launch(fn, "adamw_kernel");
  finish(ctx, fn);
}

}  // namespace plexus::engine::cuda
