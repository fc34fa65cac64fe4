// cuda_layernorm.cu - LayerNorm forward/backward (layernorm.h) on CUDA, after llm.c's
// layernorm kernels: one warp per row of C for everything that is per row (mean, biased
// variance in two passes as the CPU layer, the normalized output, dinp), and a column kernel
// for dweight and dbias, which sum over all B*T rows: blocks of 32 columns x kRowThreads
// threads down one chunk of rows, partial sums added with atomicAdd.
#include <cuda_runtime.h>

#include <cstddef>
#include <string>

#include "engine/device/cuda_context.cuh"
#include "engine/device/cuda_layers.h"
#include "engine/device/cuda_reduce.cuh"

namespace plexus::engine::cuda {
namespace {

constexpr float kEps = 1e-5f;          // layernorm.h's kLayerNormEps
constexpr unsigned kThreads = 256;     // 8 warps, one row each
constexpr unsigned kColumns = 32;
constexpr unsigned kRowThreads = 8;
constexpr size_t kRowsPerBlock = 256;

__global__ void layernorm_forward_kernel(float* out, float* mean, float* rstd, const float* inp,
                                         const float* weight, const float* bias, size_t rows,
                                         int C) {
  const unsigned lane = threadIdx.x % kWarp;
  const size_t warps = static_cast<size_t>(gridDim.x) * (blockDim.x / kWarp);
  for (size_t r = static_cast<size_t>(blockIdx.x) * (blockDim.x / kWarp) + threadIdx.x / kWarp;
       r < rows; r += warps) {
    const float* x = inp + r * C;
    float m = 0.0f;
    for (int c = lane; c < C; c += kWarp) m += x[c];
    m = warp_sum(m) / C;
    float v = 0.0f;
    for (int c = lane; c < C; c += kWarp) {
      const float d = x[c] - m;
      v += d * d;
    }
    v = warp_sum(v) / C;
    const float s = 1.0f / sqrtf(v + kEps);
    float* o = out + r * C;
    for (int c = lane; c < C; c += kWarp) o[c] = (x[c] - m) * s * weight[c] + bias[c];
    if (lane == 0) {
      mean[r] = m;
      rstd[r] = s;
    }
  }
}

// dinp += rstd * (dn - mean_c(dn) - n * mean_c(dn * n)), n = (x - mean) rstd, dn = dout w.
__global__ void layernorm_dinp_kernel(float* dinp, const float* dout, const float* inp,
                                      const float* weight, const float* mean, const float* rstd,
                                      size_t rows, int C) {
  const unsigned lane = threadIdx.x % kWarp;
  const size_t warps = static_cast<size_t>(gridDim.x) * (blockDim.x / kWarp);
  for (size_t r = static_cast<size_t>(blockIdx.x) * (blockDim.x / kWarp) + threadIdx.x / kWarp;
       r < rows; r += warps) {
    const float* d = dout + r * C;
    const float* x = inp + r * C;
    float* dx = dinp + r * C;
    const float m = mean[r];
    const float s = rstd[r];
    float dn_mean = 0.0f;
    float dn_n_mean = 0.0f;
    for (int c = lane; c < C; c += kWarp) {
      const float n = (x[c] - m) * s;
      const float dn = weight[c] * d[c];
      dn_mean += dn;
      dn_n_mean += dn * n;
    }
    dn_mean = warp_sum(dn_mean) / C;
    dn_n_mean = warp_sum(dn_n_mean) / C;
    for (int c = lane; c < C; c += kWarp) {
      const float n = (x[c] - m) * s;
      const float dn = weight[c] * d[c];
      dx[c] += s * (dn - dn_mean - n * dn_n_mean);
    }
  }
}

// dweight[c] += sum_r n[r,c] dout[r,c]; dbias[c] += sum_r dout[r,c]. Block (kColumns,
// kRowThreads) over rows [blockIdx.y * chunk, +chunk), as matmul's bias gradient.
__global__ void layernorm_params_kernel(float* dweight, float* dbias, const float* dout,
                                        const float* inp, const float* mean, const float* rstd,
                                        size_t rows, size_t C, size_t chunk) {
  __shared__ float partial_w[kRowThreads][kColumns];
  __shared__ float partial_b[kRowThreads][kColumns];
  const size_t col = static_cast<size_t>(blockIdx.x) * kColumns + threadIdx.x;
  const size_t first = static_cast<size_t>(blockIdx.y) * chunk;
  const size_t last = first + chunk < rows ? first + chunk : rows;
  float sum_w = 0.0f;
  float sum_b = 0.0f;
  if (col < C) {
    for (size_t r = first + threadIdx.y; r < last; r += kRowThreads) {
      const float d = dout[r * C + col];
      sum_w += (inp[r * C + col] - mean[r]) * rstd[r] * d;
      sum_b += d;
    }
  }
  partial_w[threadIdx.y][threadIdx.x] = sum_w;
  partial_b[threadIdx.y][threadIdx.x] = sum_b;
  __syncthreads();
  if (threadIdx.y == 0 && col < C) {
    for (unsigned y = 1; y < kRowThreads; ++y) {
      sum_w += partial_w[y][threadIdx.x];
      sum_b += partial_b[y][threadIdx.x];
    }
    atomicAdd(dweight + col, sum_w);
    atomicAdd(dbias + col, sum_b);
  }
}

void check_shape(const char* function, int B, int T, int C) {
  require(B >= 0 && T >= 0 && C >= 0, function,
          "B " + std::to_string(B) + ", T " + std::to_string(T) + ", C " + std::to_string(C) +
              ": each must be >= 0");
}

unsigned row_grid(size_t rows) { return grid_for(rows, kThreads / kWarp); }

}  // namespace

void layernorm_forward(float* out, float* mean, float* rstd, const float* inp,
                       const float* weight, const float* bias, int B, int T, int C) {
  const char* fn = "layernorm_forward";
  Context& ctx = context(fn);
  check_shape(fn, B, T, C);
  require(C > 0 || B == 0 || T == 0, fn, "C 0: a row needs at least one element");
  const size_t rows = static_cast<size_t>(B) * T;
  if (rows == 0) return;
  layernorm_forward_kernel<<<row_grid(rows), kThreads, 0, ctx.stream>>>(out, mean, rstd, inp,
                                                                        weight, bias, rows, C);
  check_launch(fn, "layernorm_forward_kernel");
  finish(ctx, fn);
}

void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                        const float* inp, const float* weight, const float* mean,
                        const float* rstd, int B, int T, int C) {
  const char* fn = "layernorm_backward";
  Context& ctx = context(fn);
  check_shape(fn, B, T, C);
  const size_t rows = static_cast<size_t>(B) * T;
  if (rows == 0 || C == 0) return;
  layernorm_dinp_kernel<<<row_grid(rows), kThreads, 0, ctx.stream>>>(dinp, dout, inp, weight,
                                                                     mean, rstd, rows, C);
  check_launch(fn, "layernorm_dinp_kernel");
  const size_t chunks = (rows + kRowsPerBlock - 1) / kRowsPerBlock;
  const dim3 grid((C + kColumns - 1) / kColumns,
                  static_cast<unsigned>(chunks < kMaxBlocks ? chunks : kMaxBlocks));
  const size_t chunk = (rows + grid.y - 1) / grid.y;
  layernorm_params_kernel<<<grid, dim3(kColumns, kRowThreads), 0, ctx.stream>>>(
      dweight, dbias, dout, inp, mean, rstd, rows, C, chunk);
  check_launch(fn, "layernorm_params_kernel");
  finish(ctx, fn);
}

}  // namespace plexus::engine::cuda
