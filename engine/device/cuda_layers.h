// cuda_layers.h - the engine's layers, AdamW and gradient norm on one CUDA GPU: the same
// functions, arguments, shapes and accumulate (+=) / overwrite semantics as
// engine/model/layers/*.h, engine/optim/adamw.h and engine/optim/grad_clip.h, which call these
// when compute.h selects cuda. Every pointer is managed or device memory of the selected GPU.
//
// GEMMs are cuBLAS (cublasSgemm / cublasSgemmStridedBatched for attention's per-head
// products, cublasGemmEx with CUBLAS_COMPUTE_32F_FAST_16BF under Autocast::kBf16); the rest
// are kernels in cuda_*.cu following karpathy/llm.c's CUDA layers (LayerNorm, GELU, fused
// softmax + cross-entropy, AdamW) with fp32 accumulation. Results equal the CPU layers'
// within the bounds documented in docs/gpu.md (summation order differs; bit equality is not
// promised).
//
// Each function runs on the engine's stream and synchronizes it before returning, and throws
// std::runtime_error naming the function and the CUDA or cuBLAS error. Without CUDA compiled
// in (cuda_layers_stub.cpp) every function throws std::logic_error: compute.h never selects
// cuda in such a build.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace plexus::engine::cuda {

void encoder_forward(float* out, const int32_t* tokens, const float* wte, const float* wpe,
                     int B, int T, int C);
void encoder_backward(float* dwte, float* dwpe, const float* dout, const int32_t* tokens,
                      int B, int T, int C);
void layernorm_forward(float* out, float* mean, float* rstd, const float* inp,
                       const float* weight, const float* bias, int B, int T, int C);
void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                        const float* inp, const float* weight, const float* mean,
                        const float* rstd, int B, int T, int C);
void matmul_forward(float* out, const float* inp, const float* weight, const float* bias,
                    int B, int T, int C, int OC);
void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                     const float* inp, const float* weight, int B, int T, int C, int OC);
void attention_forward(float* out, float* att, const float* inp, int B, int T, int C, int NH);
// scratch is not used here: all heads' dP and dS (NH*T*T floats) live in the engine's own
// device workspace, so the heads run as one batched GEMM.
void attention_backward(float* dinp, float* scratch, const float* dout, const float* inp,
                        const float* att, int B, int T, int C, int NH);
void gelu_forward(float* out, const float* inp, size_t n);
void gelu_backward(float* dinp, const float* inp, const float* dout, size_t n);
void residual_forward(float* out, const float* inp1, const float* inp2, size_t n);
void residual_backward(float* dinp1, float* dinp2, const float* dout, size_t n);
size_t softmax_crossentropy_forward(float* losses, float* probs, const float* logits,
                                    const int32_t* targets, int B, int T, int V);
void softmax_crossentropy_backward(float* dlogits, const float* probs, const int32_t* targets,
                                   float dloss, int B, int T, int V);
// AdamW's step (engine/optim/adamw.h) with its hyperparameters as values (AdamWConfig's fields:
// the device layer sits below the optimizer and does not include it).
void adamw_step(float* params, const float* grads, float* m, float* v, size_t n, int64_t step,
                float lr, float beta1, float beta2, float eps, float weight_decay,
                const uint8_t* decay_mask);
// Sum of squares in double, as grad_clip.h's grad_sum_squares.
double sum_squares(const float* x, size_t n);
// x[0..n) *= scale (clip_grad_norm's rescale).
void scale(float* x, size_t n, float scale);
// x[0..n) = value.
void fill(float* x, size_t n, float value);

// Makes `ordinal` this process's current device and creates the engine's stream and cuBLAS
// handle there, with the GEMM mode of `autocast` (compute.h). "" on success, otherwise the
// CUDA or cuBLAS error text. Called by select_compute_device; a second call on the same device
// only switches the GEMM mode, one on another device is refused (one GPU per process).
std::string use_device(int ordinal, bool bf16_gemms);

// Managed memory on the selected GPU for TrackedBuffer (tracked_buffer.cpp): bytes rounded up
// to whole pages; throws std::bad_alloc when cudaMallocManaged fails. free_managed(nullptr)
// does nothing.
void* alloc_managed(size_t bytes);
void free_managed(void* ptr);
// Waits for every kernel of the engine's stream.
void synchronize();

}  // namespace plexus::engine::cuda
