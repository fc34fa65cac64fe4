// layernorm.h - LayerNorm over the last dimension (Ba, Kiros, Hinton 2016), eps 1e-5 as GPT-2.
// On the CUDA compute device (engine/device/compute.h) each function runs its namesake in
// engine/device/cuda_layers.h (same shapes and += / overwrite rules, equal within the bounds
// of docs/gpu.md); every pointer must then be managed memory (TrackedBuffer, ComputeVector).
#pragma once

namespace plexus::engine {

inline constexpr float kLayerNormEps = 1e-5f;

// out (B,T,C) = (inp - mean) * rstd * weight (C) + bias (C), row by row. Saves mean (B,T) and
// rstd (B,T) (1/sqrt(var + eps), biased variance) for the backward. Overwrites out, mean, rstd.
void layernorm_forward(float* out, float* mean, float* rstd, const float* inp,
                       const float* weight, const float* bias, int B, int T, int C);

// Accumulates (+=) the gradients of inp (B,T,C), weight (C) and bias (C) given dout (B,T,C) and
// the forward's inp, weight, mean, rstd.
void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                        const float* inp, const float* weight, const float* mean,
                        const float* rstd, int B, int T, int C);

}  // namespace plexus::engine
