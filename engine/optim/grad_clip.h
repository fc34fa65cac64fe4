// grad_clip.h - global gradient-norm clipping, as torch.nn.utils.clip_grad_norm_ (L2 norm).
//
// Split in two so a sharded optimizer can clip exactly: each rank computes grad_sum_squares()
// over its slice, the ranks allreduce the sums, and each scales its slice by
// clip_coefficient(total, max_norm).
#pragma once

#include <cstddef>

namespace plexus::engine {

// On the CUDA compute device (engine/device/compute.h) grad_sum_squares and scale_gradients
// run cuda::sum_squares and cuda::scale (grads must be managed memory); the sum is then a
// parallel reduction, equal to the host's within rounding, not bit for bit.

// Sum of g[i]^2 over n elements, accumulated in double.
double grad_sum_squares(const float* grads, size_t n);

// grads[0..n) *= factor (nothing when factor is 1): the rescale of clipping.
void scale_gradients(float* grads, size_t n, float factor);

// The factor that brings a gradient of norm sqrt(sum_squares) down to max_norm:
// min(1, max_norm / (norm + 1e-6)), as PyTorch. Returns 1 if max_norm <= 0 (clipping off).
// A non-finite norm gives a non-finite or 0 factor, exactly as PyTorch (the caller may skip the
// step).
float clip_coefficient(double sum_squares, float max_norm);

// Single-process convenience: scales grads (n elements) in place so their L2 norm is at most
// max_norm; returns the norm before clipping.
float clip_grad_norm(float* grads, size_t n, float max_norm);

}  // namespace plexus::engine
