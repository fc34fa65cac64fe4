// device_test_support.h - what the device kernel tests share: a cudaMalloc buffer that frees
// itself, test values per datatype, and a bit-exact comparison with the CPU kernels' results.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "comm/reduce/reduce.h"
#include "plexus/plexus.h"

namespace plexus::test {

// ASSERT that a CUDA call succeeded, naming the call and the error.
#define PLX_ASSERT_CUDA(expr)                                                            \
  do {                                                                                   \
    const cudaError_t plx_cuda_err_ = (expr);                                            \
    ASSERT_EQ(plx_cuda_err_, cudaSuccess) << #expr ": " << cudaGetErrorName(plx_cuda_err_) \
                                          << ": " << cudaGetErrorString(plx_cuda_err_);  \
  } while (0)

// cudaMalloc'ed bytes (256-byte aligned), freed on destruction. ok() is false if the allocation
// failed; error() says why.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t bytes) : bytes_(bytes) {
    err_ = cudaMalloc(&ptr_, bytes == 0 ? 1 : bytes);
    if (err_ != cudaSuccess) ptr_ = nullptr;
  }
  ~DeviceBuffer() {
    if (ptr_ != nullptr) cudaFree(ptr_);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  bool ok() const { return ptr_ != nullptr; }
  std::string error() const { return cudaGetErrorString(err_); }
  uint8_t* bytes() const { return static_cast<uint8_t*>(ptr_); }
  size_t size_bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
  cudaError_t err_ = cudaSuccess;
};

inline const char* datatype_label(plx_datatype_t datatype) {
  static const char* const names[] = {"int8",   "uint8",   "int32",    "uint32",  "int64",
                                      "uint64", "float16", "bfloat16", "float32", "float64"};
  return names[datatype];
}

inline const char* op_label(plx_red_op_t op) {
  static const char* const names[] = {"sum", "prod", "min", "max", "avg"};
  return names[op];
}

inline bool is_float(plx_datatype_t datatype) {
  return datatype == PLX_FLOAT16 || datatype == PLX_BFLOAT16 || datatype == PLX_FLOAT32 ||
         datatype == PLX_FLOAT64;
}

// Element bits, little-endian, widened to 64 bits.
inline uint64_t element_bits(const uint8_t* p, size_t bytes) {
  uint64_t v = 0;
  std::memcpy(&v, p, bytes);
  return v;
}

inline bool is_nan_bits(plx_datatype_t datatype, uint64_t bits) {
  switch (datatype) {
    case PLX_FLOAT16: return (bits & 0x7fffu) > 0x7c00u;
    case PLX_BFLOAT16: return (bits & 0x7fffu) > 0x7f80u;
    case PLX_FLOAT32: return (bits & 0x7fffffffu) > 0x7f800000u;
    case PLX_FLOAT64: return (bits & 0x7fffffffffffffffull) > 0x7ff0000000000000ull;
    default: return false;
  }
}

// count test values of datatype: integers are random bits (so SUM/PROD wrap); floats are mostly
// random mantissas with exponents near 1 (so sums and products round), 1 in 32 a subnormal and
// 1 in 32 a random bit pattern (Inf, NaN, huge, tiny).
inline std::vector<uint8_t> test_values(plx_datatype_t datatype, size_t count, uint64_t seed) {
  const size_t bytes = comm::datatype_bytes(datatype);
  std::vector<uint8_t> out(count * bytes);
  std::mt19937_64 rng(seed);
  for (size_t i = 0; i < count; ++i) {
    const uint64_t r = rng();
    const uint64_t pick = rng() % 32;
    const uint64_t sign = r >> 63;
    uint64_t v = r;
    if (is_float(datatype) && pick >= 2) {
      switch (datatype) {  // sign | exponent near the bias (within +-3) | random mantissa
        case PLX_FLOAT16: v = (sign << 15) | ((12 + r % 7) << 10) | ((r >> 8) & 0x3ff); break;
        case PLX_BFLOAT16: v = (sign << 15) | ((124 + r % 7) << 7) | ((r >> 8) & 0x7f); break;
        case PLX_FLOAT32: v = (sign << 31) | ((124 + r % 7) << 23) | ((r >> 8) & 0x7fffff); break;
        default: v = (sign << 63) | ((1020 + r % 7) << 52) | ((r >> 8) & 0xfffffffffffffull); break;
      }
    } else if (is_float(datatype) && pick == 1) {  // subnormal: exponent 0, mantissa random
      switch (datatype) {
        case PLX_FLOAT16: v = (sign << 15) | ((r >> 8) & 0x3ff); break;
        case PLX_BFLOAT16: v = (sign << 15) | ((r >> 8) & 0x7f); break;
        case PLX_FLOAT32: v = (sign << 31) | ((r >> 8) & 0x7fffff); break;
        default: v = (sign << 63) | ((r >> 8) & 0xfffffffffffffull); break;
      }
    }
    std::memcpy(out.data() + i * bytes, &v, bytes);
  }
  return out;
}

// Compares `got` with the CPU kernel's `want` bit for bit. Where `nan_any_payload` (arithmetic
// ops: the GPU's NaN is canonical, x86 keeps an operand's payload) two NaNs compare equal.
// Returns "" or a description of the first mismatches.
inline std::string compare_bits(plx_datatype_t datatype, const uint8_t* got, const uint8_t* want,
                                size_t count, bool nan_any_payload) {
  const size_t bytes = comm::datatype_bytes(datatype);
  std::ostringstream out;
  size_t bad = 0;
  for (size_t i = 0; i < count; ++i) {
    const uint64_t g = element_bits(got + i * bytes, bytes);
    const uint64_t w = element_bits(want + i * bytes, bytes);
    if (g == w) continue;
    if (nan_any_payload && is_nan_bits(datatype, g) && is_nan_bits(datatype, w)) continue;
    if (bad++ < 5) out << " [" << i << "] got 0x" << std::hex << g << " want 0x" << w << std::dec;
  }
  if (bad == 0) return "";
  return std::to_string(bad) + " of " + std::to_string(count) + " elements differ:" + out.str();
}

}  // namespace plexus::test
