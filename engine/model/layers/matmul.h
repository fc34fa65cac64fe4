// matmul.h - the linear layer out = inp W^T + b, on cblas_sgemm (OpenBLAS), or under --autocast
// bf16 on sgemm_bf16 (engine/device/cpu_bf16_gemm.h: inputs rounded to bf16, fp32 sums).
// On the CUDA compute device (engine/device/compute.h) each function runs its namesake in
// engine/device/cuda_layers.h (same shapes and += / overwrite rules, equal within the bounds
// of docs/gpu.md); every pointer must then be managed memory (TrackedBuffer, ComputeVector).
#pragma once

namespace plexus::engine {

// out (B,T,OC) = inp (B,T,C) x weight (OC,C)^T + bias (OC). bias may be null (no bias, as in
// the tied LM head). Overwrites out.
void matmul_forward(float* out, const float* inp, const float* weight, const float* bias,
                    int B, int T, int C, int OC);

// Accumulates (+=): dinp (B,T,C) += dout (B,T,OC) x weight; dweight (OC,C) += dout^T x inp;
// dbias (OC) += column sums of dout. dinp and dbias may be null (skipped).
void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                     const float* inp, const float* weight, int B, int T, int C, int OC);

}  // namespace plexus::engine
