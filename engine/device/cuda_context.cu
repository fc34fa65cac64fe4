// cuda_context.cu - the engine's one GPU: its stream, cuBLAS handle and GEMM mode
// (use_device), managed memory for the model's buffers, and the error checks of
// cuda_context.cuh.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>

#include "engine/device/cuda_context.cuh"
#include "engine/device/cuda_layers.h"

namespace plexus::engine::cuda {
namespace {

constexpr size_t kPageBytes = 4096;

Context g_context;
bool g_ready = false;  // use_device() succeeded
std::mutex g_mutex;    // use_device() against itself

std::string prefix(const char* function) {
  return std::string("plexus::engine::cuda::") + function + ": ";
}

std::string cuda_text(cudaError_t err) {
  return std::string(cudaGetErrorName(err)) + ": " + cudaGetErrorString(err);
}

// Only called once cuBLAS is open (a status exists only then).
std::string cublas_text(cublasStatus_t status) {
  const CublasLibrary* blas = cublas_library(nullptr);
  if (blas == nullptr) return "status " + std::to_string(static_cast<int>(status));
  return std::string(blas->status_name(status)) + ": " + blas->status_string(status);
}

// GEMM precision: fp32 keeps cuBLAS's default math, which never rounds fp32 inputs to TF32
// (only CUBLAS_TF32_TENSOR_OP_MATH or NVIDIA_TF32_OVERRIDE would); bf16 autocast is chosen
// per call by the compute type (cuda_gemm.cu), so the handle's mode is the same for both.
std::string set_gemm_mode(Context& ctx, bool bf16_gemms) {
  const cublasStatus_t status = ctx.blas->set_math_mode(ctx.cublas, CUBLAS_DEFAULT_MATH);
  if (status != CUBLAS_STATUS_SUCCESS) return "cublasSetMathMode: " + cublas_text(status);
  ctx.bf16_gemms = bf16_gemms;
  return "";
}

// Releases what a failed use_device() created; errors are moot at that point.
void release(Context& ctx) {
  if (ctx.counter != nullptr) (void)cudaFree(ctx.counter);
  if (ctx.cublas != nullptr) (void)ctx.blas->destroy(ctx.cublas);
  if (ctx.stream != nullptr) (void)cudaStreamDestroy(ctx.stream);
  (void)cudaGetLastError();
  ctx = Context{};
}

}  // namespace

void check_cuda(cudaError_t err, const char* function, const char* call) {
  if (err == cudaSuccess) return;
  (void)cudaGetLastError();  // clear a non-sticky error so the next call starts clean
  throw std::runtime_error(prefix(function) + call + ": " + cuda_text(err));
}

void check_cublas(cublasStatus_t status, const char* function, const char* call) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  throw std::runtime_error(prefix(function) + call + ": " + cublas_text(status));
}

void check_launch(const char* function, const char* kernel) {
  const cudaError_t err = cudaGetLastError();
  if (err == cudaSuccess) return;
  throw std::runtime_error(prefix(function) + "launch of " + kernel + ": " + cuda_text(err));
}

void finish(const Context& ctx, const char* function) {
  check_cuda(cudaStreamSynchronize(ctx.stream), function, "cudaStreamSynchronize");
}

void require(bool ok, const char* function, const std::string& what) {
  if (!ok) throw std::invalid_argument(prefix(function) + what);
}

Context& context(const char* function) {
  if (!g_ready) {
    throw std::logic_error(prefix(function) + "no GPU selected (use_device has not succeeded)");
  }
  int current = -1;
  check_cuda(cudaGetDevice(&current), function, "cudaGetDevice");
  if (current != g_context.device) {  // another thread of the process, or a library, moved it
    check_cuda(cudaSetDevice(g_context.device), function, "cudaSetDevice");
  }
  return g_context;
}

void* workspace(Context& ctx, size_t bytes, const char* function) {
  if (bytes <= ctx.workspace_bytes) return ctx.workspace;
  if (ctx.workspace != nullptr) {
    check_cuda(cudaFree(ctx.workspace), function, "cudaFree (workspace)");
    ctx.workspace = nullptr;
    ctx.workspace_bytes = 0;
  }
  check_cuda(cudaMalloc(&ctx.workspace, bytes), function, "cudaMalloc (workspace)");
  ctx.workspace_bytes = bytes;
  return ctx.workspace;
}

// A second call on the same GPU only changes the GEMM mode (tests compare fp32 and bf16);
// moving to another GPU would strand every managed buffer, so it is refused.
std::string use_device(int ordinal, bool bf16_gemms) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_ready) {
    if (ordinal != g_context.device) {
      return "use_device: GPU " + std::to_string(g_context.device) +
             " is already in use; cannot move to GPU " + std::to_string(ordinal);
    }
    const cudaError_t err = cudaSetDevice(ordinal);
    if (err != cudaSuccess) return "cudaSetDevice(" + std::to_string(ordinal) + "): " + cuda_text(err);
    return set_gemm_mode(g_context, bf16_gemms);
  }
  Context ctx;
  ctx.device = ordinal;
  cudaError_t err = cudaSetDevice(ordinal);
  if (err != cudaSuccess) return "cudaSetDevice(" + std::to_string(ordinal) + "): " + cuda_text(err);
  err = cudaStreamCreateWithFlags(&ctx.stream, cudaStreamNonBlocking);
  if (err != cudaSuccess) {
    release(ctx);
    return "cudaStreamCreateWithFlags: " + cuda_text(err);
  }
  std::string open_error;
  ctx.blas = cublas_library(&open_error);
  if (ctx.blas == nullptr) {
    release(ctx);
    return open_error;
  }
  const cublasStatus_t status = ctx.blas->create(&ctx.cublas);
  if (status != CUBLAS_STATUS_SUCCESS) {
    ctx.cublas = nullptr;
    release(ctx);
    return "cublasCreate: " + cublas_text(status);
  }
  const cublasStatus_t bound = ctx.blas->set_stream(ctx.cublas, ctx.stream);
  if (bound != CUBLAS_STATUS_SUCCESS) {
    release(ctx);
    return "cublasSetStream: " + cublas_text(bound);
  }
  std::string error = set_gemm_mode(ctx, bf16_gemms);
  if (error.empty()) {
    err = cudaMalloc(reinterpret_cast<void**>(&ctx.counter), sizeof(unsigned long long));
    if (err != cudaSuccess) error = "cudaMalloc (counter): " + cuda_text(err);
  }
  if (!error.empty()) {
    release(ctx);
    return error;
  }
  g_context = ctx;
  g_ready = true;
  return "";
}

void* alloc_managed(size_t bytes) {
  Context& ctx = context("alloc_managed");
  const size_t pages = bytes == 0 ? 1 : (bytes + kPageBytes - 1) / kPageBytes;
  if (pages > SIZE_MAX / kPageBytes) throw std::bad_alloc();
  const size_t rounded = pages * kPageBytes;
  void* ptr = nullptr;
  if (cudaMallocManaged(&ptr, rounded, cudaMemAttachGlobal) != cudaSuccess || ptr == nullptr) {
    (void)cudaGetLastError();
    throw std::bad_alloc();
  }
  // A hint only: where the driver cannot honour it (no concurrent managed access) the
  // memory still works, so its error is cleared, not reported.
#if CUDART_VERSION >= 13000
  cudaMemLocation location{};
  location.type = cudaMemLocationTypeDevice;
  location.id = ctx.device;
#else
  const int location = ctx.device;
#endif
  if (cudaMemAdvise(ptr, rounded, cudaMemAdviseSetPreferredLocation, location) != cudaSuccess) {
    (void)cudaGetLastError();
  }
  return ptr;
}

// Called from destructors: an error (a context already lost) cannot be reported, so it is
// cleared. cudaFree waits for the device, so no kernel still uses the memory.
void free_managed(void* ptr) {
  if (ptr == nullptr) return;
  if (cudaFree(ptr) != cudaSuccess) (void)cudaGetLastError();
}

void synchronize() {
  if (!g_ready) return;
  finish(context("synchronize"), "synchronize");
}

}  // namespace plexus::engine::cuda
