// cublas_library.h - cuBLAS, opened when the first GPU is taken rather than when the program
// starts (private to engine/device, CUDA builds only).
//
// Linking libcublas.so makes every process that links the engine (plexus-train on any device,
// the engine's tests) load it and libcublasLt at start: about 0.4 s of CPU and 220 MB of
// resident memory per process on a machine without a GPU. The engine instead dlopen()s
// libcublas.so.<CUBLAS_VER_MAJOR> (the major version of the headers it was compiled with) on the
// first use_device(), as NCCL opens libcuda, and calls the ten functions it needs through this
// table. It looks for the library by the loader's rules (LD_LIBRARY_PATH, the ld.so cache, the
// program's run path) and then in the toolkit's library folder known at build time.
//
// Thread safety: cublas_library() may be called from any thread; the library is opened once.
#pragma once

#include <cublas_v2.h>

#include <string>

namespace plexus::engine::cuda {

// The exported C functions' types. cublas_v2.h maps cublasCreate to cublasCreate_v2 (and so
// on), so decltype names the real ones; cublasGemmEx and cublasGemmStridedBatchedEx also have a
// C++ inline overload taking a cudaDataType compute type, so their types are spelled out.
using GemmExFn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int,
                                    int, int, const void*, const void*, cudaDataType, int,
                                    const void*, cudaDataType, int, const void*, void*,
                                    cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);
using GemmStridedBatchedExFn = cublasStatus_t (*)(
    cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*, const void*,
    cudaDataType, int, long long, const void*, cudaDataType, int, long long, const void*, void*,
    cudaDataType, int, long long, int, cublasComputeType_t, cublasGemmAlgo_t);

struct CublasLibrary {
  decltype(&cublasCreate) create = nullptr;
  decltype(&cublasDestroy) destroy = nullptr;
  decltype(&cublasSetStream) set_stream = nullptr;
  decltype(&cublasSetMathMode) set_math_mode = nullptr;
  decltype(&cublasSgemm) sgemm = nullptr;
  decltype(&cublasSgemmStridedBatched) sgemm_strided_batched = nullptr;
  GemmExFn gemm_ex = nullptr;
  GemmStridedBatchedExFn gemm_strided_batched_ex = nullptr;
  decltype(&cublasGetStatusName) status_name = nullptr;
  decltype(&cublasGetStatusString) status_string = nullptr;
};

// The opened library with every entry resolved, or nullptr with *error saying which file could
// not be opened (dlerror) or which function it lacks. The outcome of the first call is kept.
const CublasLibrary* cublas_library(std::string* error);

// The file name tried first, "libcublas.so.<major>".
const char* cublas_library_name();

}  // namespace plexus::engine::cuda
