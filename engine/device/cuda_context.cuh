// cuda_context.cuh - what every cuda_*.cu layer shares (private to engine/device): the
// engine's stream, cuBLAS (opened on first use, cublas_library.h) and handle (cuda_context.cu), error checks that throw
// std::runtime_error naming the layer function and the failed call, launch sizing, the GEMM
// entry point that follows --autocast (cuda_gemm.cu) and a grow-only device workspace.
//
// Every public function of cuda_layers.h follows the same shape:
//
//   Context& ctx = context("layernorm_forward");   // throws if use_device() never ran
//   if (rows == 0) return;                         // a zero grid is a launch error
//   kernel<<<grid_for(n, kThreads), kThreads, 0, ctx.stream>>>(...);
//   check_launch("layernorm_forward", "layernorm_forward_kernel");
//   finish(ctx, "layernorm_forward");              // cudaStreamSynchronize + check
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/device/cublas_library.h"

namespace plexus::engine::cuda {

struct Context {
  int device = -1;
  cudaStream_t stream = nullptr;
  const CublasLibrary* blas = nullptr;  // cuBLAS's entries (cublas_library.h)
  cublasHandle_t cublas = nullptr;
  bool bf16_gemms = false;        // Autocast::kBf16: cublasGemmEx with 32F_FAST_16BF
  void* workspace = nullptr;      // device memory, grow-only (workspace())
  size_t workspace_bytes = 0;
  unsigned long long* counter = nullptr;  // one device word (cross-entropy's target count)
};

// The engine's context, with its device made current on the calling thread. Throws
// std::logic_error naming `function` when use_device() has not succeeded.
Context& context(const char* function);

// Throw std::runtime_error "plexus::engine::cuda::<function>: <call>: <error name>: <text>"
// unless the status is success.
void check_cuda(cudaError_t err, const char* function, const char* call);
void check_cublas(cublasStatus_t status, const char* function, const char* call);
// Checks that the last kernel launch was accepted (cudaGetLastError).
void check_launch(const char* function, const char* kernel);
// Synchronizes the engine's stream and reports any error of the kernels run on it.
void finish(const Context& ctx, const char* function);
// Throws std::invalid_argument "plexus::engine::cuda::<function>: <what>" unless ok.
void require(bool ok, const char* function, const std::string& what);

// At least `bytes` of device memory, valid until the next workspace() call (the layers
// synchronize before returning, so no kernel still uses the old one when it is replaced).
void* workspace(Context& ctx, size_t bytes, const char* function);

// Blocks of `threads` for one element per thread over n elements, capped so grid-stride
// loops cover the rest (a grid of at most kMaxBlocks blocks is always valid). n > 0.
inline constexpr unsigned kMaxBlocks = 65535;
inline unsigned grid_for(size_t n, unsigned threads) {
  const size_t blocks = (n + threads - 1) / threads;
  return static_cast<unsigned>(blocks < kMaxBlocks ? blocks : kMaxBlocks);
}

// C (m,n) = alpha op(A) op(B) + beta C in cuBLAS's column-major terms, for `batch` products
// at the given element strides (batch 1: a plain GEMM). fp32 (cublasSgemm*, no TF32) or, when
// ctx.bf16_gemms, cublasGemm*Ex with CUBLAS_COMPUTE_32F_FAST_16BF on fp32 data.
void gemm(Context& ctx, const char* function, cublasOperation_t op_a, cublasOperation_t op_b,
          int m, int n, int k, float alpha, const float* a, int lda, long long stride_a,
          const float* b, int ldb, long long stride_b, float beta, float* c, int ldc,
          long long stride_c, int batch);

}  // namespace plexus::engine::cuda
