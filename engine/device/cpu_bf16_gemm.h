// cpu_bf16_gemm.h - the CPU matrix product of --autocast bf16: sgemm whose inputs are rounded
// to bfloat16 and whose products are summed in fp32, on the AVX512-BF16 dot product VDPBF16PS.
//
// It is what cuBLAS's CUBLAS_COMPUTE_32F_FAST_16BF does on the GPU (compute.h, Autocast::kBf16),
// and the inputs of torch.autocast(dtype=torch.bfloat16)'s CPU matmul (which, unlike this one,
// also rounds its output to bf16): every element of
// op(A) and op(B) is rounded to bf16 (round to nearest even, as VCVTNE2PS2BF16 does: a NaN
// stays a quiet NaN, an fp32 denormal becomes a zero of its sign), the products of two bf16 are
// exact in fp32, and their sums are rounded in fp32. VDPBF16PS flushes denormal sums to zero
// (a product or partial sum under 2^-126 in magnitude counts as 0); the scalar reference below
// does not.
//
// Algorithm: the blocked GEMM of Goto and van de Geijn ("Anatomy of high-performance matrix
// multiplication", ACM TOMS 34(3), 2008) as BLIS lays it out (Van Zee and van de Geijn, ACM TOMS
// 41(3), 2015): op(B) is packed per block of K and N into bf16 pairs, op(A) per block of rows,
// and a register-blocked microkernel of 14 rows x 32 columns updates C with VDPBF16PS (two
// products per 32-bit lane: lane n of B holds (b[k][n], b[k+1][n]), the A pair (a[i][k],
// a[i][k+1]) is broadcast). See cpu_bf16_gemm.cpp.
//
// Used by the linear layer (engine/model/layers/matmul.cpp) under --autocast bf16 on the CPU.
#pragma once

namespace plexus::engine {

// True when this build compiled the AVX512-BF16 kernel (x86-64, a compiler that knows the
// instructions) and the processor and OS run it (AVX512 F, BW, DQ, VL and BF16, with the zmm
// state enabled). Checked once (cpuid through __builtin_cpu_supports); thread-safe.
bool cpu_bf16_gemm_supported();

// C (M,N) = alpha * op(A) (M,K) x op(B) (K,N) + beta * C, row-major, where op(X) is X or its
// transpose: the arguments mean what they mean to
//   cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
//               trans_b ? CblasTrans : CblasNoTrans, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc)
// except that every element of op(A) and op(B) is rounded to bf16 before it is multiplied.
//   A: (M,K) with row stride lda >= K when !trans_a; (K,M) with lda >= M when trans_a.
//   B: (K,N) with row stride ldb >= N when !trans_b; (N,K) with ldb >= K when trans_b.
//   C: (M,N) with row stride ldc >= N. Strides count floats.
// beta == 0 never reads C (NaN or garbage there is overwritten); K == 0 or alpha == 0 gives
// C = beta * C without reading A or B; M == 0 or N == 0 does nothing. The K sum is split in
// blocks of 256 (C is updated once per block) and is fp32 throughout.
//
// Without cpu_bf16_gemm_supported() it computes the same input roundings with plain scalar
// code, summing in k order (slow: a reference, not meant for training).
//
// Single-threaded: the caller splits larger products across threads (rows of C, as the linear
// layer does). Thread-safe: the packing buffers are per thread, nothing else is shared, so any
// number of threads may call it at once on disjoint C.
void sgemm_bf16(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A,
                int lda, const float* B, int ldb, float beta, float* C, int ldc);

}  // namespace plexus::engine
