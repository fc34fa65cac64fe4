// cuBLAS opened on first use (engine/device/cublas_library.h): the toolkit's libcublas is found
// and every entry the engine calls resolves, and a call through the table reaches cuBLAS. None of
// this needs a GPU, so it runs wherever the CUDA code is built (CI included). Also checks that
// the engine's programs no longer load cuBLAS at start.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "engine/device/cublas_library.h"

namespace plexus::engine::cuda {
namespace {

bool cublas_mapped() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (line.find("libcublas") != std::string::npos) return true;
  }
  return false;
}

TEST(CublasLibrary, NotLoadedUntilFirstUseThenEveryEntryResolves) {
  // gtest runs each test in a fresh process under ctest; within one process this is the first
  // use only if no other test opened it, which the list order of this file guarantees.
  EXPECT_FALSE(cublas_mapped()) << "libcublas is mapped before the engine asked for it";
  std::string error;
  const CublasLibrary* blas = cublas_library(&error);
  ASSERT_NE(blas, nullptr) << error;
  EXPECT_TRUE(error.empty()) << error;
  EXPECT_TRUE(cublas_mapped());
  EXPECT_NE(blas->create, nullptr);
  EXPECT_NE(blas->destroy, nullptr);
  EXPECT_NE(blas->set_stream, nullptr);
  EXPECT_NE(blas->set_math_mode, nullptr);
  EXPECT_NE(blas->sgemm, nullptr);
  EXPECT_NE(blas->sgemm_strided_batched, nullptr);
  EXPECT_NE(blas->gemm_ex, nullptr);
  EXPECT_NE(blas->gemm_strided_batched_ex, nullptr);
  // Calls that need no device: cuBLAS's own names for two statuses.
  EXPECT_STREQ(blas->status_name(CUBLAS_STATUS_SUCCESS), "CUBLAS_STATUS_SUCCESS");
  EXPECT_STREQ(blas->status_name(CUBLAS_STATUS_NOT_INITIALIZED), "CUBLAS_STATUS_NOT_INITIALIZED");
  EXPECT_NE(std::string(blas->status_string(CUBLAS_STATUS_ALLOC_FAILED)), "");
  // The same table on a second call.
  EXPECT_EQ(cublas_library(nullptr), blas);
}

TEST(CublasLibrary, TheFileNameCarriesTheHeadersMajorVersion) {
  EXPECT_EQ(std::string(cublas_library_name()),
            "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR));
}

}  // namespace
}  // namespace plexus::engine::cuda
