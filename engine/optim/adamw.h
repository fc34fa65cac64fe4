// adamw.h - AdamW (Loshchilov & Hutter 2019, "Decoupled Weight Decay Regularization"), with the
// same update as PyTorch's torch.optim.AdamW (default, non-amsgrad, non-fused):
//
//   p <- p - lr * wd * p                         (decoupled decay; only where decay_mask is 1)
//   m <- beta1 m + (1 - beta1) g
//   v <- beta2 v + (1 - beta2) g^2
//   p <- p - lr * (m / (1 - beta1^t)) / (sqrt(v / (1 - beta2^t)) + eps)
//
// Element-wise, so it steps any slice of the flat parameter buffer (a ZeRO shard is a slice of
// params, grads, m, v and the mask at the same offset).
#pragma once

#include <cstddef>
#include <cstdint>

namespace plexus::engine {

struct AdamWConfig {
  float lr = 1e-3f;
  float beta1 = 0.9f;
  float beta2 = 0.95f;
  float eps = 1e-8f;
  float weight_decay = 0.1f;
};

// One AdamW step over n elements. step is the 1-based count of steps taken so far including
// this one (t in the bias corrections). m and v are the optimizer state (start them at 0) and
// are updated in place with params; grads is read only. decay_mask: one byte per element, decay
// where nonzero; nullptr decays every element. All arrays hold n elements; params, grads, m, v
// must not overlap. Does nothing if n == 0. step < 1 is a caller bug: the step is skipped.
// On the CUDA compute device (engine/device/compute.h) the step is cuda::adamw_step, and every
// array, decay_mask included, must be managed memory (TrackedBuffer of MemoryPool::kDevice,
// ComputeVector); Gpt::decay_mask()'s std::vector is host memory, for the cpu.
void adamw_step(float* params, const float* grads, float* m, float* v, size_t n, int64_t step,
                const AdamWConfig& config, const uint8_t* decay_mask);

// The same step on the host whatever the device: the loop adamw_step runs on the cpu. For
// arrays in host memory (ZeRO-Offload's host copies, shard_step.h), as DeepSpeed's CPU Adam.
void adamw_step_host(float* params, const float* grads, float* m, float* v, size_t n,
                     int64_t step, const AdamWConfig& config, const uint8_t* decay_mask);

}  // namespace plexus::engine
