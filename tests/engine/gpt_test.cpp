// gpt_test.cpp - the whole Gpt model: configuration errors, the parameter table, GPT-2 init,
// the loss at init, whole-model gradients against finite differences, batch splitting (the
// property data parallelism relies on), and overfitting one batch with AdamW.
#include "engine/model/gpt.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/model/rng.h"
#include "engine/optim/adamw.h"

namespace plexus::engine {
namespace {

GptConfig tiny_config() {
  return {.vocab_size = 13, .max_seq_len = 6, .n_layer = 2, .n_head = 2, .n_embd = 8};
}

std::vector<int32_t> random_tokens(size_t n, int V, uint64_t seed) {
  SplitMix64 rng(seed);
  std::vector<int32_t> t(n);
  for (int32_t& x : t) x = static_cast<int32_t>(rng.next() % static_cast<uint64_t>(V));
  return t;
}

std::string construct_error(const GptConfig& c) {
  try {
    Gpt model(c);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(GptConfig, ValidationNamesTheFieldAndValue) {
  EXPECT_EQ(tiny_config().validate(), "");
  GptConfig c = tiny_config();
  c.n_embd = 10;
  c.n_head = 3;
  EXPECT_EQ(c.validate(), "GptConfig: n_embd 10 is not a multiple of n_head 3");
  EXPECT_EQ(construct_error(c), c.validate());
  c = tiny_config();
  c.n_layer = 0;
  EXPECT_EQ(c.validate(), "GptConfig: n_layer 0 not in 1..1048576");
  c = tiny_config();
  c.vocab_size = -5;
  EXPECT_EQ(c.validate(), "GptConfig: vocab_size -5 not in 1..1048576");
  GptConfig unset;  // max_seq_len, n_layer, ... have no usable default
  EXPECT_EQ(unset.validate(), "GptConfig: max_seq_len 0 not in 1..1048576");
}

TEST(Gpt, ParamTableTilesTheFlatBuffer) {
  const GptConfig c = tiny_config();
  Gpt model(c);
  const size_t C = c.n_embd, V = c.vocab_size, L = c.n_layer, maxT = c.max_seq_len;
  EXPECT_EQ(model.num_params(), V * C + maxT * C + L * (12 * C * C + 13 * C) + 2 * C);
  const auto& table = model.param_table();
  ASSERT_EQ(table.size(), 2 + 12 * L + 2);
  size_t next = 0;
  for (const ParamTensor& t : table) {
    EXPECT_EQ(t.offset, next) << t.name;
    next += t.numel();
    const bool is_weight = t.shape.size() == 2;
    EXPECT_EQ(t.decay, is_weight) << t.name;  // decay exactly the 2-D tensors
  }
  EXPECT_EQ(next, model.num_params());
  EXPECT_EQ(table[0].name, "wte");
  EXPECT_EQ(table[0].shape, (std::vector<int>{13, 8}));
  EXPECT_EQ(table[1].name, "wpe");
  EXPECT_EQ(table[2 + 12 + 2].name, "blocks.1.attn.qkv.weight");
  EXPECT_EQ(table[2 + 12 + 2].shape, (std::vector<int>{24, 8}));
  EXPECT_EQ(table[2 + 12 + 10].name, "blocks.1.mlp.proj.weight");
  EXPECT_EQ(table[2 + 12 + 10].shape, (std::vector<int>{8, 32}));
  EXPECT_EQ(table.back().name, "ln_f.bias");
  const std::vector<uint8_t> mask = model.decay_mask();
  ASSERT_EQ(mask.size(), model.num_params());
  for (const ParamTensor& t : table) {
    for (size_t i = 0; i < t.numel(); ++i) ASSERT_EQ(mask[t.offset + i], t.decay ? 1 : 0);
  }
}

double sample_std(const float* p, size_t n) {
  double s = 0.0, s2 = 0.0;
  for (size_t i = 0; i < n; ++i) s += p[i], s2 += static_cast<double>(p[i]) * p[i];
  const double m = s / n;
  return std::sqrt(s2 / n - m * m);
}

TEST(Gpt, InitFollowsGpt2AndIsDeterministic) {
  const GptConfig c{.vocab_size = 256, .max_seq_len = 64, .n_layer = 4, .n_head = 4, .n_embd = 64};
  Gpt a(c), b(c), other(c);
  a.init_parameters(1234);
  b.init_parameters(1234);
  other.init_parameters(1235);
  EXPECT_TRUE(std::equal(a.params(), a.params() + a.num_params(), b.params()));
  size_t same = 0;
  for (size_t i = 0; i < a.num_params(); ++i) same += a.params()[i] == other.params()[i];
  // only the exactly-0 biases and exactly-1 gains agree
  size_t constant = 0;
  for (const ParamTensor& t : a.param_table()) constant += t.shape.size() == 1 ? t.numel() : 0;
  EXPECT_EQ(same, constant);

  const double residual_std = 0.02 / std::sqrt(2.0 * c.n_layer);
  for (const ParamTensor& t : a.param_table()) {
    const float* p = a.params() + t.offset;
    if (t.shape.size() == 1) {
      const bool gain = t.name.find("weight") != std::string::npos;
      for (size_t i = 0; i < t.numel(); ++i) ASSERT_EQ(p[i], gain ? 1.0f : 0.0f) << t.name;
      continue;
    }
    const bool residual = t.name.find("proj.weight") != std::string::npos;
    const double want = residual ? residual_std : 0.02;
    // >= 4096 samples: the sample std is within ~1.1% (one sigma) of the true one
    EXPECT_NEAR(sample_std(p, t.numel()), want, 0.06 * want) << t.name;
  }
  std::fill(a.grads(), a.grads() + a.num_params(), 3.0f);
  a.init_parameters(1);
  EXPECT_EQ(a.grads()[0], 3.0f);  // init leaves gradients alone
}

TEST(Gpt, LossAtInitIsNearLogV) {
  const GptConfig c{.vocab_size = 256, .max_seq_len = 32, .n_layer = 2, .n_head = 4, .n_embd = 64};
  Gpt model(c);
  model.init_parameters(7);
  const int B = 4, T = 32;
  const auto tokens = random_tokens(B * T, c.vocab_size, 1);
  const auto targets = random_tokens(B * T, c.vocab_size, 2);
  const float loss = model.forward(tokens.data(), targets.data(), B, T);
  EXPECT_NEAR(loss, std::log(256.0), 0.1);
  EXPECT_EQ(model.num_targets(), static_cast<size_t>(B * T));
}

// Loss in double for finite differences (the model returns it as float: fine at eps 1e-2).
double loss_at(Gpt& model, const std::vector<int32_t>& tokens,
               const std::vector<int32_t>& targets, int B, int T) {
  return model.forward(tokens.data(), targets.data(), B, T);
}

// Whole-model gradients vs central differences, for every tensor: the element with the largest
// |gradient| plus 5 random ones, and a random direction over the whole tensor. The parameters
// are GPT-2 init plus U(-0.1, 0.1) noise so gains, biases and attention are all off their
// special initial values. Budget: the float loss carries ~1e-6 absolute rounding error (~ulp of
// a loss of ~2.6 plus activation rounding), i.e. ~5e-5 in a difference quotient with eps 1e-2;
// truncation eps^2/6 |f'''| is ~2e-5. Tolerance 2e-4 + 2e-2 |numeric|.
TEST(Gpt, GradientsMatchFiniteDifferences) {
  const GptConfig c = tiny_config();
  Gpt model(c);
  model.init_parameters(42);
  SplitMix64 noise(99);
  for (size_t i = 0; i < model.num_params(); ++i) {
    model.params()[i] += static_cast<float>(0.2 * noise.uniform_open0() - 0.1);
  }
  const int B = 2, T = 5;
  const auto tokens = random_tokens(B * T, c.vocab_size, 3);
  auto targets = random_tokens(B * T, c.vocab_size, 4);
  targets[3] = -1;  // one ignored position
  model.zero_grad();
  loss_at(model, tokens, targets, B, T);
  EXPECT_EQ(model.num_targets(), static_cast<size_t>(B * T - 1));
  model.backward();
  const std::vector<float> grads(model.grads(), model.grads() + model.num_params());
  float* P = model.params();
  constexpr float eps = 1e-2f;
  auto tolerance = [](double numeric) { return 2e-4 + 2e-2 * std::fabs(numeric); };

  SplitMix64 pick(5);
  for (const ParamTensor& t : model.param_table()) {
    const size_t n = t.numel();
    std::vector<size_t> idx = {static_cast<size_t>(
        std::max_element(grads.begin() + t.offset, grads.begin() + t.offset + n,
                         [](float x, float y) { return std::fabs(x) < std::fabs(y); }) -
        (grads.begin() + t.offset))};
    for (int k = 0; k < 5; ++k) idx.push_back(pick.next() % n);
    for (size_t i : idx) {
      float& p = P[t.offset + i];
      const float saved = p, xp = saved + eps, xm = saved - eps;
      p = xp;
      const double lp = loss_at(model, tokens, targets, B, T);
      p = xm;
      const double lm = loss_at(model, tokens, targets, B, T);
      p = saved;
      const double numeric = (lp - lm) / (static_cast<double>(xp) - xm);
      EXPECT_NEAR(grads[t.offset + i], numeric, tolerance(numeric)) << t.name << "[" << i << "]";
    }
    // directional derivative along a random +-1 direction d over the whole tensor
    std::vector<float> saved(P + t.offset, P + t.offset + n), d(n);
    double analytic = 0.0;
    for (size_t i = 0; i < n; ++i) {
      d[i] = (pick.next() & 1) ? 1.0f : -1.0f;
      analytic += static_cast<double>(d[i]) * grads[t.offset + i];
    }
    const float h = 1e-2f / std::sqrt(static_cast<float>(n));
    for (size_t i = 0; i < n; ++i) P[t.offset + i] = saved[i] + h * d[i];
    const double lp = loss_at(model, tokens, targets, B, T);
    for (size_t i = 0; i < n; ++i) P[t.offset + i] = saved[i] - h * d[i];
    const double lm = loss_at(model, tokens, targets, B, T);
    std::copy(saved.begin(), saved.end(), P + t.offset);
    const double numeric = (lp - lm) / (2.0 * h);
    EXPECT_NEAR(analytic, numeric, tolerance(numeric) * std::sqrt(static_cast<double>(n)))
        << t.name << " (random direction)";
  }
}

TEST(Gpt, BackwardAccumulatesAndNeedsTargets) {
  const GptConfig c = tiny_config();
  Gpt model(c);
  model.init_parameters(1);
  const auto tokens = random_tokens(6, c.vocab_size, 1), targets = random_tokens(6, 13, 2);
  model.zero_grad();
  model.forward(tokens.data(), targets.data(), 1, 6);
  model.backward();
  const std::vector<float> once(model.grads(), model.grads() + model.num_params());
  model.backward();
  // exactly 2x up to float rounding (wte sums two contributions, so the order changes)
  float scale = 0.0f;
  for (float g : once) scale = std::max(scale, std::fabs(g));
  for (size_t i = 0; i < once.size(); ++i) {
    ASSERT_NEAR(model.grads()[i], 2 * once[i], 1e-6f * scale) << i;
  }
  model.zero_grad();
  for (size_t i = 0; i < once.size(); ++i) ASSERT_EQ(model.grads()[i], 0.0f) << i;

  const std::vector<float> logits(model.logits(), model.logits() + 6 * c.vocab_size);
  EXPECT_EQ(model.forward(tokens.data(), nullptr, 1, 6), 0.0f);
  for (size_t i = 0; i < logits.size(); ++i) ASSERT_EQ(model.logits()[i], logits[i]) << i;
  EXPECT_THROW(model.backward(), std::logic_error);

  const std::vector<int32_t> ignored(6, -1);  // no targets at all: loss 0, gradient 0
  EXPECT_EQ(model.forward(tokens.data(), ignored.data(), 1, 6), 0.0f);
  model.backward();
  for (size_t i = 0; i < once.size(); ++i) ASSERT_EQ(model.grads()[i], 0.0f) << i;
}

std::string forward_error(Gpt& model, const int32_t* tokens, const int32_t* targets, int B,
                          int T) {
  try {
    model.forward(tokens, targets, B, T);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(Gpt, ForwardRejectsBadArguments) {
  Gpt model(tiny_config());
  std::vector<int32_t> tokens(14, 1), targets(14, 2);
  EXPECT_EQ(forward_error(model, tokens.data(), targets.data(), 2, 7),
            "Gpt::forward: T 7 not in 1..6 (max_seq_len)");
  EXPECT_EQ(forward_error(model, tokens.data(), targets.data(), 0, 3), "Gpt::forward: B 0 < 1");
  EXPECT_EQ(forward_error(model, nullptr, targets.data(), 1, 3), "Gpt::forward: tokens is null");
  tokens[4] = 13;
  EXPECT_EQ(forward_error(model, tokens.data(), targets.data(), 2, 3),
            "Gpt::forward: tokens[4] 13 not in 0..12");
  tokens[4] = 0;
  targets[5] = 20;
  EXPECT_EQ(forward_error(model, tokens.data(), targets.data(), 2, 3),
            "Gpt::forward: targets[5] 20 not in 0..12 (or < 0 to ignore)");
}

// A prefix's logits do not depend on later tokens, and buffers re-layout across (B,T) changes.
TEST(Gpt, ShorterSequencesGiveThePrefixLogits) {
  const GptConfig c = tiny_config();
  Gpt model(c);
  model.init_parameters(3);
  const int V = c.vocab_size;
  const auto tokens = random_tokens(6, V, 9);
  model.forward(tokens.data(), nullptr, 1, 6);
  const std::vector<float> full(model.logits(), model.logits() + 6 * V);
  model.forward(random_tokens(24, V, 1).data(), nullptr, 4, 6);  // grow the buffers
  model.forward(tokens.data(), nullptr, 1, 3);
  for (int i = 0; i < 3 * V; ++i) EXPECT_NEAR(model.logits()[i], full[i], 1e-5) << i;
}

// B=4 must equal its two B=2 halves: logits row by row, the loss as the mean of the halves'
// losses, the gradient as the mean of the halves' gradients. Sgemm may sum in another order for
// another row count, so equality is to float rounding: 1e-5 relative for the loss and, for
// gradients, 1e-5 of the tensor's largest |gradient| (a float sum of 40 terms is good to ~1e-6).
TEST(Gpt, BatchEqualsMeanOfItsHalves) {
  const GptConfig c{.vocab_size = 64, .max_seq_len = 16, .n_layer = 2, .n_head = 2, .n_embd = 32};
  Gpt model(c);
  model.init_parameters(11);
  const int B = 4, T = 16, V = c.vocab_size;
  const size_t half = static_cast<size_t>(B / 2) * T;
  const auto tokens = random_tokens(B * T, V, 5), targets = random_tokens(B * T, V, 6);

  model.zero_grad();
  const float loss4 = model.forward(tokens.data(), targets.data(), B, T);
  const std::vector<float> logits4(model.logits(), model.logits() + B * T * V);
  model.backward();
  const std::vector<float> grad4(model.grads(), model.grads() + model.num_params());

  model.zero_grad();
  const float loss_a = model.forward(tokens.data(), targets.data(), B / 2, T);
  for (size_t i = 0; i < half * V; ++i) ASSERT_NEAR(model.logits()[i], logits4[i], 1e-5) << i;
  model.backward();
  const float loss_b = model.forward(tokens.data() + half, targets.data() + half, B / 2, T);
  for (size_t i = 0; i < half * V; ++i) {
    ASSERT_NEAR(model.logits()[i], logits4[half * V + i], 1e-5) << i;
  }
  model.backward();
  EXPECT_NEAR(loss4, 0.5 * (loss_a + loss_b), 1e-5 * loss4);

  for (const ParamTensor& t : model.param_table()) {
    float scale = 0.0f;
    for (size_t i = 0; i < t.numel(); ++i) scale = std::max(scale, std::fabs(grad4[t.offset + i]));
    for (size_t i = 0; i < t.numel(); ++i) {
      const size_t j = t.offset + i;
      ASSERT_NEAR(grad4[j], 0.5f * model.grads()[j], 1e-5f * scale) << t.name << "[" << i << "]";
    }
  }
}

TEST(Gpt, AdamWOverfitsOneBatch) {
  const GptConfig c{.vocab_size = 64, .max_seq_len = 16, .n_layer = 2, .n_head = 2, .n_embd = 32};
  Gpt model(c);
  model.init_parameters(21);
  const int B = 2, T = 16;
  const auto tokens = random_tokens(B * T, c.vocab_size, 7);
  const auto targets = random_tokens(B * T, c.vocab_size, 8);  // random: only memorizable
  std::vector<float> m(model.num_params(), 0.0f), v(model.num_params(), 0.0f);
  const std::vector<uint8_t> mask = model.decay_mask();
  AdamWConfig opt;
  opt.lr = 1e-2f;
  opt.weight_decay = 0.0f;
  float first = 0.0f, loss = 0.0f;
  for (int step = 1; step <= 100; ++step) {
    model.zero_grad();
    loss = model.forward(tokens.data(), targets.data(), B, T);
    if (step == 1) first = loss;
    model.backward();
    adamw_step(model.params(), model.grads(), m.data(), v.data(), model.num_params(), step, opt,
               mask.data());
  }
  EXPECT_NEAR(first, std::log(64.0), 0.1);
  EXPECT_LT(loss, 0.1f) << "from " << first;
}

}  // namespace
}  // namespace plexus::engine
