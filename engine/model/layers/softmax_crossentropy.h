// softmax_crossentropy.h - fused softmax + cross-entropy over the vocabulary, with ignored
// positions (target < 0).
// On the CUDA compute device (engine/device/compute.h) each function runs its namesake in
// engine/device/cuda_layers.h (same shapes and += / overwrite rules, equal within the bounds
// of docs/gpu.md); every pointer must then be managed memory (TrackedBuffer, ComputeVector).
#pragma once

#include <cstddef>
#include <cstdint>

namespace plexus::engine {

// For each position (b,t) of logits (B,T,V): probs (B,T,V) = softmax(logits) (max subtracted
// first), losses (B,T) = logsumexp(logits) - logits[target] for target in [0,V), and 0 where
// target < 0 (ignored). Targets must already be checked to be < V. Overwrites probs and losses.
// Returns the number of positions with a target (target >= 0).
size_t softmax_crossentropy_forward(float* losses, float* probs, const float* logits,
                                    const int32_t* targets, int B, int T, int V);

// Accumulates (+=) into dlogits (B,T,V) the gradient of dloss * sum of the losses:
// dlogits += dloss * (probs - onehot(target)) at positions with target >= 0, nothing elsewhere.
// For the mean loss over n positions pass dloss = 1/n.
void softmax_crossentropy_backward(float* dlogits, const float* probs, const int32_t* targets,
                                   float dloss, int B, int T, int V);

}  // namespace plexus::engine
