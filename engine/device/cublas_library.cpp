// cublas_library.cpp - opens libcublas on first use and resolves the engine's entries
// (cublas_library.h).
#include "engine/device/cublas_library.h"

#include <dlfcn.h>

#include <mutex>
#include <string>

namespace plexus::engine::cuda {
namespace {

#define PLX_CUBLAS_STRING2(x) #x
#define PLX_CUBLAS_STRING(x) PLX_CUBLAS_STRING2(x)
// The exported name after cublas_v2.h's renaming (cublasCreate -> "cublasCreate_v2").
#define PLX_CUBLAS_SYMBOL(function) PLX_CUBLAS_STRING(function)

constexpr const char* kName = "libcublas.so." PLX_CUBLAS_STRING(CUBLAS_VER_MAJOR);

struct Loaded {
  CublasLibrary library;
  bool ok = false;
  std::string error;
};

template <typename Fn>
bool resolve(void* handle, const char* symbol, Fn* out, std::string* error) {
  *out = reinterpret_cast<Fn>(dlsym(handle, symbol));
  if (*out == nullptr) *error = std::string(kName) + " has no " + symbol;
  return *out != nullptr;
}

Loaded open_library() {
  Loaded loaded;
  void* handle = dlopen(kName, RTLD_NOW | RTLD_LOCAL);
  std::string first_error = handle == nullptr ? dlerror() : "";
#ifdef PLEXUS_CUDA_LIBRARY_DIR
  if (handle == nullptr) {
    const std::string path = std::string(PLEXUS_CUDA_LIBRARY_DIR) + "/" + kName;
    handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) first_error += "; " + std::string(dlerror());
  }
#endif
  if (handle == nullptr) {
    loaded.error = "cannot open cuBLAS (" + first_error + ")";
    return loaded;
  }
  CublasLibrary& l = loaded.library;
  std::string* e = &loaded.error;
  loaded.ok = resolve(handle, PLX_CUBLAS_SYMBOL(cublasCreate), &l.create, e) &&
              resolve(handle, PLX_CUBLAS_SYMBOL(cublasDestroy), &l.destroy, e) &&
              resolve(handle, PLX_CUBLAS_SYMBOL(cublasSetStream), &l.set_stream, e) &&
              resolve(handle, PLX_CUBLAS_SYMBOL(cublasSetMathMode), &l.set_math_mode, e) &&
              resolve(handle, PLX_CUBLAS_SYMBOL(cublasSgemm), &l.sgemm, e) &&
              resolve(handle, PLX_CUBLAS_SYMBOL(cublasSgemmStridedBatched),
                      &l.sgemm_strided_batched, e) &&
              resolve(handle, PLX_CUBLAS_SYMBOL(cublasGemmEx), &l.gemm_ex, e) &&
              resolve(handle, PLX_CUBLAS_SYMBOL(cublasGemmStridedBatchedEx),
                      &l.gemm_strided_batched_ex, e) &&
              resolve(handle, PLX_CUBLAS_SYMBOL(cublasGetStatusName), &l.status_name, e) &&
              resolve(handle, PLX_CUBLAS_SYMBOL(cublasGetStatusString), &l.status_string, e);
  // The handle stays open for the life of the process, as a linked library would.
  return loaded;
}

}  // namespace

const CublasLibrary* cublas_library(std::string* error) {
  static std::once_flag once;
  static Loaded loaded;
  std::call_once(once, [] { loaded = open_library(); });
  if (loaded.ok) return &loaded.library;
  if (error != nullptr) *error = loaded.error;
  return nullptr;
}

const char* cublas_library_name() { return kName; }

}  // namespace plexus::engine::cuda
