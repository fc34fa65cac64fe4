// layers_test.cpp - each engine layer's forward against a plain reference and its backward
// against central finite differences.
//
// Gradient checks: the scalar is L = sum(out * w) with fixed random weights w (so dout = w), summed
// in double. Each input element x is moved to x +- eps (eps = 1e-2, the actual float step
// xp - xm is the denominator) and dL/dx ~ (L(xp) - L(xm)) / (xp - xm). Error budget: truncation
// eps^2/6 * |f'''| ~ 2e-5 for these smooth layers with O(1) inputs; rounding: the outputs that
// depend on x carry float error ~6e-8 * |out| each, ~1e-6 in L over a few dozen of them, i.e.
// ~5e-5 after dividing by 2 eps. Hence |analytic - numeric| <= 2e-4 + 1e-3 * |numeric|: a 3x
// margin over the budget (the observed error is below 2e-5 + 1e-4 |numeric|), while any wrong
// term in a backward shows up as an error of order |grad| ~ 0.1-1.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <vector>

#include "engine/model/layers/attention.h"
#include "engine/model/layers/encoder.h"
#include "engine/model/layers/gelu.h"
#include "engine/model/layers/layernorm.h"
#include "engine/model/layers/matmul.h"
#include "engine/model/layers/residual.h"
#include "engine/model/layers/softmax_crossentropy.h"
#include "engine/model/rng.h"

namespace plexus::engine {
namespace {

constexpr int B = 2, T = 3, C = 8, V = 11;
constexpr size_t BT = static_cast<size_t>(B) * T;
constexpr float kEps = 1e-2f;

std::vector<float> random_vector(size_t n, uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
  SplitMix64 rng(seed);
  std::vector<float> v(n);
  for (float& x : v) x = lo + (hi - lo) * static_cast<float>(rng.uniform_open0());
  return v;
}

double weighted_sum(const std::vector<float>& out, const std::vector<float>& w) {
  double s = 0.0;
  for (size_t i = 0; i < out.size(); ++i) s += static_cast<double>(out[i]) * w[i];
  return s;
}

// Compares analytic[i] with the central difference of loss() w.r.t. x[i], for every i.
void expect_gradient(std::vector<float>& x, const std::vector<float>& analytic,
                     const std::function<double()>& loss, const char* what) {
  ASSERT_EQ(x.size(), analytic.size()) << what;
  for (size_t i = 0; i < x.size(); ++i) {
    const float saved = x[i];
    const float xp = saved + kEps, xm = saved - kEps;
    x[i] = xp;
    const double lp = loss();
    x[i] = xm;
    const double lm = loss();
    x[i] = saved;
    const double numeric = (lp - lm) / (static_cast<double>(xp) - xm);
    EXPECT_NEAR(analytic[i], numeric, 2e-4 + 1e-3 * std::fabs(numeric))
        << what << " index " << i;
  }
}

TEST(EncoderLayer, ForwardAddsTokenAndPositionRows) {
  const std::vector<int32_t> tokens = {3, 0, 3, 10, 3, 7};  // repeats: gradients must add
  const auto wte = random_vector(V * C, 1), wpe = random_vector(T * C, 2);
  std::vector<float> out(BT * C);
  encoder_forward(out.data(), tokens.data(), wte.data(), wpe.data(), B, T, C);
  for (size_t bt = 0; bt < BT; ++bt) {
    for (int c = 0; c < C; ++c) {
      EXPECT_EQ(out[bt * C + c], wte[tokens[bt] * C + c] + wpe[(bt % T) * C + c]);
    }
  }
}

TEST(EncoderLayer, BackwardMatchesFiniteDifferences) {
  const std::vector<int32_t> tokens = {3, 0, 3, 10, 3, 7};
  auto wte = random_vector(V * C, 1), wpe = random_vector(T * C, 2);
  const auto w = random_vector(BT * C, 3);
  std::vector<float> out(BT * C), dwte(V * C, 0.0f), dwpe(T * C, 0.0f);
  auto loss = [&] {
    encoder_forward(out.data(), tokens.data(), wte.data(), wpe.data(), B, T, C);
    return weighted_sum(out, w);
  };
  encoder_backward(dwte.data(), dwpe.data(), w.data(), tokens.data(), B, T, C);
  expect_gradient(wte, dwte, loss, "dwte");
  expect_gradient(wpe, dwpe, loss, "dwpe");
}

TEST(LayerNormLayer, ForwardNormalizesEachRow) {
  const auto inp = random_vector(BT * C, 4, -3.0f, 5.0f);
  const std::vector<float> ones(C, 1.0f), zeros(C, 0.0f);
  std::vector<float> out(BT * C), mean(BT), rstd(BT);
  layernorm_forward(out.data(), mean.data(), rstd.data(), inp.data(), ones.data(), zeros.data(),
                    B, T, C);
  for (size_t r = 0; r < BT; ++r) {
    double m = 0.0, var = 0.0, om = 0.0, ovar = 0.0;
    for (int c = 0; c < C; ++c) m += inp[r * C + c], om += out[r * C + c];
    m /= C, om /= C;
    for (int c = 0; c < C; ++c) {
      var += (inp[r * C + c] - m) * (inp[r * C + c] - m);
      ovar += (out[r * C + c] - om) * (out[r * C + c] - om);
    }
    var /= C, ovar /= C;
    EXPECT_NEAR(mean[r], m, 1e-5) << "row " << r;
    EXPECT_NEAR(rstd[r], 1.0 / std::sqrt(var + 1e-5), 1e-4) << "row " << r;
    EXPECT_NEAR(om, 0.0, 1e-6) << "row " << r;
    EXPECT_NEAR(ovar, var / (var + 1e-5), 1e-5) << "row " << r;
  }
}

TEST(LayerNormLayer, BackwardMatchesFiniteDifferences) {
  auto inp = random_vector(BT * C, 4, -3.0f, 5.0f);
  auto weight = random_vector(C, 5, 0.5f, 1.5f), bias = random_vector(C, 6);
  const auto w = random_vector(BT * C, 7);
  std::vector<float> out(BT * C), mean(BT), rstd(BT);
  auto loss = [&] {
    layernorm_forward(out.data(), mean.data(), rstd.data(), inp.data(), weight.data(),
                      bias.data(), B, T, C);
    return weighted_sum(out, w);
  };
  loss();
  std::vector<float> dinp(BT * C, 0.0f), dweight(C, 0.0f), dbias(C, 0.0f);
  layernorm_backward(dinp.data(), dweight.data(), dbias.data(), w.data(), inp.data(),
                     weight.data(), mean.data(), rstd.data(), B, T, C);
  expect_gradient(inp, dinp, loss, "dinp");
  expect_gradient(weight, dweight, loss, "dweight");
  expect_gradient(bias, dbias, loss, "dbias");
}

TEST(MatmulLayer, ForwardMatchesNaiveProduct) {
  constexpr int OC = 5;
  const auto inp = random_vector(BT * C, 8), weight = random_vector(OC * C, 9);
  const auto bias = random_vector(OC, 10);
  std::vector<float> out(BT * OC), out_nobias(BT * OC);
  matmul_forward(out.data(), inp.data(), weight.data(), bias.data(), B, T, C, OC);
  matmul_forward(out_nobias.data(), inp.data(), weight.data(), nullptr, B, T, C, OC);
  for (size_t r = 0; r < BT; ++r) {
    for (int o = 0; o < OC; ++o) {
      double s = 0.0;
      for (int c = 0; c < C; ++c) s += static_cast<double>(inp[r * C + c]) * weight[o * C + c];
      EXPECT_NEAR(out_nobias[r * OC + o], s, 1e-5) << r << "," << o;
      EXPECT_NEAR(out[r * OC + o], s + bias[o], 1e-5) << r << "," << o;
    }
  }
}

TEST(MatmulLayer, BackwardMatchesFiniteDifferencesAndAccumulates) {
  constexpr int OC = 5;
  auto inp = random_vector(BT * C, 8), weight = random_vector(OC * C, 9);
  auto bias = random_vector(OC, 10);
  const auto w = random_vector(BT * OC, 11);
  std::vector<float> out(BT * OC);
  auto loss = [&] {
    matmul_forward(out.data(), inp.data(), weight.data(), bias.data(), B, T, C, OC);
    return weighted_sum(out, w);
  };
  std::vector<float> dinp(BT * C, 0.0f), dweight(OC * C, 0.0f), dbias(OC, 0.0f);
  matmul_backward(dinp.data(), dweight.data(), dbias.data(), w.data(), inp.data(),
                  weight.data(), B, T, C, OC);
  expect_gradient(inp, dinp, loss, "dinp");
  expect_gradient(weight, dweight, loss, "dweight");
  expect_gradient(bias, dbias, loss, "dbias");

  // a second backward adds the same amount again
  const auto once_w = dweight, once_b = dbias, once_i = dinp;
  matmul_backward(dinp.data(), dweight.data(), dbias.data(), w.data(), inp.data(),
                  weight.data(), B, T, C, OC);
  for (size_t i = 0; i < dweight.size(); ++i) EXPECT_FLOAT_EQ(dweight[i], 2 * once_w[i]);
  for (size_t i = 0; i < dbias.size(); ++i) EXPECT_FLOAT_EQ(dbias[i], 2 * once_b[i]);
  for (size_t i = 0; i < dinp.size(); ++i) EXPECT_FLOAT_EQ(dinp[i], 2 * once_i[i]);
}

// Naive causal attention in double, one (b, t, h) at a time.
std::vector<double> naive_attention(const std::vector<float>& inp, int NH) {
  const int hs = C / NH;
  std::vector<double> out(BT * C, 0.0);
  for (int b = 0; b < B; ++b) {
    for (int h = 0; h < NH; ++h) {
      for (int t = 0; t < T; ++t) {
        auto at = [&](int pos, int part, int i) {
          return static_cast<double>(inp[(b * T + pos) * 3 * C + part * C + h * hs + i]);
        };
        std::vector<double> s(t + 1);
        double mx = -1e300, sum = 0.0;
        for (int j = 0; j <= t; ++j) {
          s[j] = 0.0;
          for (int i = 0; i < hs; ++i) s[j] += at(t, 0, i) * at(j, 1, i);
          s[j] /= std::sqrt(static_cast<double>(hs));
          mx = std::max(mx, s[j]);
        }
        for (int j = 0; j <= t; ++j) sum += (s[j] = std::exp(s[j] - mx));
        for (int i = 0; i < hs; ++i) {
          double o = 0.0;
          for (int j = 0; j <= t; ++j) o += s[j] / sum * at(j, 2, i);
          out[(b * T + t) * C + h * hs + i] = o;
        }
      }
    }
  }
  return out;
}

TEST(AttentionLayer, ForwardMatchesNaiveAttention) {
  constexpr int NH = 2;
  const auto inp = random_vector(BT * 3 * C, 12, -2.0f, 2.0f);
  std::vector<float> out(BT * C), att(static_cast<size_t>(B) * NH * T * T);
  attention_forward(out.data(), att.data(), inp.data(), B, T, C, NH);
  const auto ref = naive_attention(inp, NH);
  for (size_t i = 0; i < out.size(); ++i) EXPECT_NEAR(out[i], ref[i], 1e-5) << "index " << i;
  for (int bh = 0; bh < B * NH; ++bh) {  // rows sum to 1, zero above the diagonal
    for (int t = 0; t < T; ++t) {
      double sum = 0.0;
      for (int j = 0; j < T; ++j) {
        const float a = att[(static_cast<size_t>(bh) * T + t) * T + j];
        if (j > t) {
          EXPECT_EQ(a, 0.0f);
        }
        sum += a;
      }
      EXPECT_NEAR(sum, 1.0, 1e-6);
    }
  }
}

TEST(AttentionLayer, IsCausal) {
  constexpr int NH = 2, TT = 5;
  auto inp = random_vector(static_cast<size_t>(B) * TT * 3 * C, 13, -2.0f, 2.0f);
  std::vector<float> out(static_cast<size_t>(B) * TT * C), out2(out.size());
  std::vector<float> att(static_cast<size_t>(B) * NH * TT * TT);
  attention_forward(out.data(), att.data(), inp.data(), B, TT, C, NH);
  constexpr int changed = 3;  // replace q, k and v of position 3 in every row
  for (int b = 0; b < B; ++b) {
    for (int i = 0; i < 3 * C; ++i) inp[(b * TT + changed) * 3 * C + i] += 0.75f;
  }
  attention_forward(out2.data(), att.data(), inp.data(), B, TT, C, NH);
  for (int b = 0; b < B; ++b) {
    for (int t = 0; t < TT; ++t) {
      double diff = 0.0;
      for (int c = 0; c < C; ++c) {
        const size_t i = (static_cast<size_t>(b) * TT + t) * C + c;
        diff += std::fabs(out2[i] - out[i]);
      }
      if (t < changed) {
        EXPECT_EQ(diff, 0.0) << "b " << b << " t " << t << " saw a future token";
      } else {
        EXPECT_GT(diff, 1e-3) << "b " << b << " t " << t << " ignored an earlier token";
      }
    }
  }
}

TEST(AttentionLayer, BackwardMatchesFiniteDifferences) {
  constexpr int NH = 2;
  auto inp = random_vector(BT * 3 * C, 14, -2.0f, 2.0f);
  const auto w = random_vector(BT * C, 15);
  std::vector<float> out(BT * C), att(static_cast<size_t>(B) * NH * T * T);
  std::vector<float> scratch(T * T), dinp(BT * 3 * C, 0.0f);
  auto loss = [&] {
    attention_forward(out.data(), att.data(), inp.data(), B, T, C, NH);
    return weighted_sum(out, w);
  };
  loss();
  attention_backward(dinp.data(), scratch.data(), w.data(), inp.data(), att.data(), B, T, C, NH);
  expect_gradient(inp, dinp, loss, "dinp (q, k, v)");
}

TEST(GeluLayer, ForwardMatchesClosedForm) {
  // 4-lane vector code: 10 elements leave a tail of 2; the guard past the end stays untouched
  const std::vector<float> x = {-3.0f, -1.0f, 0.0f, 0.5f, 1.0f, 2.0f, 1e-6f, -20.0f, 20.0f, 4.0f};
  std::vector<float> y(x.size() + 1, 42.0f);
  gelu_forward(y.data(), x.data(), x.size());
  EXPECT_EQ(y.back(), 42.0f);
  for (size_t i = 0; i < x.size(); ++i) {
    const double xd = x[i];
    const double ref =
        0.5 * xd * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (xd + 0.044715 * xd * xd * xd)));
    EXPECT_NEAR(y[i], ref, 1e-6) << "x " << x[i];
  }
  EXPECT_NEAR(y[4], 0.841192, 1e-6);   // published value of tanh-GELU(1)
  EXPECT_NEAR(y[1], -0.158808, 1e-6);  // and of tanh-GELU(-1)
}

TEST(GeluLayer, BackwardMatchesFiniteDifferences) {
  constexpr size_t n = BT * C - 3;  // not a multiple of the 4 lanes
  auto inp = random_vector(n, 16, -4.0f, 4.0f);
  const auto w = random_vector(n, 17);
  std::vector<float> out(n), dinp(n + 1, 0.0f);
  dinp[n] = 42.0f;  // guard
  auto loss = [&] {
    gelu_forward(out.data(), inp.data(), n);
    return weighted_sum(out, w);
  };
  gelu_backward(dinp.data(), inp.data(), w.data(), n);
  EXPECT_EQ(dinp[n], 42.0f);
  dinp.pop_back();
  expect_gradient(inp, dinp, loss, "dinp");
}

TEST(ResidualLayer, ForwardAndBackward) {
  auto a = random_vector(BT * C, 18), b = random_vector(BT * C, 19);
  const auto w = random_vector(BT * C, 20);
  std::vector<float> out(BT * C), da(BT * C, 0.0f), db(BT * C, 0.0f);
  auto loss = [&] {
    residual_forward(out.data(), a.data(), b.data(), out.size());
    return weighted_sum(out, w);
  };
  loss();
  for (size_t i = 0; i < out.size(); ++i) EXPECT_EQ(out[i], a[i] + b[i]);
  residual_backward(da.data(), db.data(), w.data(), out.size());
  expect_gradient(a, da, loss, "dinp1");
  expect_gradient(b, db, loss, "dinp2");
}

TEST(SoftmaxCrossEntropyLayer, ForwardMatchesNaiveAndSkipsIgnored) {
  const auto logits = random_vector(BT * V, 21, -4.0f, 4.0f);
  const std::vector<int32_t> targets = {0, 10, -1, 5, 5, -7};
  std::vector<float> losses(BT), probs(BT * V);
  const size_t n = softmax_crossentropy_forward(losses.data(), probs.data(), logits.data(),
                                                targets.data(), B, T, V);
  EXPECT_EQ(n, 4u);
  for (size_t r = 0; r < BT; ++r) {
    double sum = 0.0;
    for (int i = 0; i < V; ++i) sum += std::exp(static_cast<double>(logits[r * V + i]));
    for (int i = 0; i < V; ++i) {
      EXPECT_NEAR(probs[r * V + i], std::exp(static_cast<double>(logits[r * V + i])) / sum, 1e-6);
    }
    const double ref = targets[r] < 0 ? 0.0 : std::log(sum) - logits[r * V + targets[r]];
    EXPECT_NEAR(losses[r], ref, 1e-5) << "row " << r;
  }
}

TEST(SoftmaxCrossEntropyLayer, StableForHugeLogits) {
  std::vector<float> logits = {1000.0f, 0.0f, -1000.0f};
  const std::vector<int32_t> target = {2};
  std::vector<float> loss(1), probs(3);
  softmax_crossentropy_forward(loss.data(), probs.data(), logits.data(), target.data(), 1, 1, 3);
  EXPECT_FLOAT_EQ(loss[0], 2000.0f);  // finite, though probs[2] underflows to 0
  EXPECT_FLOAT_EQ(probs[0], 1.0f);
}

TEST(SoftmaxCrossEntropyLayer, BackwardMatchesFiniteDifferencesOfMeanLoss) {
  auto logits = random_vector(BT * V, 22, -4.0f, 4.0f);
  const std::vector<int32_t> targets = {0, 10, -1, 5, 5, 3};
  std::vector<float> losses(BT), probs(BT * V), dlogits(BT * V, 0.0f);
  auto loss = [&] {  // the mean over positions with a target
    const size_t n = softmax_crossentropy_forward(losses.data(), probs.data(), logits.data(),
                                                  targets.data(), B, T, V);
    double s = 0.0;
    for (float l : losses) s += l;
    return s / static_cast<double>(n);
  };
  loss();
  softmax_crossentropy_backward(dlogits.data(), probs.data(), targets.data(), 1.0f / 5, B, T, V);
  expect_gradient(logits, dlogits, loss, "dlogits");
  for (int i = 0; i < V; ++i) EXPECT_EQ(dlogits[2 * V + i], 0.0f) << "ignored row, column " << i;
}

}  // namespace
}  // namespace plexus::engine
