// cuda_residual.cu - the residual connection (residual.h): element-wise, grid-stride.
#include <cuda_runtime.h>

#include <cstddef>

#include "engine/device/cuda_context.cuh"
#include "engine/device/cuda_layers.h"

namespace plexus::engine::cuda {
namespace {

constexpr unsigned kThreads = 256;

__global__ void residual_forward_kernel(float* out, const float* inp1, const float* inp2,
                                        size_t n) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    out[i] = inp1[i] + inp2[i];
  }
}

__global__ void residual_backward_kernel(float* dinp1, float* dinp2, const float* dout,
                                         size_t n) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float d = dout[i];
    dinp1[i] += d;
    dinp2[i] += d;
  }
}

}  // namespace

void residual_forward(float* out, const float* inp1, const float* inp2, size_t n) {
  const char* fn = "residual_forward";
  Context& ctx = context(fn);
  if (n == 0) return;
  residual_forward_kernel<<<grid_for(n, kThreads), kThreads, 0, ctx.stream>>>(out, inp1, inp2, n);
  check_launch(fn, "residual_forward_kernel");
  finish(ctx, fn);
}

void residual_backward(float* dinp1, float* dinp2, const float* dout, size_t n) {
  const char* fn = "residual_backward";
  Context& ctx = context(fn);
  if (n == 0) return;
  residual_backward_kernel<<<grid_for(n, kThreads), kThreads, 0, ctx.stream>>>(dinp1, dinp2,
                                                                               dout, n);
  check_launch(fn, "residual_backward_kernel");
  finish(ctx, fn);
}

}  // namespace plexus::engine::cuda
