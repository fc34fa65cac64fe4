// cuda_adamw.cu - one AdamW step (adamw.h) on CUDA: element-wise, adamw_element.h's update (the
// CPU loop's), with the bias corrections computed once on the host in double.
#include <cuda_runtime.h>

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "engine/device/adamw_element.h"
#include "engine/device/cuda_context.cuh"
#include "engine/device/cuda_layers.h"

namespace plexus::engine::cuda {
namespace {

constexpr unsigned kThreads = 256;

__global__ void adamw_kernel(float* params, const float* grads, float* m, float* v, size_t n,
                             AdamWStep s, const uint8_t* decay_mask) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    adamw_element(params, grads, m, v, decay_mask, i, s);
  }
}

}  // namespace

void adamw_step(float* params, const float* grads, float* m, float* v, size_t n, int64_t step,
                float lr, float beta1, float beta2, float eps, float weight_decay,
                const uint8_t* decay_mask) {
  const char* fn = "adamw_step";
  Context& ctx = context(fn);
  if (n == 0 || step < 1) return;  // as adamw.cpp: step < 1 is skipped
  const AdamWStep s = adamw_step_scalars(lr, beta1, beta2, eps, weight_decay, step);
  adamw_kernel<<<grid_for(n, kThreads), kThreads, 0, ctx.stream>>>(params, grads, m, v, n, s,
                                                                   decay_mask);
  check_launch(fn, "adamw_kernel");
  finish(ctx, fn);
}

}  // namespace plexus::engine::cuda
