// residual.h - the residual connection out = inp1 + inp2.
// On the CUDA compute device (engine/device/compute.h) each function runs its namesake in
// engine/device/cuda_layers.h (same shapes and += / overwrite rules, equal within the bounds
// of docs/gpu.md); every pointer must then be managed memory (TrackedBuffer, ComputeVector).
#pragma once

#include <cstddef>

namespace plexus::engine {

// out[i] = inp1[i] + inp2[i] for n elements (shape (B,T,C) in the model). Overwrites out.
void residual_forward(float* out, const float* inp1, const float* inp2, size_t n);

// Accumulates (+=) dout into both dinp1 and dinp2 (n elements). dinp1 and dinp2 must not alias
// dout or each other.
void residual_backward(float* dinp1, float* dinp2, const float* dout, size_t n);

}  // namespace plexus::engine
