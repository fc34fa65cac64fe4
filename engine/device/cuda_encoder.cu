// cuda_encoder.cu - token + position embedding (encoder.h). The forward is element-wise over
// (B,T,C). The backward runs one thread per (t,c): it walks the B batch rows, sums them into
// dwpe[t,c] itself (no other thread touches that element) and adds each into dwte row
// tokens[b,t] with atomicAdd, since a token may appear at many positions.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/device/cuda_context.cuh"
#include "engine/device/cuda_layers.h"

namespace plexus::engine::cuda {
namespace {

constexpr unsigned kThreads = 256;

__global__ void encoder_forward_kernel(float* out, const int32_t* tokens, const float* wte,
                                       const float* wpe, size_t n, int T, int C) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const size_t bt = i / C;
    const size_t c = i % C;
    const size_t t = bt % T;
    out[i] = wte[static_cast<size_t>(tokens[bt]) * C + c] + wpe[t * C + c];
  }
}

__global__ void encoder_backward_kernel(float* dwte, float* dwpe, const float* dout,
                                        const int32_t* tokens, int B, int T, int C) {
  const size_t n = static_cast<size_t>(T) * C;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const size_t t = i / C;
    const size_t c = i % C;
    float pos = 0.0f;
    for (int b = 0; b < B; ++b) {
      const size_t bt = static_cast<size_t>(b) * T + t;
      const float d = dout[bt * C + c];
      atomicAdd(dwte + static_cast<size_t>(tokens[bt]) * C + c, d);
      pos += d;
    }
    dwpe[i] += pos;
  }
}

void check_shape(const char* function, int B, int T, int C) {
  require(B >= 0 && T >= 0 && C >= 0, function,
          "B " + std::to_string(B) + ", T " + std::to_string(T) + ", C " + std::to_string(C) +
              ": each must be >= 0");
}

}  // namespace

void encoder_forward(float* out, const int32_t* tokens, const float* wte, const float* wpe,
                     int B, int T, int C) {
  const char* fn = "encoder_forward";
  Context& ctx = context(fn);
  check_shape(fn, B, T, C);
  const size_t n = static_cast<size_t>(B) * T * C;
  if (n == 0) return;
  encoder_forward_kernel<<<grid_for(n, kThreads), kThreads, 0, ctx.stream>>>(out, tokens, wte,
                                                                             wpe, n, T, C);
  check_launch(fn, "encoder_forward_kernel");
  finish(ctx, fn);
}

void encoder_backward(float* dwte, float* dwpe, const float* dout, const int32_t* tokens,
                      int B, int T, int C) {
  const char* fn = "encoder_backward";
  Context& ctx = context(fn);
  check_shape(fn, B, T, C);
  const size_t n = static_cast<size_t>(T) * C;
  if (n == 0 || B == 0) return;
  encoder_backward_kernel<<<grid_for(n, kThreads), kThreads, 0, ctx.stream>>>(dwte, dwpe, dout,
                                                                              tokens, B, T, C);
  check_launch(fn, "encoder_backward_kernel");
  finish(ctx, fn);
}

}  // namespace plexus::engine::cuda
