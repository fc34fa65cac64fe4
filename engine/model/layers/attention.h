// attention.h - causal multi-head self-attention (Vaswani et al. 2017), GPT-2 layout.
//
// inp (B,T,3C) holds q, k, v side by side: q = inp[..., 0:C], k = inp[..., C:2C],
// v = inp[..., 2C:3C]; head h owns columns h*hs .. (h+1)*hs - 1 of each, hs = C / NH.
// Per (b,h): att = softmax(mask(q k^T / sqrt(hs))) (T,T), out_h = att v. Both products are sgemm
// calls on strided views of inp and out, so no transpose is ever materialized.
// On the CUDA compute device (engine/device/compute.h) each function runs its namesake in
// engine/device/cuda_layers.h (same shapes and += / overwrite rules, equal within the bounds
// of docs/gpu.md); every pointer must then be managed memory (TrackedBuffer, ComputeVector).
#pragma once

namespace plexus::engine {

// out (B,T,C): the heads' outputs side by side. att (B,NH,T,T): the post-softmax weights, kept
// for the backward; row t is zero beyond column t (causal). Overwrites out and att.
void attention_forward(float* out, float* att, const float* inp, int B, int T, int C, int NH);

// Accumulates (+=) into dinp (B,T,3C) the gradient given dout (B,T,C), the forward's inp and att.
// scratch: T*T floats of workspace, overwritten. With several CPU threads (cpu_threads.h) the
// other threads use a T*T block of their own (thread-local, kept for the next call, not counted
// by the MemoryTracker: 64 KiB per thread at T = 128).
void attention_backward(float* dinp, float* scratch, const float* dout, const float* inp,
                        const float* att, int B, int T, int C, int NH);

}  // namespace plexus::engine
