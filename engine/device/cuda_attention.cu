// cuda_attention.cu - causal multi-head self-attention (attention.h) on cuBLAS and two
// row kernels.
//
// Per batch row b, one strided-batched GEMM covers the NH heads: head h's q, k, v are the
// (T,hs) views at column h*hs of inp[b] (row stride 3C), its att block is (T,T) at
// (b*NH + h)*T*T, so the batch strides are hs for the views and T*T for att. In cuBLAS's
// column-major terms (a row-major (r,c) array with row stride ld is a column-major (c,r) one):
//   scores  S^T  = K  x Q^T     gemm(T, N, T, T, hs)    alpha 1/sqrt(hs)
//   out     O^T  = V^T x P^T    gemm(N, N, hs, T, T)
//   dP      dP^T = V  x dO^T    gemm(T, N, T, T, hs)
//   dV^T        += dO^T x P     gemm(N, T, hs, T, T)
//   dQ^T        += K^T x dS^T   gemm(N, N, hs, T, T)    alpha 1/sqrt(hs)
//   dK^T        += Q^T x dS     gemm(N, T, hs, T, T)    alpha 1/sqrt(hs)
// The full (T,T) score square is computed; the softmax kernel zeroes row t beyond column t,
// so the products with P see the causal mask. Softmax forward and backward run one warp per
// row. The backward's dP/dS for the NH heads of one b live in the engine's workspace
// (NH*T*T floats), not in the caller's T*T scratch, so the heads run as one batch.
#include <cuda_runtime.h>

#include <cmath>
#include <cstddef>
#include <string>

#include "engine/device/cuda_context.cuh"
#include "engine/device/cuda_layers.h"
#include "engine/device/cuda_reduce.cuh"

namespace plexus::engine::cuda {
namespace {

constexpr unsigned kThreads = 256;  // 8 warps, one row each

// Row t (of `rows` rows, t = row % T) of scores: softmax over columns 0..t with the row max
// subtracted first; columns > t set to 0.
__global__ void causal_softmax_kernel(float* att, size_t rows, int T) {
  const unsigned lane = threadIdx.x % kWarp;
  const size_t warps = static_cast<size_t>(gridDim.x) * (blockDim.x / kWarp);
  for (size_t row = static_cast<size_t>(blockIdx.x) * (blockDim.x / kWarp) + threadIdx.x / kWarp;
       row < rows; row += warps) {
    float* a = att + row * T;
    const int t = static_cast<int>(row % T);
    float mx = -INFINITY;
    for (int j = lane; j <= t; j += kWarp) mx = fmaxf(mx, a[j]);
    mx = warp_max(mx);
    float sum = 0.0f;
    for (int j = lane; j <= t; j += kWarp) {
      const float e = expf(a[j] - mx);
      a[j] = e;
      sum += e;
    }
    sum = warp_sum(sum);
    const float inv = 1.0f / sum;
    for (int j = lane; j <= t; j += kWarp) a[j] *= inv;
    for (int j = t + 1 + lane; j < T; j += kWarp) a[j] = 0.0f;
  }
}

// In place on dP: row t becomes dS = P * (dP - sum_j<=t P dP) over columns 0..t, 0 beyond.
__global__ void causal_softmax_backward_kernel(float* dp, const float* att, size_t rows, int T) {
  const unsigned lane = threadIdx.x % kWarp;
  const size_t warps = static_cast<size_t>(gridDim.x) * (blockDim.x / kWarp);
  for (size_t row = static_cast<size_t>(blockIdx.x) * (blockDim.x / kWarp) + threadIdx.x / kWarp;
       row < rows; row += warps) {
    float* d = dp + row * T;
    const float* p = att + row * T;
    const int t = static_cast<int>(row % T);
    float dot = 0.0f;
    for (int j = lane; j <= t; j += kWarp) dot += p[j] * d[j];
    dot = warp_sum(dot);
    for (int j = lane; j <= t; j += kWarp) d[j] = p[j] * (d[j] - dot);
    for (int j = t + 1 + lane; j < T; j += kWarp) d[j] = 0.0f;
  }
}

unsigned row_grid(size_t rows) { return grid_for(rows, kThreads / kWarp); }

void check_shape(const char* function, int B, int T, int C, int NH) {
  require(B >= 0 && T >= 0 && C >= 0 && NH > 0 && C % NH == 0, function,
          "B " + std::to_string(B) + ", T " + std::to_string(T) + ", C " + std::to_string(C) +
              ", NH " + std::to_string(NH) + ": need B, T, C >= 0, NH >= 1 and C % NH == 0");
  require(3LL * C <= 0x7fffffffLL && static_cast<long long>(T) * T <= 0x7fffffffffffLL, function,
          "C " + std::to_string(C) + " or T " + std::to_string(T) + " too large for cuBLAS");
}

}  // namespace

void attention_forward(float* out, float* att, const float* inp, int B, int T, int C, int NH) {
  const char* fn = "attention_forward";
  Context& ctx = context(fn);
  check_shape(fn, B, T, C, NH);
  if (B == 0 || T == 0 || C == 0) return;
  const int hs = C / NH;
  const int C3 = 3 * C;
  const long long TT = static_cast<long long>(T) * T;
  const float scale = 1.0f / sqrtf(static_cast<float>(hs));
  for (int b = 0; b < B; ++b) {
    const float* q = inp + static_cast<size_t>(b) * T * C3;
    const float* k = q + C;
    float* a = att + static_cast<size_t>(b) * NH * TT;
    gemm(ctx, fn, CUBLAS_OP_T, CUBLAS_OP_N, T, T, hs, scale, k, C3, hs, q, C3, hs, 0.0f, a, T, TT,
         NH);
  }
  const size_t rows = static_cast<size_t>(B) * NH * T;
  causal_softmax_kernel<<<row_grid(rows), kThreads, 0, ctx.stream>>>(att, rows, T);
  check_launch(fn, "causal_softmax_kernel");
  for (int b = 0; b < B; ++b) {
    const float* v = inp + static_cast<size_t>(b) * T * C3 + 2 * static_cast<size_t>(C);
    const float* a = att + static_cast<size_t>(b) * NH * TT;
    float* o = out + static_cast<size_t>(b) * T * C;
    gemm(ctx, fn, CUBLAS_OP_N, CUBLAS_OP_N, hs, T, T, 1.0f, v, C3, hs, a, T, TT, 0.0f, o, C, hs,
         NH);
  }
  finish(ctx, fn);
}

void attention_backward(float* dinp, float* /*scratch*/, const float* dout, const float* inp,
                        const float* att, int B, int T, int C, int NH) {
  const char* fn = "attention_backward";
  Context& ctx = context(fn);
  check_shape(fn, B, T, C, NH);
  if (B == 0 || T == 0 || C == 0) return;
  const int hs = C / NH;
  const int C3 = 3 * C;
  const long long TT = static_cast<long long>(T) * T;
  const float scale = 1.0f / sqrtf(static_cast<float>(hs));
  float* ds = static_cast<float*>(workspace(ctx, static_cast<size_t>(NH) * TT * sizeof(float), fn));
  const size_t rows = static_cast<size_t>(NH) * T;
  for (int b = 0; b < B; ++b) {
    const size_t base = static_cast<size_t>(b) * T * C3;
    const float* q = inp + base;
    const float* k = q + C;
    const float* v = q + 2 * static_cast<size_t>(C);
    float* dq = dinp + base;
    float* dk = dq + C;
    float* dv = dq + 2 * static_cast<size_t>(C);
    const float* p = att + static_cast<size_t>(b) * NH * TT;
    const float* d_o = dout + static_cast<size_t>(b) * T * C;
    gemm(ctx, fn, CUBLAS_OP_T, CUBLAS_OP_N, T, T, hs, 1.0f, v, C3, hs, d_o, C, hs, 0.0f, ds, T,
         TT, NH);
    gemm(ctx, fn, CUBLAS_OP_N, CUBLAS_OP_T, hs, T, T, 1.0f, d_o, C, hs, p, T, TT, 1.0f, dv, C3,
         hs, NH);
    causal_softmax_backward_kernel<<<row_grid(rows), kThreads, 0, ctx.stream>>>(ds, p, rows, T);
    check_launch(fn, "causal_softmax_backward_kernel");
    gemm(ctx, fn, CUBLAS_OP_N, CUBLAS_OP_N, hs, T, T, scale, k, C3, hs, ds, T, TT, 1.0f, dq, C3,
         hs, NH);
    gemm(ctx, fn, CUBLAS_OP_N, CUBLAS_OP_T, hs, T, T, scale, q, C3, hs, ds, T, TT, 1.0f, dk, C3,
         hs, NH);
  }
  finish(ctx, fn);
}

}  // namespace plexus::engine::cuda
