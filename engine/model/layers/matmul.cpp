// matmul.cpp - linear layer forward/backward as three sgemm calls (llm.c's matmul_*, on BLAS),
// split over the CPU threads by rows (cpu_threads.h).
#include "engine/model/layers/matmul.h"

#include <cblas.h>

#include <algorithm>
#include <cstddef>

#include "engine/device/compute.h"
#include "engine/device/cpu_bf16_gemm.h"
#include "engine/device/cpu_threads.h"
#include "engine/device/cuda_layers.h"

namespace plexus::engine {

namespace {
// Rows are split over the threads in blocks of kRowBlock (a multiple of OpenBLAS's sgemm
// micro-tile heights, so no part ends inside a tile); a thread gets at least kGrainBlocks.
constexpr size_t kRowBlock = 16;
constexpr size_t kGrainBlocks = 2;

// cblas_sgemm row-major, or under --autocast bf16 sgemm_bf16 (the same arguments).
void gemm(bool trans_a, bool trans_b, int M, int N, int K, const float* A, int lda,
          const float* B, int ldb, float beta, float* C, int ldc) {
  if (compute_autocast() == Autocast::kBf16) {
    return sgemm_bf16(trans_a, trans_b, M, N, K, 1.0f, A, lda, B, ldb, beta, C, ldc);
  }
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, M, N, K, 1.0f, A, lda, B, ldb, beta, C, ldc);
}

size_t blocks(size_t rows) { return (rows + kRowBlock - 1) / kRowBlock; }
size_t block_row(size_t block, size_t rows) { return std::min(rows, block * kRowBlock); }
}  // namespace

void matmul_forward(float* out, const float* inp, const float* weight, const float* bias,
                    int B, int T, int C, int OC) {
  if (on_cuda()) return cuda::matmul_forward(out, inp, weight, bias, B, T, C, OC);
  const size_t rows = static_cast<size_t>(B) * T;
  const float beta = bias != nullptr ? 1.0f : 0.0f;
  parallel_for(blocks(rows), kGrainBlocks, [&](size_t b0, size_t b1) {
    const size_t r0 = block_row(b0, rows), r1 = block_row(b1, rows);
    float* o = out + r0 * OC;
    if (bias != nullptr) {  // start every row at the bias, then add the product to it
      for (size_t r = r0; r < r1; ++r) {
        for (int j = 0; j < OC; ++j) o[(r - r0) * OC + j] = bias[j];
      }
    }
    // (rows,C) x (OC,C)^T -> (rows,OC), rows r0..r1
    gemm(false, true, static_cast<int>(r1 - r0), OC, C, inp + r0 * C, C, weight, C, beta, o, OC);
  });
}

void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                     const float* inp, const float* weight, int B, int T, int C, int OC) {
  if (on_cuda()) {
    return cuda::matmul_backward(dinp, dweight, dbias, dout, inp, weight, B, T, C, OC);
  }
  const size_t rows = static_cast<size_t>(B) * T;
  const size_t row_blocks = blocks(rows), oc_blocks = blocks(static_cast<size_t>(OC));
  // Part p of n: blocks p/n of dinp's rows and of dweight's and dbias's output channels (the
  // two products have the same flops).
  const size_t n = std::max<size_t>(
      1, std::min({static_cast<size_t>(cpu_threads()), row_blocks / kGrainBlocks, oc_blocks}));
  parallel_for(n, 1, [&](size_t p0, size_t p1) {
    const size_t r0 = block_row(row_blocks * p0 / n, rows);
    const size_t r1 = block_row(row_blocks * p1 / n, rows);
    const size_t o0 = block_row(oc_blocks * p0 / n, OC), o1 = block_row(oc_blocks * p1 / n, OC);
    if (dinp != nullptr && r1 > r0) {  // (rows,OC) x (OC,C) -> (rows,C), rows r0..r1
      gemm(false, false, static_cast<int>(r1 - r0), C, OC, dout + r0 * OC, OC, weight, C, 1.0f,
           dinp + r0 * C, C);
    }
    if (o1 == o0) return;
    // (rows,OC)^T x (rows,C) -> (OC,C), output channels o0..o1
    gemm(true, false, static_cast<int>(o1 - o0), C, static_cast<int>(rows), dout + o0, OC, inp, C,
         1.0f, dweight + o0 * C, C);
    if (dbias != nullptr) {  // each channel summed over the rows in order
      for (size_t r = 0; r < rows; ++r) {
        const float* d = dout + r * OC;
        for (size_t j = o0; j < o1; ++j) dbias[j] += d[j];
      }
    }
  });
}

}  // namespace plexus::engine
