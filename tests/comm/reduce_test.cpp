// reduce_test.cpp - unit tests of comm/reduce: half conversions and the reduction kernels.
//
// Half conversions are checked on hand-picked exact cases (ties to even, overflow, subnormals,
// NaN/Inf), exhaustively for every binary16/bfloat16 value, and on a stride through all float32
// bit patterns against an independent reference that rounds in double with std::nearbyint.
// The kernels (reduce_copy, reduce_into, scale_by) are checked for every datatype x op against a
// scalar reference, element by element.
#include "comm/reduce/reduce.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cfenv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "comm/reduce/half.h"

namespace plexus::comm {
namespace {

// ---- binary16 -------------------------------------------------------------------------------

// Independent reference: the exact value of a binary16 pattern.
double half_value(uint16_t h) {
  const int e = (h >> 10) & 0x1f;
  const int m = h & 0x3ff;
  const double sign = (h & 0x8000) ? -1.0 : 1.0;
  if (e == 0) return sign * std::ldexp(m, -24);
  if (e == 31) return m ? std::numeric_limits<double>::quiet_NaN() : sign * INFINITY;
  return sign * std::ldexp(1024 + m, e - 25);
}

// Independent reference: float -> binary16 RNE through double arithmetic.
uint16_t half_reference(float f) {
  const uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  const double a = std::fabs(static_cast<double>(f));
  if (std::isnan(f)) return 0x7e00;
  if (a >= 65520.0) return sign | 0x7c00;  // 65520 is the tie between 65504 and 2^16: even = Inf
  if (a < std::ldexp(1.0, -14)) {
    // subnormal: units of 2^-24, nearbyint rounds to nearest even (0x400 is the smallest normal)
    return sign | static_cast<uint16_t>(std::nearbyint(a * std::ldexp(1.0, 24)));
  }
  int e = 0;
  const double m = std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
  double q = std::nearbyint((m * 2 - 1) * 1024);
  int exponent = e - 1;
  if (q == 1024) {
    q = 0;
    ++exponent;
  }
  return sign | static_cast<uint16_t>(((exponent + 15) << 10) | static_cast<int>(q));
}

TEST(Half, ExactRoundingCases) {
  ASSERT_EQ(std::fegetround(), FE_TONEAREST);
  struct Case {
    float in;
    uint16_t out;
    const char* why;
  };
  const Case cases[] = {
      {1.0f, 0x3c00, "one"},
      {-2.0f, 0xc000, "minus two"},
      {0.0f, 0x0000, "zero"},
      {-0.0f, 0x8000, "negative zero keeps its sign"},
      {1.0f + 0x1p-11f, 0x3c00, "1 + 2^-11 is a tie: down to even 1.0"},
      {1.0f + 3 * 0x1p-11f, 0x3c02, "1 + 3*2^-11 is a tie: up to even 1 + 2^-9"},
      {1.0f + 0x1p-11f + 0x1p-20f, 0x3c01, "just above the tie rounds up"},
      {1.0f + 0x1p-11f - 0x1p-20f, 0x3c00, "just below the tie rounds down"},
      {65504.0f, 0x7bff, "largest finite half"},
      {65519.0f, 0x7bff, "below the overflow tie"},
      {65520.0f, 0x7c00, "the overflow tie goes to even: Inf"},
      {1e6f, 0x7c00, "overflow is Inf"},
      {-1e6f, 0xfc00, "negative overflow is -Inf"},
      {INFINITY, 0x7c00, "Inf"},
      {-INFINITY, 0xfc00, "-Inf"},
      {0x1p-14f, 0x0400, "smallest normal"},
      {0x1p-24f, 0x0001, "smallest subnormal"},
      {-0x1p-24f, 0x8001, "negative subnormal"},
      {1023 * 0x1p-24f, 0x03ff, "largest subnormal"},
      {0x1p-25f, 0x0000, "half the smallest subnormal is a tie: down to even 0"},
      {3 * 0x1p-25f, 0x0002, "1.5 subnormal units is a tie: up to even 2"},
      {0x1p-25f + 0x1p-40f, 0x0001, "above half a unit rounds up"},
      {0x1p-14f - 0x1p-25f, 0x0400, "tie between largest subnormal and smallest normal: even"},
      {0x1p-26f, 0x0000, "underflow to zero"},
      {1e-30f, 0x0000, "tiny normal float to zero"},
      {0x1p-149f, 0x0000, "float subnormal to zero"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(float_to_half(c.in), c.out) << c.why << " (input " << c.in << ")";
  }
}

TEST(Half, NanStaysNan) {
  const float nans[] = {std::numeric_limits<float>::quiet_NaN(),
                        -std::numeric_limits<float>::quiet_NaN(),
                        std::bit_cast<float>(0x7f800001u),  // signalling, payload in low bits
                        std::bit_cast<float>(0x7fbfe000u)};
  for (float f : nans) {
    const uint16_t h = float_to_half(f);
    EXPECT_EQ(h & 0x7c00, 0x7c00) << std::hex << std::bit_cast<uint32_t>(f);
    EXPECT_NE(h & 0x03ff, 0) << "NaN became Inf: " << std::hex << std::bit_cast<uint32_t>(f);
    EXPECT_TRUE(std::isnan(half_to_float(h)));
  }
  EXPECT_TRUE(std::isnan(half_to_float(0x7e00)));
  EXPECT_TRUE(std::isnan(half_to_float(0xfc01)));
  EXPECT_EQ(half_to_float(0x7c00), INFINITY);
  EXPECT_EQ(half_to_float(0xfc00), -INFINITY);
}

TEST(Half, EveryHalfWidensExactlyAndRoundTrips) {
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    const float f = half_to_float(static_cast<uint16_t>(h));
    const double want = half_value(static_cast<uint16_t>(h));
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(f)) << "half 0x" << std::hex << h;
      continue;
    }
    ASSERT_EQ(static_cast<double>(f), want) << "half 0x" << std::hex << h;
    ASSERT_EQ(std::signbit(f), (h & 0x8000) != 0) << "half 0x" << std::hex << h;
    ASSERT_EQ(float_to_half(f), h) << "round trip of half 0x" << std::hex << h;
  }
}

TEST(Half, FloatsNarrowLikeTheDoubleReference) {
  // A stride through every float bit pattern (both signs), plus the neighbourhood of each
  // half's midpoints where ties live.
  for (uint64_t bits = 0; bits <= 0xffffffffull; bits += 1021) {
    const float f = std::bit_cast<float>(static_cast<uint32_t>(bits));
    if (std::isnan(f)) continue;
    ASSERT_EQ(float_to_half(f), half_reference(f)) << "float 0x" << std::hex << bits << " = " << f;
  }
  for (uint32_t h = 0; h < 0x7bff; ++h) {
    const double mid = (half_value(static_cast<uint16_t>(h)) + half_value(h + 1)) / 2;
    const float m = static_cast<float>(mid);  // exact: the midpoint needs 12 significant bits
    for (float f : {m, std::nextafter(m, 0.0f), std::nextafter(m, INFINITY), -m}) {
      ASSERT_EQ(float_to_half(f), half_reference(f))
          << "near the midpoint above half 0x" << std::hex << h << ": " << f;
    }
  }
}

// ---- bfloat16 -------------------------------------------------------------------------------

TEST(BFloat16, ExactRoundingCases) {
  EXPECT_EQ(float_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(float_to_bf16(-0.0f), 0x8000);
  EXPECT_EQ(float_to_bf16(1.0f + 0x1p-8f), 0x3f80) << "tie: down to even";
  EXPECT_EQ(float_to_bf16(1.0f + 3 * 0x1p-8f), 0x3f82) << "tie: up to even";
  EXPECT_EQ(float_to_bf16(1.0f + 0x1p-8f + 0x1p-20f), 0x3f81) << "above the tie";
  EXPECT_EQ(float_to_bf16(std::numeric_limits<float>::max()), 0x7f80) << "overflow to Inf";
  EXPECT_EQ(float_to_bf16(INFINITY), 0x7f80);
  EXPECT_EQ(float_to_bf16(-INFINITY), 0xff80);
  EXPECT_EQ(float_to_bf16(0x1p-130f), 0x0008) << "float subnormal stays subnormal";
  EXPECT_EQ(float_to_bf16(std::bit_cast<float>(0x00008000u)), 0x0000) << "subnormal tie";
  EXPECT_EQ(float_to_bf16(std::bit_cast<float>(0x00018000u)), 0x0002) << "subnormal tie up";
  for (uint32_t nan : {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0x7fffffffu}) {
    const uint16_t b = float_to_bf16(std::bit_cast<float>(nan));
    EXPECT_TRUE(std::isnan(bf16_to_float(b))) << std::hex << nan << " -> " << b;
    EXPECT_EQ(b & 0x8000, (nan >> 16) & 0x8000) << "NaN keeps its sign";
  }
}

TEST(BFloat16, EveryValueRoundTrips) {
  for (uint32_t b = 0; b <= 0xffff; ++b) {
    const float f = bf16_to_float(static_cast<uint16_t>(b));
    ASSERT_EQ(std::bit_cast<uint32_t>(f), b << 16);
    if (!std::isnan(f)) {
      ASSERT_EQ(float_to_bf16(f), b) << std::hex << b;
    }
  }
}

// ---- kernels --------------------------------------------------------------------------------

struct Lcg {
  uint64_t state;
  uint64_t next() {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return state >> 11;
  }
};

// Per-datatype test traits: a generator of interesting values and the scalar reference op.
template <class T>
struct IntTraits {
  using Stored = T;
  static T make(Lcg& g) { return static_cast<T>(g.next()); }  // every bit pattern: wraps
  static T apply(T a, T b, plx_red_op_t op) {
    switch (op) {
      case PLX_SUM:
      case PLX_AVG: return static_cast<T>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
      case PLX_PROD: return static_cast<T>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
      case PLX_MIN: return a < b ? a : b;
      default: return a < b ? b : a;
    }
  }
};

template <class F>
struct FloatTraits {
  using Stored = F;
  static F make(Lcg& g) {
    return static_cast<F>(static_cast<int64_t>(g.next() % 20001) - 10000) / 64;
  }
  static F apply(F a, F b, plx_red_op_t op) {
    switch (op) {
      case PLX_SUM:
      case PLX_AVG: return a + b;
      case PLX_PROD: return a * b;
      case PLX_MIN: return a < b ? a : b;
      default: return a < b ? b : a;
    }
  }
};

template <float (*Widen)(uint16_t), uint16_t (*Narrow)(float), unsigned kExpMask>
struct HalfTraits {
  using Stored = uint16_t;
  static uint16_t make(Lcg& g) {
    uint16_t h = static_cast<uint16_t>(g.next());
    if ((h & kExpMask) == kExpMask) h = static_cast<uint16_t>(h & ~0x4000u);  // finite only
    return h;
  }
  static uint16_t apply(uint16_t a, uint16_t b, plx_red_op_t op) {
    return Narrow(FloatTraits<float>::apply(Widen(a), Widen(b), op));
  }
};
using F16Traits = HalfTraits<half_to_float, float_to_half, 0x7c00>;
using BF16Traits = HalfTraits<bf16_to_float, float_to_bf16, 0x7f80>;

template <class Traits>
void check_kernels(plx_datatype_t dt) {
  using T = typename Traits::Stored;
  ASSERT_EQ(datatype_bytes(dt), sizeof(T));
  for (int op = 0; op < PLX_NUM_OPS; ++op) {
    for (size_t count : {0, 1, 7, 33, 1000, 4099}) {
      Lcg g{static_cast<uint64_t>(dt * 131 + op * 7 + count)};
      std::vector<T> a(count + 1), b(count + 1), want(count + 1);
      for (size_t i = 0; i < count; ++i) {
        a[i] = Traits::make(g);
        b[i] = Traits::make(g);
        want[i] = Traits::apply(a[i], b[i], static_cast<plx_red_op_t>(op));
      }
      const T guard = Traits::make(g);  // one element past the end must stay untouched
      std::vector<T> copy(count + 1, guard), into = a, into_b = b;
      copy[count] = into[count] = into_b[count] = guard;
      reduce_copy(copy.data(), a.data(), b.data(), count, dt, static_cast<plx_red_op_t>(op));
      reduce_into(into.data(), b.data(), count, dt, static_cast<plx_red_op_t>(op));
      reduce_copy(into_b.data(), a.data(), into_b.data(), count, dt, static_cast<plx_red_op_t>(op));
      for (size_t i = 0; i <= count; ++i) {
        const T w = i < count ? want[i] : guard;
        const auto where = [&] {
          return "datatype " + std::to_string(dt) + " op " + std::to_string(op) + " count " +
                 std::to_string(count) + " index " + std::to_string(i);
        };
        ASSERT_EQ(std::memcmp(&copy[i], &w, sizeof(T)), 0) << "reduce_copy " << where();
        ASSERT_EQ(std::memcmp(&into[i], &w, sizeof(T)), 0) << "reduce_into " << where();
        ASSERT_EQ(std::memcmp(&into_b[i], &w, sizeof(T)), 0) << "reduce_copy dst==b " << where();
      }
    }
  }
}

TEST(Reduce, EveryDatatypeAndOpMatchesScalarReference) {
  std::printf("reduce kernels dispatch to: %s\n", reduce_isa());
  check_kernels<IntTraits<int8_t>>(PLX_INT8);
  check_kernels<IntTraits<uint8_t>>(PLX_UINT8);
  check_kernels<IntTraits<int32_t>>(PLX_INT32);
  check_kernels<IntTraits<uint32_t>>(PLX_UINT32);
  check_kernels<IntTraits<int64_t>>(PLX_INT64);
  check_kernels<IntTraits<uint64_t>>(PLX_UINT64);
  check_kernels<F16Traits>(PLX_FLOAT16);
  check_kernels<BF16Traits>(PLX_BFLOAT16);
  check_kernels<FloatTraits<float>>(PLX_FLOAT32);
  check_kernels<FloatTraits<double>>(PLX_FLOAT64);
}

// Min and max propagate NaN (plexus.h): a NaN on either side, at any position (the head before
// the cache-line boundary and the vector body alike), gives NaN, and elsewhere the ordinary
// minimum or maximum; reduce_into and reduce_copy alike, in every floating datatype.
template <class T>
void check_nan_min_max(plx_datatype_t dt, T nan, const std::function<T(float)>& from,
                       const std::function<float(T)>& to) {
  const size_t count = 257;
  for (plx_red_op_t op : {PLX_MIN, PLX_MAX}) {
    for (int nan_side = 0; nan_side < 3; ++nan_side) {  // in a, in b, in both
      std::vector<T> a(count), b(count), out(count);
      for (size_t i = 0; i < count; ++i) {
        a[i] = from(static_cast<float>(i % 7));
        b[i] = from(static_cast<float>((i * 5) % 11) - 3.0f);
        if (i % 10 == 3 && nan_side != 1) a[i] = nan;
        if (i % 10 == 3 && nan_side != 0) b[i] = nan;
      }
      std::vector<T> into = a;
      reduce_copy(out.data(), a.data(), b.data(), count, dt, op);
      reduce_into(into.data(), b.data(), count, dt, op);
      for (size_t i = 0; i < count; ++i) {
        const float x = to(a[i]), y = to(b[i]);
        for (const std::vector<T>* result : {&out, &into}) {
          const float got = to((*result)[i]);
          if (i % 10 == 3) {
            ASSERT_TRUE(std::isnan(got)) << "datatype " << dt << " op " << op << " NaN side "
                                         << nan_side << " index " << i << ": " << got;
          } else {
            ASSERT_EQ(got, op == PLX_MIN ? std::min(x, y) : std::max(x, y))
                << "datatype " << dt << " op " << op << " index " << i;
          }
        }
      }
    }
  }
}

TEST(Reduce, MinAndMaxPropagateNaN) {
  check_nan_min_max<float>(PLX_FLOAT32, std::numeric_limits<float>::quiet_NaN(),
                           [](float v) { return v; }, [](float v) { return v; });
  check_nan_min_max<double>(PLX_FLOAT64, std::numeric_limits<double>::quiet_NaN(),
                            [](float v) { return static_cast<double>(v); },
                            [](double v) { return static_cast<float>(v); });
  check_nan_min_max<uint16_t>(PLX_FLOAT16, 0x7e00, [](float v) { return float_to_half(v); },
                              [](uint16_t v) { return half_to_float(v); });
  check_nan_min_max<uint16_t>(PLX_BFLOAT16, 0x7fc0, [](float v) { return float_to_bf16(v); },
                              [](uint16_t v) { return bf16_to_float(v); });
}

// The kernels run the elements before dst's first 64-byte boundary on their own: every start
// offset of dst within a cache line, and sources at other offsets, give the reference values,
// with the elements around the range untouched.
template <class Traits>
void check_offsets(plx_datatype_t dt) {
  using T = typename Traits::Stored;
  const size_t count = 300, line = 64 / sizeof(T);
  Lcg g{static_cast<uint64_t>(dt + 1)};
  std::vector<T> a(count + 2 * line), b(count + 2 * line);
  for (T& x : a) x = Traits::make(g);
  for (T& x : b) x = Traits::make(g);
  const T scalar = Traits::make(g), guard = Traits::make(g);
  for (size_t off = 0; off < line; ++off) {
    const size_t a_off = (off * 3 + 1) % line, b_off = (off * 5 + 2) % line;
    for (int op = 0; op < PLX_NUM_OPS; ++op) {
      std::vector<T> out(count + 2 * line, guard), scaled(count + 2 * line, guard);
      reduce_copy(&out[off], &a[a_off], &b[b_off], count, dt, static_cast<plx_red_op_t>(op));
      scale_by(&scaled[off], &a[a_off], count, dt, &scalar);
      for (size_t i = 0; i < out.size(); ++i) {
        const bool inside = i >= off && i < off + count;
        const T want = inside ? Traits::apply(a[a_off + i - off], b[b_off + i - off],
                                              static_cast<plx_red_op_t>(op))
                              : guard;
        const T want_scaled = inside ? Traits::apply(a[a_off + i - off], scalar, PLX_PROD) : guard;
        ASSERT_EQ(std::memcmp(&out[i], &want, sizeof(T)), 0)
            << "reduce_copy datatype " << dt << " op " << op << " dst offset " << off << " index "
            << i;
        ASSERT_EQ(std::memcmp(&scaled[i], &want_scaled, sizeof(T)), 0)
            << "scale_by datatype " << dt << " dst offset " << off << " index " << i;
      }
    }
  }
}

TEST(Reduce, EveryDstOffsetWithinACacheLine) {
  check_offsets<IntTraits<int8_t>>(PLX_INT8);
  check_offsets<IntTraits<uint32_t>>(PLX_UINT32);
  check_offsets<IntTraits<int64_t>>(PLX_INT64);
  check_offsets<F16Traits>(PLX_FLOAT16);
  check_offsets<BF16Traits>(PLX_BFLOAT16);
  check_offsets<FloatTraits<float>>(PLX_FLOAT32);
  check_offsets<FloatTraits<double>>(PLX_FLOAT64);
}

TEST(Reduce, IntegersWrapAround) {
  int8_t a[] = {127, -128, 100, -1};
  const int8_t b[] = {1, -1, 100, -1};
  reduce_into(a, b, 4, PLX_INT8, PLX_SUM);
  EXPECT_EQ(a[0], -128);
  EXPECT_EQ(a[1], 127);
  EXPECT_EQ(a[2], -56);
  EXPECT_EQ(a[3], -2);
  int32_t c[] = {INT32_MAX, 65536};
  const int32_t d[] = {2, 65536};
  reduce_into(c, d, 2, PLX_INT32, PLX_PROD);
  EXPECT_EQ(c[0], -2);
  EXPECT_EQ(c[1], 0);
  uint64_t e[] = {UINT64_MAX};
  const uint64_t f[] = {2};
  reduce_into(e, f, 1, PLX_UINT64, PLX_SUM);
  EXPECT_EQ(e[0], 1u);
}

TEST(Reduce, HalfTypesRoundOncePerCall) {
  // 1 + 2^-11 is exact in float32; rounding it to binary16 is a tie that goes to even (1.0).
  uint16_t h[] = {float_to_half(1.0f), float_to_half(1.0f + 0x1p-10f), 0x7bff, 0x7c00, 0x7c00};
  const uint16_t g[] = {float_to_half(0x1p-11f), float_to_half(0x1p-11f), float_to_half(16.0f),
                        float_to_half(1.0f), 0xfc00};
  reduce_into(h, g, 5, PLX_FLOAT16, PLX_SUM);
  EXPECT_EQ(h[0], 0x3c00) << "1 + 2^-11 ties to even 1.0";
  EXPECT_EQ(h[1], 0x3c02) << "(1 + 2^-10) + 2^-11 ties to even 1 + 2^-9";
  EXPECT_EQ(h[2], 0x7c00) << "65504 + 16 = 65520 ties to even: Inf";
  EXPECT_EQ(h[3], 0x7c00) << "Inf + 1 = Inf";
  EXPECT_TRUE(std::isnan(half_to_float(h[4]))) << "Inf + -Inf = NaN";
  uint16_t s[] = {0x0001, 0x03ff};  // subnormals add exactly
  const uint16_t t[] = {0x0001, 0x0001};
  reduce_into(s, t, 2, PLX_FLOAT16, PLX_SUM);
  EXPECT_EQ(s[0], 0x0002);
  EXPECT_EQ(s[1], 0x0400) << "largest subnormal + smallest subnormal = smallest normal";
  uint16_t b[] = {float_to_bf16(1.0f), float_to_bf16(3.0f)};
  const uint16_t c[] = {float_to_bf16(0x1p-8f), float_to_bf16(0x1p-7f)};
  reduce_into(b, c, 2, PLX_BFLOAT16, PLX_SUM);
  EXPECT_EQ(b[0], 0x3f80) << "bf16 1 + 2^-8 ties to even 1.0";
  EXPECT_EQ(bf16_to_float(b[1]), 3.0f) << "bf16 3 + 2^-7 ties to even 3.0";
}

TEST(Reduce, DivideByTruncatesIntegersTowardZero) {
  int8_t i8[] = {-7, 7, -1, 1, -128, 127, 0};
  divide_by(i8, 7, PLX_INT8, 2);
  EXPECT_EQ(std::vector<int8_t>(i8, i8 + 7), (std::vector<int8_t>{-3, 3, 0, 0, -64, 63, 0}));
  int8_t big[] = {-128, 127};
  divide_by(big, 2, PLX_INT8, 200);  // divisor wider than the type
  EXPECT_EQ(big[0], 0);
  EXPECT_EQ(big[1], 0);
  uint8_t u8[] = {255, 3};
  divide_by(u8, 2, PLX_UINT8, 4);
  EXPECT_EQ(u8[0], 63);
  EXPECT_EQ(u8[1], 0);
  int32_t i32[] = {INT32_MIN, -20, 20};
  divide_by(i32, 3, PLX_INT32, 7);
  EXPECT_EQ(i32[0], INT32_MIN / 7);
  EXPECT_EQ(i32[1], -2);
  EXPECT_EQ(i32[2], 2);
  int64_t i64[] = {INT64_MIN, -5};
  divide_by(i64, 2, PLX_INT64, 3);
  EXPECT_EQ(i64[0], INT64_MIN / 3);
  EXPECT_EQ(i64[1], -1);
  uint32_t u32[] = {UINT32_MAX};
  divide_by(u32, 1, PLX_UINT32, 5);
  EXPECT_EQ(u32[0], UINT32_MAX / 5);
  uint64_t u64[] = {UINT64_MAX};
  divide_by(u64, 1, PLX_UINT64, 3);
  EXPECT_EQ(u64[0], UINT64_MAX / 3);
}

TEST(Reduce, DivideByFloats) {
  float f[] = {1.0f, -6.0f, 1e-45f};
  divide_by(f, 3, PLX_FLOAT32, 3);
  EXPECT_EQ(f[0], 1.0f / 3.0f);
  EXPECT_EQ(f[1], -2.0f);
  EXPECT_EQ(f[2], 1e-45f / 3.0f);
  double d[] = {1.0, 10.0};
  divide_by(d, 2, PLX_FLOAT64, 4);
  EXPECT_EQ(d[0], 0.25);
  EXPECT_EQ(d[1], 2.5);
  uint16_t h[] = {float_to_half(1.0f), float_to_half(6.0f)};
  divide_by(h, 2, PLX_FLOAT16, 3);
  EXPECT_EQ(h[0], float_to_half(1.0f / 3.0f));
  EXPECT_EQ(h[0], 0x3555) << "1/3 in binary16";
  EXPECT_EQ(half_to_float(h[1]), 2.0f);
  uint16_t b[] = {float_to_bf16(1.0f)};
  divide_by(b, 1, PLX_BFLOAT16, 3);
  EXPECT_EQ(b[0], 0x3eab) << "1/3 in bfloat16";
  float one[] = {5.0f};
  divide_by(one, 1, PLX_FLOAT32, 1);
  EXPECT_EQ(one[0], 5.0f);
}

// scale_by against the Prod reference with the scalar broadcast: every datatype, random values
// (every bit pattern for integers, so products wrap), out of place and in place (dst == src),
// with one guard element past the end.
template <class Traits>
void check_scale(plx_datatype_t dt) {
  using T = typename Traits::Stored;
  for (size_t count : {0, 1, 7, 33, 1000, 4099}) {
    Lcg g{static_cast<uint64_t>(dt * 977 + count)};
    const T scalar = Traits::make(g);
    std::vector<T> src(count + 1), want(count + 1);
    for (size_t i = 0; i < count; ++i) {
      src[i] = Traits::make(g);
      want[i] = Traits::apply(src[i], scalar, PLX_PROD);
    }
    const T guard = Traits::make(g);
    src[count] = want[count] = guard;
    const std::vector<T> original = src;
    std::vector<T> out(count + 1, guard), in_place = src;
    scale_by(out.data(), src.data(), count, dt, &scalar);
    scale_by(in_place.data(), in_place.data(), count, dt, &scalar);
    ASSERT_EQ(std::memcmp(src.data(), original.data(), src.size() * sizeof(T)), 0)
        << "datatype " << dt << ": scale_by modified src";
    for (size_t i = 0; i <= count; ++i) {
      const auto where = [&] {
        return "datatype " + std::to_string(dt) + " count " + std::to_string(count) + " index " +
               std::to_string(i);
      };
      ASSERT_EQ(std::memcmp(&out[i], &want[i], sizeof(T)), 0) << "out of place " << where();
      ASSERT_EQ(std::memcmp(&in_place[i], &want[i], sizeof(T)), 0) << "in place " << where();
    }
  }
}

TEST(ScaleBy, EveryDatatypeMatchesScalarReference) {
  check_scale<IntTraits<int8_t>>(PLX_INT8);
  check_scale<IntTraits<uint8_t>>(PLX_UINT8);
  check_scale<IntTraits<int32_t>>(PLX_INT32);
  check_scale<IntTraits<uint32_t>>(PLX_UINT32);
  check_scale<IntTraits<int64_t>>(PLX_INT64);
  check_scale<IntTraits<uint64_t>>(PLX_UINT64);
  check_scale<F16Traits>(PLX_FLOAT16);
  check_scale<BF16Traits>(PLX_BFLOAT16);
  check_scale<FloatTraits<float>>(PLX_FLOAT32);
  check_scale<FloatTraits<double>>(PLX_FLOAT64);
}

TEST(ScaleBy, IntegersWrapAround) {
  int8_t i8[] = {100, -128, 3};
  const int8_t three = 3;
  scale_by(i8, i8, 3, PLX_INT8, &three);
  EXPECT_EQ(std::vector<int8_t>(i8, i8 + 3), (std::vector<int8_t>{44, -128, 9}));
  const uint8_t u8[] = {200, 255};
  uint8_t u8_out[2] = {};
  const uint8_t two = 2;
  scale_by(u8_out, u8, 2, PLX_UINT8, &two);
  EXPECT_EQ(u8_out[0], 144);
  EXPECT_EQ(u8_out[1], 254);
  int32_t i32[] = {INT32_MAX, INT32_MIN};
  const int32_t minus_one = -1;
  scale_by(i32, i32, 2, PLX_INT32, &minus_one);
  EXPECT_EQ(i32[0], -INT32_MAX);
  EXPECT_EQ(i32[1], INT32_MIN) << "-INT32_MIN wraps to itself";
  int64_t i64[] = {INT64_MAX};
  const int64_t two64 = 2;
  scale_by(i64, i64, 1, PLX_INT64, &two64);
  EXPECT_EQ(i64[0], -2);
  uint64_t u64[] = {UINT64_MAX};
  const uint64_t max64 = UINT64_MAX;
  scale_by(u64, u64, 1, PLX_UINT64, &max64);
  EXPECT_EQ(u64[0], 1u) << "(2^64 - 1)^2 = 1 mod 2^64";
}

TEST(ScaleBy, HalfTypesMultiplyInFloatAndRoundOnce) {
  // (1 + 2^-10)(1 - 2^-11) = 1 + 2^-11 - 2^-21: just below the tie, so 1.0. The product of two
  // binary16 values is exact in float32, so rounding once gives the correctly rounded product.
  const uint16_t h[] = {0x3c01, 0x7bff, float_to_half(3.0f), 0x0001, 0x7c00};
  uint16_t out[5] = {};
  const uint16_t factor = 0x3bff;  // 1 - 2^-11
  scale_by(out, h, 5, PLX_FLOAT16, &factor);
  EXPECT_EQ(out[0], 0x3c00) << "(1 + 2^-10)(1 - 2^-11) rounds to 1.0";
  EXPECT_EQ(out[1], 0x7bfe) << "65504 (1 - 2^-11) = 65472.02 rounds to 65472";
  EXPECT_EQ(out[2], float_to_half(3.0f * (1.0f - 0x1p-11f)));
  EXPECT_EQ(out[3], 0x0001) << "smallest subnormal times ~1 stays";
  EXPECT_EQ(out[4], 0x7c00) << "Inf stays Inf";
  const uint16_t two = float_to_half(2.0f);
  uint16_t big[] = {0x7bff};
  scale_by(big, big, 1, PLX_FLOAT16, &two);
  EXPECT_EQ(big[0], 0x7c00) << "65504 * 2 overflows to Inf";
  // bfloat16: (1 + 2^-7)(1 + 2^-7) = 1 + 2^-6 + 2^-14 rounds to 1 + 2^-6 (0x3f82).
  uint16_t b[] = {0x3f81};
  const uint16_t bf = 0x3f81;
  scale_by(b, b, 1, PLX_BFLOAT16, &bf);
  EXPECT_EQ(b[0], 0x3f82);
  float f[] = {3.0f, -0.5f};
  const float quarter = 0.25f;
  scale_by(f, f, 2, PLX_FLOAT32, &quarter);
  EXPECT_EQ(f[0], 0.75f);
  EXPECT_EQ(f[1], -0.125f);
  double d[] = {1.0 / 3.0};
  const double three = 3.0;
  scale_by(d, d, 1, PLX_FLOAT64, &three);
  EXPECT_EQ(d[0], (1.0 / 3.0) * 3.0);
}

TEST(Reduce, DatatypeBytes) {
  const size_t want[PLX_NUM_DATATYPES] = {1, 1, 4, 4, 8, 8, 2, 2, 4, 8};
  for (int dt = 0; dt < PLX_NUM_DATATYPES; ++dt) {
    EXPECT_EQ(datatype_bytes(static_cast<plx_datatype_t>(dt)), want[dt]) << dt;
  }
  EXPECT_EQ(datatype_bytes(static_cast<plx_datatype_t>(PLX_NUM_DATATYPES)), 0u);
}

}  // namespace
}  // namespace plexus::comm
