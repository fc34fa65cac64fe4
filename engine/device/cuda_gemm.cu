// cuda_gemm.cu - every GEMM of the CUDA layers, in the precision --autocast chose: fp32
// (cublasSgemm, cublasSgemmStridedBatched; the handle's default math never uses TF32) or bf16
// autocast (cublasGemmEx, cublasGemmStridedBatchedEx on the same fp32 arrays with
// CUBLAS_COMPUTE_32F_FAST_16BF: inputs rounded to bf16, products accumulated in fp32, as
// torch.autocast(dtype=torch.bfloat16) does for matmuls).
#include <cublas_v2.h>

#include "engine/device/cuda_context.cuh"

namespace plexus::engine::cuda {

void gemm(Context& ctx, const char* function, cublasOperation_t op_a, cublasOperation_t op_b,
          int m, int n, int k, float alpha, const float* a, int lda, long long stride_a,
          const float* b, int ldb, long long stride_b, float beta, float* c, int ldc,
          long long stride_c, int batch) {
  if (m == 0 || n == 0 || batch == 0) return;  // nothing to write
  cublasStatus_t status;
  if (ctx.bf16_gemms) {
    if (batch == 1) {
      status = ctx.blas->gemm_ex(ctx.cublas, op_a, op_b, m, n, k, &alpha, a, CUDA_R_32F, lda,
                                 b, CUDA_R_32F, ldb, &beta, c, CUDA_R_32F, ldc,
                                 CUBLAS_COMPUTE_32F_FAST_16BF, CUBLAS_GEMM_DEFAULT);
      check_cublas(status, function, "cublasGemmEx (bf16 autocast)");
    } else {
      status = ctx.blas->gemm_strided_batched_ex(
          ctx.cublas, op_a, op_b, m, n, k, &alpha, a, CUDA_R_32F, lda, stride_a, b, CUDA_R_32F,
          ldb, stride_b, &beta, c, CUDA_R_32F, ldc, stride_c, batch, CUBLAS_COMPUTE_32F_FAST_16BF,
          CUBLAS_GEMM_DEFAULT);
      check_cublas(status, function, "cublasGemmStridedBatchedEx (bf16 autocast)");
    }
    return;
  }
  if (batch == 1) {
    status =
        ctx.blas->sgemm(ctx.cublas, op_a, op_b, m, n, k, &alpha, a, lda, b, ldb, &beta, c, ldc);
    check_cublas(status, function, "cublasSgemm");
  } else {
    status = ctx.blas->sgemm_strided_batched(ctx.cublas, op_a, op_b, m, n, k, &alpha, a, lda,
                                             stride_a, b, ldb, stride_b, &beta, c, ldc, stride_c,
                                             batch);
    check_cublas(status, function, "cublasSgemmStridedBatched");
  }
}

}  // namespace plexus::engine::cuda
