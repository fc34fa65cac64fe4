// encoder.h - token + position embedding: out[b,t,:] = wte[tokens[b,t],:] + wpe[t,:].
// On the CUDA compute device (engine/device/compute.h) each function runs its namesake in
// engine/device/cuda_layers.h (same shapes and += / overwrite rules, equal within the bounds
// of docs/gpu.md); every pointer must then be managed memory (TrackedBuffer, ComputeVector).
#pragma once

#include <cstdint>

namespace plexus::engine {

// out (B,T,C) = wte (V,C) row tokens[b,t] + wpe (maxT,C) row t. Tokens must already be checked
// to lie in [0,V) and T <= maxT by the caller. Overwrites out.
void encoder_forward(float* out, const int32_t* tokens, const float* wte, const float* wpe,
                     int B, int T, int C);

// Accumulates (+=) dout (B,T,C) into dwte (V,C) at the rows named by tokens and into dwpe
// (maxT,C) at rows 0..T-1.
void encoder_backward(float* dwte, float* dwpe, const float* dout, const int32_t* tokens,
                      int B, int T, int C);

}  // namespace plexus::engine
