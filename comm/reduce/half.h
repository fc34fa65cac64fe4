// half.h - IEEE binary16 (float16) and bfloat16 <-> float32 conversion.
//
// Plexus reduces half types in float32 and rounds each result back once, to nearest with ties
// to even (RNE). NaN stays NaN (quiet, the top payload bits kept), +-Inf stays +-Inf, and
// binary16 subnormals convert exactly both ways; a float above the largest half rounds to Inf.
//
// The functions are branch-free integer/float code so that GCC vectorises the loops that call
// them (comm/reduce/reduce.cpp). Choices are bit-mask selects, not `?:`: under the default
// -ftrapping-math GCC sinks a float op into the branch of a `?:` and then will not vectorise.
// They rely on the default floating-point environment (round to nearest, no flush-to-zero),
// which Plexus never changes. Method: F. Giesen, "half_to_float_fast"
// and "float_to_half_fast3_rtne" (public domain, 2016): the binary16 exponent is re-biased with
// one float multiply, and subnormal results are rounded by the FPU itself with a magic add.
#pragma once

#include <bit>
#include <cstdint>

namespace plexus::comm {

// cond ? a : b, as a bit mask (see the file comment).
inline uint32_t select_bits(bool cond, uint32_t a, uint32_t b) {
  const uint32_t mask = 0u - static_cast<uint32_t>(cond);
  return (a & mask) | (b & ~mask);
}

// binary16 bits -> float32 (exact for every input).
inline float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t magnitude = h & 0x7fffu;
  // Shift exponent+mantissa into float position and multiply by 2^(127-15): normals and
  // subnormals come out exact (the product is a power-of-two scaling inside float range).
  float scaled = std::bit_cast<float>(magnitude << 13) * 0x1p112f;
  uint32_t bits = std::bit_cast<uint32_t>(scaled);
  // Exponent 31 (Inf/NaN): force the float exponent to 255 and keep the mantissa (payload).
  bits = select_bits(magnitude >= 0x7c00u, 0x7f800000u | (magnitude << 13), bits);
  return std::bit_cast<float>(bits | sign);
}

// float32 -> binary16 bits, round to nearest even; overflow gives Inf, NaN gives a quiet NaN.
inline uint16_t float_to_half(float f) {
  const uint32_t all = std::bit_cast<uint32_t>(f);
  const uint32_t sign = (all >> 16) & 0x8000u;
  const uint32_t mag = all & 0x7fffffffu;

  // Inf or NaN input, or finite magnitude >= 65520 (rounds up to 2^16): Inf; NaN stays quiet NaN.
  const uint32_t special =
      select_bits(mag > 0x7f800000u, 0x7e00u | ((mag >> 13) & 0x3ffu), 0x7c00u);

  // Result subnormal or zero (|f| < 2^-14): adding 0.5 (exponent 126) lines the ten half mantissa
  // bits up with the bottom of the float mantissa; the FPU rounds to nearest even for us.
  const float denorm_magic = std::bit_cast<float>(uint32_t{126} << 23);
  const uint32_t sub =
      std::bit_cast<uint32_t>(std::bit_cast<float>(mag) + denorm_magic) - (uint32_t{126} << 23);

  // Normal result: re-bias the exponent, add 0xfff plus the lowest kept bit (ties to even), and
  // drop the 13 low bits. A carry out of the mantissa bumps the exponent, as it should.
  const uint32_t odd = (mag >> 13) & 1u;
  const uint32_t normal = (mag + ((15u - 127u) << 23) + 0xfffu + odd) >> 13;

  uint32_t out = select_bits(mag < (113u << 23), sub, normal);
  out = select_bits(mag >= (143u << 23), special, out);  // 143 = 127 + 16: |f| >= 65536 or Inf/NaN
  // Between 65520 and 65536 the normal path carries into exponent 31 and gives 0x7c00 (Inf).
  return static_cast<uint16_t>(out | sign);
}

// bfloat16 bits -> float32 (exact: bfloat16 is the top half of a float32).
inline float bf16_to_float(uint16_t b) {
  return std::bit_cast<float>(static_cast<uint32_t>(b) << 16);
}

// float32 -> bfloat16 bits, round to nearest even; NaN stays a quiet NaN.
inline uint16_t float_to_bf16(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  const uint32_t rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
  const uint32_t nan = (bits >> 16) | 0x40u;  // quiet bit set, sign and payload top kept
  const bool is_nan = (bits & 0x7fffffffu) > 0x7f800000u;
  return static_cast<uint16_t>(select_bits(is_nan, nan, rounded));
}

}  // namespace plexus::comm
