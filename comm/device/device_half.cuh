// device_half.cuh - the float16/bfloat16 <-> float32 conversions of comm/reduce/half.h, on the GPU.
//
// The device kernels must round exactly as the CPU kernels do, so these are the same integer and
// float steps as half.h, line for line (F. Giesen's "half_to_float_fast" and
// "float_to_half_fast3_rtne", public domain, 2016), not CUDA's __float2half_rn: that one gives
// the same finite results but its own NaN bits. The two float operations use __fmul_rn and
// __fadd_rn, which are correctly rounded and never fused into an FMA; nvcc keeps subnormals
// unless -ftz=true (--use_fast_math), which Plexus never passes.
#pragma once

#include <cstdint>

namespace plexus::comm::device {

__device__ __forceinline__ uint32_t select_bits(bool cond, uint32_t a, uint32_t b) {
  return cond ? a : b;
}

// binary16 bits -> float32 (exact for every input).
__device__ __forceinline__ float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t magnitude = h & 0x7fffu;
  const float scaled = __fmul_rn(__uint_as_float(magnitude << 13), 0x1p112f);
  uint32_t bits = __float_as_uint(scaled);
  bits = select_bits(magnitude >= 0x7c00u, 0x7f800000u | (magnitude << 13), bits);
  return __uint_as_float(bits | sign);
}

// float32 -> binary16 bits, round to nearest even; overflow gives Inf, NaN gives a quiet NaN.
__device__ __forceinline__ uint16_t float_to_half(float f) {
  const uint32_t all = __float_as_uint(f);
  const uint32_t sign = (all >> 16) & 0x8000u;
  const uint32_t mag = all & 0x7fffffffu;
  const uint32_t special =
      select_bits(mag > 0x7f800000u, 0x7e00u | ((mag >> 13) & 0x3ffu), 0x7c00u);
  const float denorm_magic = __uint_as_float(uint32_t{126} << 23);
  const uint32_t sub =
      __float_as_uint(__fadd_rn(__uint_as_float(mag), denorm_magic)) - (uint32_t{126} << 23);
  const uint32_t odd = (mag >> 13) & 1u;
  const uint32_t normal = (mag + ((15u - 127u) << 23) + 0xfffu + odd) >> 13;
  uint32_t out = select_bits(mag < (113u << 23), sub, normal);
  out = select_bits(mag >= (143u << 23), special, out);
  return static_cast<uint16_t>(out | sign);
}

// bfloat16 bits -> float32 (exact).
__device__ __forceinline__ float bf16_to_float(uint16_t b) {
  return __uint_as_float(static_cast<uint32_t>(b) << 16);
}

// float32 -> bfloat16 bits, round to nearest even; NaN stays a quiet NaN.
__device__ __forceinline__ uint16_t float_to_bf16(float f) {
  const uint32_t bits = __float_as_uint(f);
  const uint32_t rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
  const uint32_t nan = (bits >> 16) | 0x40u;
  const bool is_nan = (bits & 0x7fffffffu) > 0x7f800000u;
  return static_cast<uint16_t>(select_bits(is_nan, nan, rounded));
}

}  // namespace plexus::comm::device
