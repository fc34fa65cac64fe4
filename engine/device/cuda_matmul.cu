// cuda_matmul.cu - the linear layer out = inp W^T + b (matmul.h) on cuBLAS.
//
// A row-major (r,c) array is a column-major (c,r) one to cuBLAS, so every product is written
// for the transposes (rows = B*T; W is (OC,C) row-major, i.e. (C,OC) to cuBLAS):
//   forward   out^T (OC,rows)  = W x inp^T          gemm(T, N, OC, rows, C)
//   dinp      dinp^T (C,rows) += W^T x dout^T       gemm(N, N, C, rows, OC)
//   dweight   dW^T (C,OC)     += inp^T x dout       gemm(N, T, C, OC, rows)
// The bias is copied into every row of out before a beta = 1 product; dbias's column sums are
// a kernel: blocks of 32 columns x kRowThreads rows, each block summing one chunk of rows and
// adding its 32 partial sums with atomicAdd (rows from different chunks meet only there).
#include <cuda_runtime.h>

#include <cstddef>
#include <string>

#include "engine/device/cuda_context.cuh"
#include "engine/device/cuda_layers.h"

namespace plexus::engine::cuda {
namespace {

constexpr unsigned kThreads = 256;
constexpr unsigned kColumns = 32;     // columns per dbias block (one warp wide)
constexpr unsigned kRowThreads = 8;   // threads down the rows per dbias block
constexpr size_t kRowsPerBlock = 256; // rows one dbias block sums before its atomicAdd

// out[r, j] = bias[j] for r < rows, j < oc.
__global__ void broadcast_bias_kernel(float* out, const float* bias, size_t rows, size_t oc) {
  const size_t n = rows * oc;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    out[i] = bias[i % oc];
  }
}

// dbias[j] += sum over rows r of dout[r, j]. Block (kColumns, kRowThreads): column
// blockIdx.x * kColumns + threadIdx.x; rows [blockIdx.y * chunk, +chunk) split over
// threadIdx.y, then summed across threadIdx.y in shared memory.
__global__ void bias_grad_kernel(float* dbias, const float* dout, size_t rows, size_t oc,
                                 size_t chunk) {
  __shared__ float partial[kRowThreads][kColumns];
  const size_t col = static_cast<size_t>(blockIdx.x) * kColumns + threadIdx.x;
  const size_t first = static_cast<size_t>(blockIdx.y) * chunk;
  const size_t last = first + chunk < rows ? first + chunk : rows;
  float sum = 0.0f;
  if (col < oc) {
    for (size_t r = first + threadIdx.y; r < last; r += kRowThreads) sum += dout[r * oc + col];
  }
  partial[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.y == 0 && col < oc) {
    for (unsigned y = 1; y < kRowThreads; ++y) sum += partial[y][threadIdx.x];
    atomicAdd(dbias + col, sum);
  }
}

void check_shape(const char* function, int B, int T, int C, int OC) {
  require(B >= 0 && T >= 0 && C >= 0 && OC >= 0, function,
          "B " + std::to_string(B) + ", T " + std::to_string(T) + ", C " + std::to_string(C) +
              ", OC " + std::to_string(OC) + ": each must be >= 0");
  require(static_cast<long long>(B) * T <= 0x7fffffffLL, function,
          "B*T " + std::to_string(static_cast<long long>(B) * T) + " exceeds 2^31-1");
}

}  // namespace

void matmul_forward(float* out, const float* inp, const float* weight, const float* bias,
                    int B, int T, int C, int OC) {
  const char* fn = "matmul_forward";
  Context& ctx = context(fn);
  check_shape(fn, B, T, C, OC);
  const int rows = B * T;
  if (rows == 0 || OC == 0) return;
  float beta = 0.0f;
  if (bias != nullptr) {
    const size_t n = static_cast<size_t>(rows) * OC;
    broadcast_bias_kernel<<<grid_for(n, kThreads), kThreads, 0, ctx.stream>>>(out, bias, rows, OC);
    check_launch(fn, "broadcast_bias_kernel");
    beta = 1.0f;
  }
  const int ld = C > 0 ? C : 1;  // C == 0: out = bias (or 0); cuBLAS wants ld >= 1
  gemm(ctx, fn, CUBLAS_OP_T, CUBLAS_OP_N, OC, rows, C, 1.0f, weight, ld, 0, inp, ld, 0, beta, out,
       OC, 0, 1);
  finish(ctx, fn);
}

void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                     const float* inp, const float* weight, int B, int T, int C, int OC) {
  const char* fn = "matmul_backward";
  Context& ctx = context(fn);
  check_shape(fn, B, T, C, OC);
  const int rows = B * T;
  if (rows == 0 || OC == 0) return;  // every gradient gains 0
  if (dinp != nullptr) {
    gemm(ctx, fn, CUBLAS_OP_N, CUBLAS_OP_N, C, rows, OC, 1.0f, weight, C, 0, dout, OC, 0, 1.0f,
         dinp, C, 0, 1);
  }
  gemm(ctx, fn, CUBLAS_OP_N, CUBLAS_OP_T, C, OC, rows, 1.0f, inp, C, 0, dout, OC, 0, 1.0f,
       dweight, C, 0, 1);
  if (dbias != nullptr) {
    const size_t chunks = (static_cast<size_t>(rows) + kRowsPerBlock - 1) / kRowsPerBlock;
    const dim3 grid((OC + kColumns - 1) / kColumns,
                    static_cast<unsigned>(chunks < kMaxBlocks ? chunks : kMaxBlocks));
    const size_t chunk = (static_cast<size_t>(rows) + grid.y - 1) / grid.y;
    bias_grad_kernel<<<grid, dim3(kColumns, kRowThreads), 0, ctx.stream>>>(dbias, dout, rows, OC,
                                                                           chunk);
    check_launch(fn, "bias_grad_kernel");
  }
  finish(ctx, fn);
}

}  // namespace plexus::engine::cuda
