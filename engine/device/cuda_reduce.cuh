// cuda_reduce.cuh - warp and block reductions for the layer kernels (private to
// engine/device). Butterfly shuffles (__shfl_xor_sync), so every lane ends with the result.
//
// Rules the callers keep: blockDim.x is a multiple of 32 and at most 1024 (so every warp is
// full and at most 32 warps meet in shared memory), and every thread of the warp (warp_*)
// or block (block_*) reaches the call, whatever its data.
#pragma once

#include <cuda_runtime.h>

namespace plexus::engine::cuda {

inline constexpr unsigned kFullMask = 0xffffffffu;
inline constexpr int kWarp = 32;

template <class T>
__device__ __forceinline__ T warp_sum(T v) {
#pragma unroll
  for (int offset = kWarp / 2; offset > 0; offset /= 2) v += __shfl_xor_sync(kFullMask, v, offset);
  return v;
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int offset = kWarp / 2; offset > 0; offset /= 2) {
    v = fmaxf(v, __shfl_xor_sync(kFullMask, v, offset));
  }
  return v;
}

// Sum over the block, returned to every thread. `shared` holds 32 T's; it is reused at once,
// so the leading __syncthreads keeps a previous call's readers ahead of this call's writers.
template <class T>
__device__ __forceinline__ T block_sum(T v, T* shared) {
  const int lane = threadIdx.x % kWarp;
  const int warp = threadIdx.x / kWarp;
  const int warps = blockDim.x / kWarp;
  v = warp_sum(v);
  __syncthreads();
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  v = lane < warps ? shared[lane] : T(0);
  return warp_sum(v);
}

// Maximum over the block, returned to every thread (as block_sum).
__device__ __forceinline__ float block_max(float v, float* shared) {
  const int lane = threadIdx.x % kWarp;
  const int warp = threadIdx.x / kWarp;
  const int warps = blockDim.x / kWarp;
  v = warp_max(v);
  __syncthreads();
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  v = lane < warps ? shared[lane] : -INFINITY;
  return warp_max(v);
}

}  // namespace plexus::engine::cuda
