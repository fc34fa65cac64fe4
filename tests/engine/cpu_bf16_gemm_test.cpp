// cpu_bf16_gemm_test.cpp - sgemm_bf16 (engine/device/cpu_bf16_gemm.h) against a reference
// computed in double from the bf16-rounded inputs, for the four transpose forms, edge sizes,
// padded strides, alpha and beta; and a check that the inputs really are rounded.
// Skips (saying why) on a processor without AVX512-BF16.
#include "engine/device/cpu_bf16_gemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace plexus::engine {
namespace {

#define REQUIRE_BF16()                                                                      \
  if (!cpu_bf16_gemm_supported())                                                           \
  GTEST_SKIP() << "this processor (or build) has no AVX512-BF16: sgemm_bf16 would run its " \
                  "scalar reference"

// fp32 -> nearest-even bf16, back in fp32 (the test's inputs are normal numbers).
float bf16(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  u += 0x7fffu + ((u >> 16) & 1u);
  u &= 0xffff0000u;
  std::memcpy(&x, &u, sizeof x);
  return x;
}

struct Case {
  bool ta, tb;
  int M, N, K;
  int pad_a, pad_b, pad_c;  // extra floats per row beyond the minimum stride
  float alpha, beta;
};

std::string name(const Case& c) {
  return std::string(c.ta ? "T" : "N") + (c.tb ? "T" : "N") + " M=" + std::to_string(c.M) +
         " N=" + std::to_string(c.N) + " K=" + std::to_string(c.K) +
         " pads=" + std::to_string(c.pad_a) + "," + std::to_string(c.pad_b) + "," +
         std::to_string(c.pad_c) + " alpha=" + std::to_string(c.alpha) +
         " beta=" + std::to_string(c.beta);
}

void check(const Case& c, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  const int a_rows = c.ta ? c.K : c.M, a_cols = c.ta ? c.M : c.K;
  const int b_rows = c.tb ? c.N : c.K, b_cols = c.tb ? c.K : c.N;
  const int lda = a_cols + c.pad_a, ldb = b_cols + c.pad_b, ldc = c.N + c.pad_c;
  std::vector<float> A(static_cast<size_t>(a_rows) * lda + 1),
      B(static_cast<size_t>(b_rows) * ldb + 1);
  for (float& x : A) x = dist(rng);
  for (float& x : B) x = dist(rng);
  std::vector<float> C(static_cast<size_t>(c.M) * ldc + 1);
  for (float& x : C) x = c.beta == 0.0f ? std::numeric_limits<float>::quiet_NaN() : dist(rng);
  const std::vector<float> C0 = C;
  sgemm_bf16(c.ta, c.tb, c.M, c.N, c.K, c.alpha, A.data(), lda, B.data(), ldb, c.beta, C.data(),
             ldc);
  for (int i = 0; i < c.M; ++i) {
    for (int j = 0; j < c.N; ++j) {
      double sum = 0.0, mag = 0.0;
      for (int k = 0; k < c.K; ++k) {
        const float a =
            c.ta ? A[static_cast<size_t>(k) * lda + i] : A[static_cast<size_t>(i) * lda + k];
        const float b =
            c.tb ? B[static_cast<size_t>(j) * ldb + k] : B[static_cast<size_t>(k) * ldb + j];
        const double p = static_cast<double>(bf16(a)) * bf16(b);
        sum += p;
        mag += std::fabs(p);
      }
      const size_t at = static_cast<size_t>(i) * ldc + j;
      const double c_in = c.beta == 0.0f ? 0.0 : static_cast<double>(C0[at]);
      const double want = c.alpha * sum + c.beta * c_in;
      const double tol = 1e-5 * (std::fabs(c.alpha) * mag + std::fabs(c.beta * c_in)) + 1e-6;
      ASSERT_NEAR(C[at], want, tol) << name(c) << " at (" << i << "," << j << ")";
    }
    // the padding after each row of C is never written
    for (int j = c.N; j < ldc; ++j) {
      const size_t at = static_cast<size_t>(i) * ldc + j;
      ASSERT_TRUE(std::memcmp(&C[at], &C0[at], sizeof(float)) == 0) << name(c) << " pad " << j;
    }
  }
}

TEST(CpuBf16Gemm, AllTransposeFormsAndEdgeSizes) {
  REQUIRE_BF16();
  const int sizes[][3] = {{1, 1, 1},    {7, 33, 5},  {17, 31, 129}, {64, 512, 128}, {15, 16, 2},
                          {29, 65, 31}, {3, 1, 300}, {1, 40, 513},  {200, 48, 17},  {3, 1100, 9}};
  uint32_t seed = 1;
  for (const auto& s : sizes) {
    for (int form = 0; form < 4; ++form) {
      const bool ta = form & 1, tb = form & 2;
      check({ta, tb, s[0], s[1], s[2], 0, 0, 0, 1.0f, 0.0f}, seed++);
      check({ta, tb, s[0], s[1], s[2], 3, 5, 7, 0.5f, 1.0f}, seed++);
      check({ta, tb, s[0], s[1], s[2], 1, 0, 2, -2.0f, 0.25f}, seed++);
    }
  }
}

TEST(CpuBf16Gemm, EngineLinearLayerForms) {
  REQUIRE_BF16();
  const int rows = 96, C = 128, OC = 384;
  uint32_t seed = 100;
  check({false, true, rows, OC, C, 0, 0, 0, 1.0f, 0.0f}, seed++);   // out = inp W^T
  check({false, false, rows, C, OC, 0, 0, 0, 1.0f, 1.0f}, seed++);  // dinp += dout W
  check({true, false, OC, C, rows, 0, 0, 0, 1.0f, 1.0f}, seed++);   // dweight += dout^T inp
}

// Several threads at once, each with its own C (the packing buffers are per thread).
TEST(CpuBf16Gemm, ConcurrentCallsFromThreads) {
  REQUIRE_BF16();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t] {
      for (int r = 0; r < 3; ++r)
        check({(t & 1) != 0, (t & 2) != 0, 45 + t, 70, 300, 0, 0, 0, 1.0f, 0.0f},
              1000 + 10 * t + r);
    });
  }
  for (std::thread& th : threads) th.join();
}

TEST(CpuBf16Gemm, KZeroScalesC) {
  REQUIRE_BF16();
  std::vector<float> C(6, std::numeric_limits<float>::quiet_NaN());
  const float a = 1.0f, b = 1.0f;
  sgemm_bf16(false, false, 2, 3, 0, 1.0f, &a, 1, &b, 3, 0.0f, C.data(), 3);
  for (float x : C) EXPECT_EQ(x, 0.0f);
  for (float& x : C) x = 2.0f;
  sgemm_bf16(true, true, 2, 3, 0, 1.0f, &a, 2, &b, 1, 0.5f, C.data(), 3);
  for (float x : C) EXPECT_EQ(x, 1.0f);
}

// 1 + 2^-10 is 1 in bf16; 1 + 2^-8 lies halfway between 1 and 1 + 2^-7 and rounds to the even
// 1; 1 + 3 * 2^-8 lies halfway between 1 + 2^-7 and 1 + 2^-6 and rounds to the even 1 + 2^-6.
TEST(CpuBf16Gemm, InputsAreRoundedToNearestEven) {
  REQUIRE_BF16();
  const int K = 4;
  const float x = 1.0f + std::ldexp(1.0f, -10);
  std::vector<float> A(static_cast<size_t>(3) * K, x), B(K, x);
  for (int k = 0; k < K; ++k) {
    A[K + k] = 1.0f + std::ldexp(1.0f, -8);
    A[2 * K + k] = 1.0f + 3.0f * std::ldexp(1.0f, -8);
  }
  float C[3];
  sgemm_bf16(false, false, 3, 1, K, 1.0f, A.data(), K, B.data(), 1, 0.0f, C, 1);
  EXPECT_EQ(C[0], 4.0f);  // fp32 would give 4 * (1 + 2^-10)^2 = 4.0078...
  EXPECT_NE(C[0], K * x * x);
  EXPECT_EQ(C[1], 4.0f);
  EXPECT_EQ(C[2], 4.0f * (1.0f + std::ldexp(1.0f, -6)));
}

// The product of two bf16 is exact in fp32 and the sum is fp32, not bf16: 1 + 2^-7 squared
// (1 + 2^-6 + 2^-14) keeps its 2^-14, which a bf16 result would lose.
TEST(CpuBf16Gemm, AccumulatesInFp32) {
  REQUIRE_BF16();
  const float a = 1.0f + std::ldexp(1.0f, -7);
  float c = 0.0f;
  sgemm_bf16(false, true, 1, 1, 1, 1.0f, &a, 1, &a, 1, 0.0f, &c, 1);
  EXPECT_EQ(c, a * a);
}

}  // namespace
}  // namespace plexus::engine
