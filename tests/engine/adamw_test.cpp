// adamw_test.cpp - AdamW against closed forms and a double-precision PyTorch-form reference;
// global gradient-norm clipping against hand-computed norms.
#include "engine/optim/adamw.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "engine/optim/grad_clip.h"

namespace plexus::engine {
namespace {

AdamWConfig config(float lr, float wd) {
  AdamWConfig c;
  c.lr = lr;
  c.weight_decay = wd;
  return c;  // beta1 0.9, beta2 0.95, eps 1e-8
}

// First step from m = v = 0: m_hat = g and v_hat = g^2, so p1 = p0 - lr * g / (|g| + eps).
TEST(AdamW, FirstStepIsSignedLrWithoutDecay) {
  const AdamWConfig c = config(0.01f, 0.0f);
  std::vector<float> p = {1.0f, -2.0f, 0.5f, 3.0f}, g = {0.3f, -4.0f, 0.0f, 1e-3f};
  std::vector<float> m(4, 0.0f), v(4, 0.0f);
  const std::vector<float> p0 = p;
  adamw_step(p.data(), g.data(), m.data(), v.data(), 4, 1, c, nullptr);
  for (int i = 0; i < 4; ++i) {
    const double want = p0[i] - 0.01 * g[i] / (std::fabs(g[i]) + 1e-8);
    EXPECT_NEAR(p[i], want, 1e-6) << i;
    // relative 1e-6: 1 - 0.95f is 0.05 only to float precision (4e-7 relative)
    EXPECT_NEAR(m[i], 0.1 * g[i], 1e-6 * std::fabs(0.1 * g[i])) << i;
    EXPECT_NEAR(v[i], 0.05 * g[i] * g[i], 1e-6 * 0.05 * g[i] * g[i]) << i;
  }
  EXPECT_EQ(p[2], 0.5f);  // zero gradient, no decay: untouched
}

TEST(AdamW, FirstStepDecaysOnlyMaskedElements) {
  const AdamWConfig c = config(0.01f, 0.1f);
  std::vector<float> p = {1.0f, -2.0f, 0.5f, 3.0f}, g = {0.3f, -4.0f, 0.0f, 2.0f};
  std::vector<float> m(4, 0.0f), v(4, 0.0f);
  const std::vector<uint8_t> mask = {1, 0, 1, 0};
  const std::vector<float> p0 = p;
  adamw_step(p.data(), g.data(), m.data(), v.data(), 4, 1, c, mask.data());
  for (int i = 0; i < 4; ++i) {
    const double shrink = mask[i] ? 1.0 - 0.01 * 0.1 : 1.0;
    const double want = p0[i] * shrink - 0.01 * g[i] / (std::fabs(g[i]) + 1e-8);
    EXPECT_NEAR(p[i], want, 1e-6) << i;
  }
  EXPECT_NEAR(p[2], 0.5 * 0.999, 1e-7);  // pure decay where the gradient is 0
}

// A constant gradient keeps m_hat = g and v_hat = g^2 at every step, so with q = 1 - lr*wd:
//   p_t = p0 q^t - lr s (1 - q^t) / (1 - q),  s = g / (|g| + eps)   (and p0 - t lr s if wd = 0).
TEST(AdamW, ConstantGradientOverManyStepsMatchesClosedForm) {
  for (const float wd : {0.0f, 0.1f}) {
    const AdamWConfig c = config(0.05f, wd);
    std::vector<float> p = {1.0f, -2.0f, 0.25f}, g = {0.5f, -0.02f, 3.0f};
    std::vector<float> m(3, 0.0f), v(3, 0.0f);
    const std::vector<float> p0 = p;
    constexpr int steps = 20;
    for (int t = 1; t <= steps; ++t) {
      adamw_step(p.data(), g.data(), m.data(), v.data(), 3, t, c, nullptr);
    }
    const double q = 1.0 - 0.05 * wd;
    for (int i = 0; i < 3; ++i) {
      const double s = g[i] / (std::fabs(g[i]) + 1e-8);
      const double drift = wd == 0.0f ? steps : (1.0 - std::pow(q, steps)) / (1.0 - q);
      const double want = p0[i] * std::pow(q, steps) - 0.05 * s * drift;
      EXPECT_NEAR(p[i], want, 1e-5) << "wd " << wd << " index " << i;
    }
  }
}

// Changing gradients: compare with PyTorch's own arithmetic (step_size = lr / bc1,
// denom = sqrt(v) / sqrt(bc2) + eps) carried out in double.
TEST(AdamW, VaryingGradientsMatchPyTorchFormInDouble) {
  const AdamWConfig c = config(0.02f, 0.1f);
  constexpr int n = 5, steps = 12;
  std::vector<float> p = {0.7f, -1.1f, 0.0f, 2.5f, -0.3f}, m(n, 0.0f), v(n, 0.0f);
  const std::vector<uint8_t> mask = {1, 1, 0, 0, 1};
  std::vector<double> rp(p.begin(), p.end()), rm(n, 0.0), rv(n, 0.0);
  for (int t = 1; t <= steps; ++t) {
    std::vector<float> g(n);
    for (int i = 0; i < n; ++i) g[i] = static_cast<float>(std::sin(1.3 * t + i) * (i + 1));
    adamw_step(p.data(), g.data(), m.data(), v.data(), n, t, c, mask.data());
    const double bc1 = 1.0 - std::pow(0.9, t), bc2 = 1.0 - std::pow(0.95, t);
    for (int i = 0; i < n; ++i) {
      if (mask[i]) rp[i] *= 1.0 - 0.02 * 0.1;
      rm[i] = 0.9 * rm[i] + 0.1 * g[i];
      rv[i] = 0.95 * rv[i] + 0.05 * static_cast<double>(g[i]) * g[i];
      rp[i] -= 0.02 / bc1 * rm[i] / (std::sqrt(rv[i]) / std::sqrt(bc2) + 1e-8);
    }
  }
  for (int i = 0; i < n; ++i) {
    EXPECT_NEAR(p[i], rp[i], 1e-5) << i;
    EXPECT_NEAR(m[i], rm[i], 1e-5) << i;
    EXPECT_NEAR(v[i], rv[i], 1e-5) << i;
  }
}

TEST(AdamW, SlicesStepLikeTheWholeAndBadStepsAreNoOps) {
  const AdamWConfig c = config(0.01f, 0.1f);
  constexpr size_t n = 7, k = 3;
  std::vector<float> g(n), p(n), m(n, 0.1f), v(n, 0.2f);
  std::vector<uint8_t> mask(n);
  for (size_t i = 0; i < n; ++i) g[i] = 0.1f * i - 0.3f, p[i] = 1.0f - 0.2f * i, mask[i] = i % 2;
  std::vector<float> p2 = p, m2 = m, v2 = v;
  adamw_step(p.data(), g.data(), m.data(), v.data(), n, 3, c, mask.data());
  adamw_step(p2.data(), g.data(), m2.data(), v2.data(), k, 3, c, mask.data());
  adamw_step(p2.data() + k, g.data() + k, m2.data() + k, v2.data() + k, n - k, 3, c,
             mask.data() + k);
  EXPECT_EQ(p, p2);
  EXPECT_EQ(m, m2);
  EXPECT_EQ(v, v2);
  const std::vector<float> before = p;
  adamw_step(p.data(), g.data(), m.data(), v.data(), n, 0, c, mask.data());  // step < 1
  adamw_step(p.data(), g.data(), m.data(), v.data(), 0, 4, c, mask.data());  // n == 0
  EXPECT_EQ(p, before);
}

TEST(GradClip, ScalesToMaxNormAndReturnsTheNormBefore) {
  std::vector<float> g = {3.0f, 0.0f, -4.0f};
  EXPECT_DOUBLE_EQ(grad_sum_squares(g.data(), g.size()), 25.0);
  EXPECT_FLOAT_EQ(clip_grad_norm(g.data(), g.size(), 1.0f), 5.0f);
  EXPECT_NEAR(g[0], 0.6f, 1e-6f);
  EXPECT_NEAR(g[2], -0.8f, 1e-6f);
  EXPECT_EQ(g[1], 0.0f);
  std::vector<float> small = {0.3f, 0.4f};  // norm 0.5 <= 1: untouched
  EXPECT_FLOAT_EQ(clip_grad_norm(small.data(), 2, 1.0f), 0.5f);
  EXPECT_EQ(small, (std::vector<float>{0.3f, 0.4f}));
}

TEST(GradClip, CoefficientFromShardedSums) {
  // two shards {1,2} and {2}: total norm 3, so max_norm 1.5 gives 1.5 / (3 + 1e-6)
  const std::vector<float> a = {1.0f, 2.0f}, b = {2.0f};
  const double total = grad_sum_squares(a.data(), 2) + grad_sum_squares(b.data(), 1);
  EXPECT_NEAR(clip_coefficient(total, 1.5f), 0.5, 1e-6);
  EXPECT_EQ(clip_coefficient(total, 10.0f), 1.0f);
  EXPECT_EQ(clip_coefficient(total, 0.0f), 1.0f);  // clipping off
  EXPECT_TRUE(std::isnan(clip_coefficient(std::numeric_limits<double>::quiet_NaN(), 1.0f)));
  EXPECT_EQ(clip_coefficient(std::numeric_limits<double>::infinity(), 1.0f), 0.0f);
}

}  // namespace
}  // namespace plexus::engine
