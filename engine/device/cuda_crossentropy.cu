// cuda_crossentropy.cu - fused softmax + cross-entropy over the vocabulary
// (softmax_crossentropy.h). The forward runs one block per (b,t) row of V logits: block max,
// then exp(z - max) written to probs and block-summed, then probs scaled by 1/sum and the
// loss logsumexp - z[target] taken in log-sum-exp form, as the CPU layer. Positions with a
// target (>= 0) are counted in one device word with atomicAdd. The backward is element-wise.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/device/cuda_context.cuh"
#include "engine/device/cuda_layers.h"
#include "engine/device/cuda_reduce.cuh"

namespace plexus::engine::cuda {
namespace {

constexpr unsigned kRowThreads = 512;  // per row block (V is ~50k for GPT-2)
constexpr unsigned kThreads = 256;     // element-wise backward

__global__ void __launch_bounds__(kRowThreads)
    crossentropy_forward_kernel(float* losses, float* probs, const float* logits,
                                const int32_t* targets, size_t rows, int V,
                                unsigned long long* counted) {
  __shared__ float shared[kWarp];
  for (size_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* z = logits + r * V;
    float* p = probs + r * V;
    float mx = -INFINITY;
    for (int i = threadIdx.x; i < V; i += blockDim.x) mx = fmaxf(mx, z[i]);
    mx = block_max(mx, shared);
    float sum = 0.0f;
    for (int i = threadIdx.x; i < V; i += blockDim.x) {
      const float e = expf(z[i] - mx);
      p[i] = e;
      sum += e;
    }
    sum = block_sum(sum, shared);
    const float inv = 1.0f / sum;
    for (int i = threadIdx.x; i < V; i += blockDim.x) p[i] *= inv;  // this thread's own p[i]
    if (threadIdx.x == 0) {
      const int32_t target = targets[r];
      if (target < 0) {
        losses[r] = 0.0f;
      } else {
        losses[r] = logf(sum) + mx - z[target];
        atomicAdd(counted, 1ull);
      }
    }
  }
}

// dlogits += dloss (probs - onehot(target)) on rows with a target, in the CPU layer's order
// (dloss * p added first, dloss subtracted at the target after).
__global__ void crossentropy_backward_kernel(float* dlogits, const float* probs,
                                             const int32_t* targets, float dloss, size_t n,
                                             int V) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const size_t r = i / V;
    const int32_t target = targets[r];
    if (target < 0) continue;
    float d = dlogits[i] + dloss * probs[i];
    if (static_cast<int64_t>(i % V) == target) d -= dloss;
    dlogits[i] = d;
  }
}

void check_shape(const char* function, int B, int T, int V) {
  require(B >= 0 && T >= 0 && V > 0, function,
          "B " + std::to_string(B) + ", T " + std::to_string(T) + ", V " + std::to_string(V) +
              ": need B, T >= 0 and V >= 1");
}

}  // namespace

size_t softmax_crossentropy_forward(float* losses, float* probs, const float* logits,
                                    const int32_t* targets, int B, int T, int V) {
  const char* fn = "softmax_crossentropy_forward";
  Context& ctx = context(fn);
  check_shape(fn, B, T, V);
  const size_t rows = static_cast<size_t>(B) * T;
  if (rows == 0) return 0;
  check_cuda(cudaMemsetAsync(ctx.counter, 0, sizeof(unsigned long long), ctx.stream), fn,
             "cudaMemsetAsync (counter)");
  const unsigned grid = static_cast<unsigned>(rows < kMaxBlocks ? rows : kMaxBlocks);
  crossentropy_forward_kernel<<<grid, kRowThreads, 0, ctx.stream>>>(losses, probs, logits,
                                                                     targets, rows, V,
                                                                     ctx.counter);
  check_launch(fn, "crossentropy_forward_kernel");
  unsigned long long counted = 0;
  check_cuda(cudaMemcpyAsync(&counted, ctx.counter, sizeof(counted), cudaMemcpyDeviceToHost,
                             ctx.stream),
             fn, "cudaMemcpyAsync (counter)");
  finish(ctx, fn);
  return static_cast<size_t>(counted);
}

void softmax_crossentropy_backward(float* dlogits, const float* probs, const int32_t* targets,
                                   float dloss, int B, int T, int V) {
  const char* fn = "softmax_crossentropy_backward";
  Context& ctx = context(fn);
  check_shape(fn, B, T, V);
  const size_t n = static_cast<size_t>(B) * T * V;
  if (n == 0) return;
  crossentropy_backward_kernel<<<grid_for(n, kThreads), kThreads, 0, ctx.stream>>>(
      dlogits, probs, targets, dloss, n, V);
  check_launch(fn, "crossentropy_backward_kernel");
  finish(ctx, fn);
}

}  // namespace plexus::engine::cuda
