// reduce.cpp - the reduction kernels of reduce.h, one plain loop per (datatype, op).
//
// Vectorisation: each kernel is a simple indexed loop over `count` elements that GCC/Clang
// auto-vectorise at -O3 (integer wrap-around is written in unsigned arithmetic, half types use the
// branch-free conversions of half.h, min/max are selects). dst may alias a source exactly, so the
// compiler emits a runtime overlap check and takes the vector loop when buffers are distinct or
// identical. Integer division (PLX_AVG on ints) has no SIMD instruction and stays scalar.
//
// Alignment: malloc'ed buffers of 128 KiB and more (mmap'ed) start 16 bytes past a page, so a
// 64-byte vector loop on them splits every load and store across two cache lines. combine and
// scale therefore run the first few elements alone until dst is 64-byte aligned (buffers from
// one allocator then usually share the offset, and the sources line up as well). Measured on an
// AMD EPYC (AVX-512 clone) with such buffers, float32 sum, GB/s of buffer: reduce_into on 16 MiB
// went from 17-24 (about 60% of memcpy's 26-38 on that VM) to memcpy's rate, and on 256 KiB (in
// cache) from 76 to 115 (memcpy 116).
//
// Runtime dispatch: on x86-64 with GCC or Clang, each per-datatype entry carries
// __attribute__((target_clones("avx512f", "avx2", "default"))): the compiler builds the loop
// three times and an ifunc resolver picks, once at load time, the widest set this CPU supports
// (AVX-512F, else AVX2, else the portable SSE2 baseline). Elsewhere (and under TSan, or with
// -DPLEXUS_NO_TARGET_CLONES) the portable loop alone is built. reduce_isa() reports the choice.
// The op is switched once per call, outside the loop; scale_by's scalar is read once, before it.
#include "comm/reduce/reduce.h"

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "comm/reduce/half.h"
#include "topology/target_clones.h"
#define PLX_INLINE inline __attribute__((always_inline))

namespace plexus::comm {
namespace {

// Integers: +, * in the unsigned type of the same width (wraps, never UB); the cast back to the
// signed type is modular in C++20.
template <class T>
PLX_INLINE T add(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
  } else {
    return a + b;
  }
}
template <class T>
PLX_INLINE T mul(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    // 8-bit operands promote to int: 255 * 255 fits, the cast back wraps.
    return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
  } else {
    return a * b;
  }
}

struct Sum {
  template <class T>
  static PLX_INLINE T apply(T a, T b) {
    return add(a, b);
  }
};
struct Prod {
  template <class T>
  static PLX_INLINE T apply(T a, T b) {
    return mul(a, b);
  }
};
// Min and max propagate NaN, as IEEE 754-2019's minimum/maximum and PyTorch's torch.min/max
// do: a NaN operand makes the result NaN whatever the order the ranks are combined in (a bare
// `b < a ? b : a` would keep or drop it depending on which side it came from).
template <class T>
PLX_INLINE bool is_nan(T x) {
  if constexpr (std::is_floating_point_v<T>) {
    return x != x;
  } else {
    return false;
  }
}
struct Min {
  template <class T>
  static PLX_INLINE T apply(T a, T b) {
    return b < a || is_nan(b) ? b : a;
  }
};
struct Max {
  template <class T>
  static PLX_INLINE T apply(T a, T b) {
    return a < b || is_nan(b) ? b : a;
  }
};

// How a stored element widens to the type the op computes in, and narrows back.
template <class T>
struct Native {
  using Stored = T;
  static PLX_INLINE T widen(T x) { return x; }
  static PLX_INLINE T narrow(T x) { return x; }
};
struct Float16 {
  using Stored = uint16_t;
  static PLX_INLINE float widen(uint16_t x) { return half_to_float(x); }
  static PLX_INLINE uint16_t narrow(float x) { return float_to_half(x); }
};
struct BFloat16 {
  using Stored = uint16_t;
  static PLX_INLINE float widen(uint16_t x) { return bf16_to_float(x); }
  static PLX_INLINE uint16_t narrow(float x) { return float_to_bf16(x); }
};

// Elements before dst reaches a 64-byte boundary (at most count). The loops run these first, so
// that the vector loop stores whole cache lines (see the file comment).
template <class S>
PLX_INLINE size_t head_to_line(const S* dst, size_t count) {
  const size_t head = (64 - reinterpret_cast<uintptr_t>(dst) % 64) % 64 / sizeof(S);
  return head < count ? head : count;
}

template <class Conv, class Op>
PLX_INLINE void combine_span(typename Conv::Stored* dst, const typename Conv::Stored* a,
                             const typename Conv::Stored* b, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    dst[i] = Conv::narrow(Op::apply(Conv::widen(a[i]), Conv::widen(b[i])));
  }
}

template <class Conv, class Op>
PLX_INLINE void combine_loop(typename Conv::Stored* dst, const typename Conv::Stored* a,
                             const typename Conv::Stored* b, size_t count) {
  const size_t head = head_to_line(dst, count);
  combine_span<Conv, Op>(dst, a, b, head);
  combine_span<Conv, Op>(dst + head, a + head, b + head, count - head);
}

template <class Conv>
PLX_INLINE void combine(void* dst, const void* a, const void* b, size_t count, plx_red_op_t op) {
  using S = typename Conv::Stored;
  auto* d = static_cast<S*>(dst);
  const auto* x = static_cast<const S*>(a);
  const auto* y = static_cast<const S*>(b);
  switch (op) {
    case PLX_SUM:
    case PLX_AVG: return combine_loop<Conv, Sum>(d, x, y, count);
    case PLX_PROD: return combine_loop<Conv, Prod>(d, x, y, count);
    case PLX_MIN: return combine_loop<Conv, Min>(d, x, y, count);
    case PLX_MAX: return combine_loop<Conv, Max>(d, x, y, count);
    default: return;  // validated by the caller
  }
}

// Integers divide in 64 bits (the divisor may not fit in T) and truncate toward zero.
template <class Conv>
PLX_INLINE void divide(void* buf, size_t count, size_t divisor) {
  using S = typename Conv::Stored;
  auto* p = static_cast<S*>(buf);
  if constexpr (std::is_integral_v<decltype(Conv::widen(S{}))>) {
    using W = std::conditional_t<std::is_signed_v<S>, int64_t, uint64_t>;
    const W d = static_cast<W>(divisor);
    for (size_t i = 0; i < count; ++i) p[i] = static_cast<S>(static_cast<W>(p[i]) / d);
  } else {
    using F = decltype(Conv::widen(S{}));
    const F d = static_cast<F>(divisor);
    for (size_t i = 0; i < count; ++i) p[i] = Conv::narrow(Conv::widen(p[i]) / d);
  }
}

template <class Conv, class F>
PLX_INLINE void scale_span(typename Conv::Stored* dst, const typename Conv::Stored* src,
                           size_t count, F factor) {
  for (size_t i = 0; i < count; ++i) dst[i] = Conv::narrow(mul(Conv::widen(src[i]), factor));
}

// dst[i] = src[i] * scalar, computed like Prod (integers wrap, half types in float32).
template <class Conv>
PLX_INLINE void scale(void* dst, const void* src, size_t count, const void* scalar) {
  using S = typename Conv::Stored;
  auto* d = static_cast<S*>(dst);
  const auto* x = static_cast<const S*>(src);
  S stored;
  std::memcpy(&stored, scalar, sizeof(S));
  const auto factor = Conv::widen(stored);
  const size_t head = head_to_line(d, count);
  scale_span<Conv>(d, x, head, factor);
  scale_span<Conv>(d + head, x + head, count - head, factor);
}

// One dispatched entry per datatype: the clones are made here, the op switch and loops inline.
#define PLX_KERNELS(suffix, Conv)                                                                \
  PLX_TARGET_CLONES void combine_##suffix(void* dst, const void* a, const void* b, size_t count, \
                                          plx_red_op_t op) {                                     \
    combine<Conv>(dst, a, b, count, op);                                                         \
  }                                                                                              \
  PLX_TARGET_CLONES void divide_##suffix(void* buf, size_t count, size_t divisor) {              \
    divide<Conv>(buf, count, divisor);                                                           \
  }                                                                                              \
  PLX_TARGET_CLONES void scale_##suffix(void* dst, const void* src, size_t count,                \
                                        const void* scalar) {                                    \
    scale<Conv>(dst, src, count, scalar);                                                        \
  }

PLX_KERNELS(i8, Native<int8_t>)
PLX_KERNELS(u8, Native<uint8_t>)
PLX_KERNELS(i32, Native<int32_t>)
PLX_KERNELS(u32, Native<uint32_t>)
PLX_KERNELS(i64, Native<int64_t>)
PLX_KERNELS(u64, Native<uint64_t>)
PLX_KERNELS(f16, Float16)
PLX_KERNELS(bf16, BFloat16)
PLX_KERNELS(f32, Native<float>)
PLX_KERNELS(f64, Native<double>)
#undef PLX_KERNELS

}  // namespace

void reduce_copy(void* dst, const void* a, const void* b, size_t count, plx_datatype_t datatype,
                 plx_red_op_t op) {
  if (count == 0) return;
  switch (datatype) {
    case PLX_INT8: return combine_i8(dst, a, b, count, op);
    case PLX_UINT8: return combine_u8(dst, a, b, count, op);
    case PLX_INT32: return combine_i32(dst, a, b, count, op);
    case PLX_UINT32: return combine_u32(dst, a, b, count, op);
    case PLX_INT64: return combine_i64(dst, a, b, count, op);
    case PLX_UINT64: return combine_u64(dst, a, b, count, op);
    case PLX_FLOAT16: return combine_f16(dst, a, b, count, op);
    case PLX_BFLOAT16: return combine_bf16(dst, a, b, count, op);
    case PLX_FLOAT32: return combine_f32(dst, a, b, count, op);
    case PLX_FLOAT64: return combine_f64(dst, a, b, count, op);
    default: return;  // validated by the caller
  }
}

void reduce_into(void* dst, const void* src, size_t count, plx_datatype_t datatype,
                 plx_red_op_t op) {
  reduce_copy(dst, dst, src, count, datatype, op);
}

void divide_by(void* buf, size_t count, plx_datatype_t datatype, size_t divisor) {
  if (count == 0 || divisor <= 1) return;  // x / 1 == x for every type
  switch (datatype) {
    case PLX_INT8: return divide_i8(buf, count, divisor);
    case PLX_UINT8: return divide_u8(buf, count, divisor);
    case PLX_INT32: return divide_i32(buf, count, divisor);
    case PLX_UINT32: return divide_u32(buf, count, divisor);
    case PLX_INT64: return divide_i64(buf, count, divisor);
    case PLX_UINT64: return divide_u64(buf, count, divisor);
    case PLX_FLOAT16: return divide_f16(buf, count, divisor);
    case PLX_BFLOAT16: return divide_bf16(buf, count, divisor);
    case PLX_FLOAT32: return divide_f32(buf, count, divisor);
    case PLX_FLOAT64: return divide_f64(buf, count, divisor);
    default: return;
  }
}

void scale_by(void* dst, const void* src, size_t count, plx_datatype_t datatype,
              const void* scalar) {
  if (count == 0) return;
  switch (datatype) {
    case PLX_INT8: return scale_i8(dst, src, count, scalar);
    case PLX_UINT8: return scale_u8(dst, src, count, scalar);
    case PLX_INT32: return scale_i32(dst, src, count, scalar);
    case PLX_UINT32: return scale_u32(dst, src, count, scalar);
    case PLX_INT64: return scale_i64(dst, src, count, scalar);
    case PLX_UINT64: return scale_u64(dst, src, count, scalar);
    case PLX_FLOAT16: return scale_f16(dst, src, count, scalar);
    case PLX_BFLOAT16: return scale_bf16(dst, src, count, scalar);
    case PLX_FLOAT32: return scale_f32(dst, src, count, scalar);
    case PLX_FLOAT64: return scale_f64(dst, src, count, scalar);
    default: return;
  }
}

const char* reduce_isa() {
#if PLX_HAVE_TARGET_CLONES
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return "avx512f";
  if (__builtin_cpu_supports("avx2")) return "avx2";
#endif
  return "default";
}

}  // namespace plexus::comm
