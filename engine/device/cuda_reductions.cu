// cuda_reductions.cu - the gradient-norm helpers of cuda_layers.h: sum of squares in double
// (grad_clip.h's grad_sum_squares) in two passes - each block reduces a grid-stride share to
// one double, the host adds the block partials in block order, so the result does not depend
// on timing - and the element-wise scale and fill.
#include <cuda_runtime.h>

#include <cstddef>
#include <vector>

#include "engine/device/cuda_context.cuh"
#include "engine/device/cuda_layers.h"
#include "engine/device/cuda_reduce.cuh"

namespace plexus::engine::cuda {
namespace {

constexpr unsigned kThreads = 256;
constexpr unsigned kSumBlocks = 1024;  // partials the host adds

__global__ void sum_squares_kernel(double* partials, const float* x, size_t n) {
  __shared__ double shared[kWarp];
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  double sum = 0.0;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const double xi = x[i];
    sum += xi * xi;
  }
  sum = block_sum(sum, shared);
  if (threadIdx.x == 0) partials[blockIdx.x] = sum;
}

__global__ void scale_kernel(float* x, size_t n, float scale) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    x[i] *= scale;
  }
}

__global__ void fill_kernel(float* x, size_t n, float value) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    x[i] = value;
  }
}

}  // namespace

double sum_squares(const float* x, size_t n) {
  const char* fn = "sum_squares";
  Context& ctx = context(fn);
  if (n == 0) return 0.0;
  const unsigned grid = grid_for(n, kThreads) < kSumBlocks ? grid_for(n, kThreads) : kSumBlocks;
  double* partials = static_cast<double*>(workspace(ctx, grid * sizeof(double), fn));
  sum_squares_kernel<<<grid, kThreads, 0, ctx.stream>>>(partials, x, n);
  check_launch(fn, "sum_squares_kernel");
  std::vector<double> host(grid);
  check_cuda(cudaMemcpyAsync(host.data(), partials, grid * sizeof(double),
                             cudaMemcpyDeviceToHost, ctx.stream),
             fn, "cudaMemcpyAsync (partials)");
  finish(ctx, fn);
  double sum = 0.0;
  for (double p : host) sum += p;
  return sum;
}

void scale(float* x, size_t n, float scale) {
  const char* fn = "scale";
  Context& ctx = context(fn);
  if (n == 0) return;
  scale_kernel<<<grid_for(n, kThreads), kThreads, 0, ctx.stream>>>(x, n, scale);
  check_launch(fn, "scale_kernel");
  finish(ctx, fn);
}

void fill(float* x, size_t n, float value) {
  const char* fn = "fill";
  Context& ctx = context(fn);
  if (n == 0) return;
  fill_kernel<<<grid_for(n, kThreads), kThreads, 0, ctx.stream>>>(x, n, value);
  check_launch(fn, "fill_kernel");
  finish(ctx, fn);
}

}  // namespace plexus::engine::cuda
