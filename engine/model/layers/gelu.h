// gelu.h - GELU, tanh approximation (Hendrycks & Gimpel 2016), as in GPT-2.
// On the CUDA compute device (engine/device/compute.h) each function runs its namesake in
// engine/device/cuda_layers.h (same shapes and += / overwrite rules, equal within the bounds
// of docs/gpu.md); every pointer must then be managed memory (TrackedBuffer, ComputeVector).
#pragma once

#include <cstddef>

namespace plexus::engine {

// out[i] = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) for n elements. Overwrites out;
// out may equal inp.
void gelu_forward(float* out, const float* inp, size_t n);

// Accumulates (+=) dinp[i] += gelu'(inp[i]) * dout[i] for n elements.
void gelu_backward(float* dinp, const float* inp, const float* dout, size_t n);

}  // namespace plexus::engine
