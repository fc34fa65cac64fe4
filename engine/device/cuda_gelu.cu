// cuda_gelu.cu - GELU, tanh approximation (gelu.h), one element per thread in a grid-stride
// loop. tanhf is CUDA's accurate tanh (max 2 ulp); the CPU layer's rational tanh is within
// 3.3e-7 of it, which bounds the difference between the two.
#include <cuda_runtime.h>

#include <cstddef>

#include "engine/device/cuda_context.cuh"
#include "engine/device/cuda_layers.h"

namespace plexus::engine::cuda {
namespace {

constexpr unsigned kThreads = 256;
constexpr float kGeluScale = 0.7978845608028654f;  // sqrt(2 / pi)
constexpr float kGeluCube = 0.044715f;

__global__ void gelu_forward_kernel(float* out, const float* inp, size_t n) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float x = inp[i];
    const float u = kGeluScale * (x + kGeluCube * x * x * x);
    out[i] = 0.5f * x * (1.0f + tanhf(u));
  }
}

// d/dx = 0.5 (1 + tanh u) + 0.5 x sech^2(u) du/dx, du/dx = sqrt(2/pi) (1 + 3 * 0.044715 x^2).
__global__ void gelu_backward_kernel(float* dinp, const float* inp, const float* dout, size_t n) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float x = inp[i];
    const float u = kGeluScale * (x + kGeluCube * x * x * x);
    const float th = tanhf(u);
    const float sech2 = 1.0f - th * th;
    const float du = kGeluScale * (1.0f + 3.0f * kGeluCube * x * x);
    const float grad = 0.5f * (1.0f + th) + 0.5f * x * sech2 * du;
    dinp[i] += grad * dout[i];
  }
}

}  // namespace

void gelu_forward(float* out, const float* inp, size_t n) {
  const char* fn = "gelu_forward";
  Context& ctx = context(fn);
  if (n == 0) return;
  gelu_forward_kernel<<<grid_for(n, kThreads), kThreads, 0, ctx.stream>>>(out, inp, n);
  check_launch(fn, "gelu_forward_kernel");
  finish(ctx, fn);
}

void gelu_backward(float* dinp, const float* inp, const float* dout, size_t n) {
  const char* fn = "gelu_backward";
  Context& ctx = context(fn);
  if (n == 0) return;
  gelu_backward_kernel<<<grid_for(n, kThreads), kThreads, 0, ctx.stream>>>(dinp, inp, dout, n);
  check_launch(fn, "gelu_backward_kernel");
  finish(ctx, fn);
}

}  // namespace plexus::engine::cuda
