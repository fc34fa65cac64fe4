// compute.h - which device this process's model runs on: the CPU (OpenBLAS and the loops in
// engine/model/layers) or one CUDA GPU (cuBLAS and the kernels of cuda_layers.h).
//
// The choice is process-wide and made once, at start, before any model buffer exists
// (plexus-train --device cpu|cuda). Every layer function of engine/model/layers, adamw_step,
// grad_sum_squares and the model's TrackedBuffers of MemoryPool::kDevice then follow it:
//
//   cpu    buffers are anonymous mmap; the layers run on the calling thread.
//   cuda   buffers are CUDA managed memory (cudaMallocManaged) on the selected GPU, so host
//          code (the collectives, checkpoint I/O, the tensor-parallel vocabulary loops) reads
//          and writes them directly; the layers launch kernels and cuBLAS calls on one stream
//          and synchronize it before they return, so no host access can overtake them.
//
// Thread safety: select_compute_device() must be called before any other thread uses the
// engine; the queries are safe from any thread afterwards.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace plexus::engine {

enum class ComputeDevice { kCpu, kCuda };

// Matrix products under --autocast: kNone computes in fp32; kBf16 rounds the inputs of the
// GEMMs to bf16 and accumulates in fp32, as torch.autocast(dtype=torch.bfloat16) does for
// matmuls; every other layer stays fp32. On cuda, cuBLAS does it for every GEMM
// (CUBLAS_COMPUTE_32F_FAST_16BF); on the CPU, the linear layers (the LM head included) run
// sgemm_bf16 (cpu_bf16_gemm.h, AVX512-BF16) and attention's products stay fp32.
enum class Autocast { kNone, kBf16 };

// "cpu" or "cuda" -> *out, true; anything else false (*out untouched).
bool parse_compute_device(std::string_view text, ComputeDevice* out);
// "none" or "bf16" -> *out, true; anything else false.
bool parse_autocast(std::string_view text, Autocast* out);
const char* compute_device_name(ComputeDevice device);
const char* autocast_name(Autocast autocast);

// Selects the device (and, for cuda, the GPU ordinal: the local rank modulo the visible
// devices is the usual choice) and the autocast mode. Returns "" on success, otherwise a
// message naming the reason and leaves the CPU selected: "--device cuda: this build has no
// CUDA (configure with the CUDA toolkit)", "--device cuda: no CUDA device: <why>", "--device
// cuda: ordinal 3 of 1 devices", "--autocast bf16 on --device cpu needs a processor with
// AVX512-BF16 (this one has none); use --autocast none or --device cuda".
std::string select_compute_device(ComputeDevice device, int ordinal, Autocast autocast);

ComputeDevice compute_device();
Autocast compute_autocast();
inline bool on_cuda() { return compute_device() == ComputeDevice::kCuda; }

}  // namespace plexus::engine
