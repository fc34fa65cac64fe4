// element_ops.cuh - what device_reduce.cu does to one element: the arithmetic of
// comm/reduce/reduce.cpp written for the device, and the three element maps its kernel applies
// (Reducer for the reduce ops, Divider for PLX_AVG's division, Scaler for a pre-multiplied sum).
//
// Each map has combine(acc, x), applied for every source after the first, and finish(acc),
// applied once before the store. Integers wrap in their unsigned type; float arithmetic uses the
// correctly rounded, never-fused intrinsics (__fadd_rn, __fmul_rn, __fdiv_rn and their double
// forms); half types go through device_half.cuh, except float16 SUM/PROD (see below). Included
// only by device_reduce.cu (one translation unit), inside its anonymous namespace.
#pragma once

#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "comm/device/device_half.cuh"

namespace plexus::comm::device {
namespace {

// ---- arithmetic, as in comm/reduce/reduce.cpp --------------------------------------------------

template <class T>
__device__ __forceinline__ T add(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
}
__device__ __forceinline__ float add(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double add(double a, double b) { return __dadd_rn(a, b); }

template <class T>
__device__ __forceinline__ T mul(T a, T b) {
  using U = std::make_unsigned_t<T>;
  // 8-bit operands promote to int: 255 * 255 fits, the cast back wraps.
  return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
}
__device__ __forceinline__ float mul(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double mul(double a, double b) { return __dmul_rn(a, b); }

__device__ __forceinline__ float div(float a, float b) { return __fdiv_rn(a, b); }
__device__ __forceinline__ double div(double a, double b) { return __ddiv_rn(a, b); }

struct Sum {
  template <class W>
  __device__ static W apply(W a, W b) { return add(a, b); }
};
struct Prod {
  template <class W>
  __device__ static W apply(W a, W b) { return mul(a, b); }
};
// Min and max propagate NaN, as the host kernel does (comm/reduce/reduce.cpp): a NaN operand
// makes the result NaN whichever side it is on.
template <class W>
__device__ __forceinline__ bool is_nan(W x) {
  if constexpr (std::is_floating_point_v<W>) {
    return x != x;
  } else {
    return false;
  }
}
struct Min {
  template <class W>
  __device__ static W apply(W a, W b) { return b < a || is_nan(b) ? b : a; }
};
struct Max {
  template <class W>
  __device__ static W apply(W a, W b) { return a < b || is_nan(b) ? b : a; }
};

// How a stored element widens to the type the op computes in, and narrows back.
template <class T>
struct Native {
  using Stored = T;
  using Wide = T;
  __device__ static T widen(T x) { return x; }
  __device__ static T narrow(T x) { return x; }
};
struct Float16 {
  using Stored = uint16_t;
  using Wide = float;
  __device__ static float widen(uint16_t x) { return half_to_float(x); }
  __device__ static uint16_t narrow(float x) { return float_to_half(x); }
};
struct BFloat16 {
  using Stored = uint16_t;
  using Wide = float;
  __device__ static float widen(uint16_t x) { return bf16_to_float(x); }
  __device__ static uint16_t narrow(float x) { return float_to_bf16(x); }
};

// ---- the element maps: acc = s0; acc = combine(acc, s) for each further source; finish(acc) ----

template <class Conv, class Op>
struct Reducer {
  using S = typename Conv::Stored;
  __device__ S combine(S acc, S x) const {
    return Conv::narrow(Op::apply(Conv::widen(acc), Conv::widen(x)));
  }
  __device__ S finish(S acc) const { return acc; }
};

// float16 SUM and PROD in native half arithmetic (add.rn.f16 / mul.rn.f16, subnormals kept): they
// round the exact result once to binary16. The CPU rounds it to float32 first, then to binary16;
// since float32 has 24 >= 2 x 11 + 2 significand bits, that double rounding is innocuous
// (S. A. Figueroa, "When is double rounding innocuous?", ACM SIGNUM Newsletter 30(3), 1995): the
// values are the same, and only a NaN's payload can differ. The software conversions would cost
// about 40 integer operations per element, more than an H100/H200 can issue at full memory
// bandwidth. MIN/MAX and divide keep the conversions (a divisor need not be a binary16 value).
__device__ __forceinline__ uint16_t half_add(uint16_t a, uint16_t b) {
  return __half_as_ushort(__hadd_rn(__ushort_as_half(a), __ushort_as_half(b)));
}
__device__ __forceinline__ uint16_t half_mul(uint16_t a, uint16_t b) {
  return __half_as_ushort(__hmul_rn(__ushort_as_half(a), __ushort_as_half(b)));
}
template <>
struct Reducer<Float16, Sum> {
  __device__ uint16_t combine(uint16_t acc, uint16_t x) const { return half_add(acc, x); }
  __device__ uint16_t finish(uint16_t acc) const { return acc; }
};
template <>
struct Reducer<Float16, Prod> {
  __device__ uint16_t combine(uint16_t acc, uint16_t x) const { return half_mul(acc, x); }
  __device__ uint16_t finish(uint16_t acc) const { return acc; }
};

// Integers divide in 64 bits (the divisor may not fit in the type) and truncate toward zero;
// floats in their own precision. `divisor` is converted on the host exactly as the CPU does.
template <class Conv>
struct Divider {
  using S = typename Conv::Stored;
  using Wide = typename Conv::Wide;
  using Quotient = std::conditional_t<std::is_integral_v<Wide>,
                                      std::conditional_t<std::is_signed_v<Wide>, int64_t, uint64_t>,
                                      Wide>;
  Quotient divisor;
  __device__ S combine(S acc, S) const { return acc; }  // one source only
  __device__ S finish(S x) const {
    if constexpr (std::is_integral_v<Wide>) {
      return static_cast<S>(static_cast<Quotient>(x) / divisor);
    } else {
      return Conv::narrow(div(Conv::widen(x), divisor));
    }
  }
};

// The scalar is kept stored and widened on the device (widening is exact, so this equals the
// CPU's widen-once).
template <class Conv>
struct Scaler {
  using S = typename Conv::Stored;
  S scalar;
  __device__ S combine(S acc, S) const { return acc; }  // one source only
  __device__ S finish(S x) const {
    return Conv::narrow(mul(Conv::widen(x), Conv::widen(scalar)));
  }
};
template <>
struct Scaler<Float16> {  // native multiply, as Reducer<Float16, Prod>
  uint16_t scalar;
  __device__ uint16_t combine(uint16_t acc, uint16_t) const { return acc; }
  __device__ uint16_t finish(uint16_t x) const { return half_mul(x, scalar); }
};

}  // namespace
}  // namespace plexus::comm::device
