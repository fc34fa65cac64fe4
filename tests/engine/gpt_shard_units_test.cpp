// gpt_shard_units_test.cpp - a GptShard's parameter units and hooks (param_units.h): the units
// tile the flat buffer for every kind of shard, a recording UnitHooks sees exactly the call
// order param_units.h states (with and without checkpointing), and hooks that really free what
// they are done with (parameters outside acquire..release, gradients after gradient_ready, as
// ZeRO-3 and ZeRO-2 do) leave losses and gradients bit-identical.
#include <cblas.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "engine/model/gpt_shard.h"
#include "engine/model/rng.h"

namespace plexus::engine {
namespace {

constexpr uint64_t kSeed = 4321;

GptConfig test_config(int layers) {
  return {.vocab_size = 250, .max_seq_len = 8, .n_layer = layers, .n_head = 4, .n_embd = 16};
}

TensorParallelOps no_ops() {
  TensorParallelOps ops;
  ops.allreduce_sum = ops.allreduce_max = [](float*, size_t) {};
  return ops;
}

struct Expected {
  std::string name;
  size_t count;
};

// Names and sizes, in order; offsets must follow without gaps and end at num_params().
void expect_units(const GptShard& s, const std::vector<Expected>& want) {
  const std::vector<ParamUnit>& units = s.units();
  ASSERT_EQ(units.size(), want.size()) << s.spec().describe();
  size_t offset = 0;
  for (size_t u = 0; u < units.size(); ++u) {
    EXPECT_EQ(units[u].name, want[u].name) << "unit " << u;
    EXPECT_EQ(units[u].offset, offset) << units[u].name;
    EXPECT_EQ(units[u].count, want[u].count) << units[u].name;
    offset += units[u].count;
  }
  EXPECT_EQ(offset, s.num_params()) << s.spec().describe();
}

TEST(GptShardUnitsTest, UnitsTileTheBufferForEveryKindOfShard) {
  const GptConfig c = test_config(4);
  const size_t C = 16, V = 250, maxT = 8;
  const size_t block = 12 * C * C + 13 * C;  // Gpt's block
  // tp 2: qkv (weight and bias), fc (weight and bias) and both projection weights halved;
  // ln1, ln2 and the two row-parallel biases whole
  const size_t block_tp2 = (3 * C * C + 3 * C + C * C + 4 * C * C + 4 * C + 4 * C * C) / 2 +
                           2 * C + C + 2 * C + C;
  const auto blocks = [](int first, int last, size_t n) {
    std::vector<Expected> out;
    for (int i = first; i < last; ++i) out.push_back({"blocks." + std::to_string(i), n});
    return out;
  };
  const auto join = [](std::vector<Expected> a, const std::vector<Expected>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  };
  {
    GptShard whole(c, ShardSpec{0, 4, true, true, 1, 0}, TensorParallelOps{});
    expect_units(whole, join(join({{"wte", V * C}, {"wpe", maxT * C}}, blocks(0, 4, block)),
                             {{"ln_f", 2 * C}}));
  }
  {
    GptShard embed_only(c, ShardSpec{0, 2, true, false, 1, 0}, TensorParallelOps{});
    expect_units(embed_only, join({{"wte", V * C}, {"wpe", maxT * C}}, blocks(0, 2, block)));
  }
  {
    GptShard middle(c, ShardSpec{1, 3, false, false, 1, 0}, TensorParallelOps{});
    expect_units(middle, blocks(1, 3, block));
  }
  {
    GptShard head_only(c, ShardSpec{3, 4, false, true, 1, 0}, TensorParallelOps{});
    expect_units(head_only, join(blocks(3, 4, block), {{"ln_f", 2 * C}, {"wte", V * C}}));
  }
  {
    GptShard no_blocks(c, ShardSpec{4, 4, false, true, 1, 0}, TensorParallelOps{});
    expect_units(no_blocks, {{"ln_f", 2 * C}, {"wte", V * C}});
  }
  for (int t = 0; t < 2; ++t) {
    GptShard tp2(c, ShardSpec{0, 4, true, true, 2, t}, no_ops());
    expect_units(tp2, join(join({{"wte", 125 * C}, {"wpe", maxT * C}}, blocks(0, 4, block_tp2)),
                           {{"ln_f", 2 * C}}));
    GptShard tp2_head(c, ShardSpec{2, 4, false, true, 2, t}, no_ops());
    expect_units(tp2_head, join(blocks(2, 4, block_tp2), {{"ln_f", 2 * C}, {"wte", 125 * C}}));
  }
}

enum class Kind { kAcquire, kRelease, kReady };

struct Call {
  Kind kind;
  int unit;
  UnitPhase phase;
  bool operator==(const Call&) const = default;
};

std::string describe(const Call& c) {
  const char* kind = c.kind == Kind::kAcquire ? "acquire" : c.kind == Kind::kRelease ? "release"
                                                                                     : "ready";
  const char* phase = c.phase == UnitPhase::kForward    ? "F"
                      : c.phase == UnitPhase::kBackward ? "B"
                                                        : "R";
  return std::string(kind) + "(" + std::to_string(c.unit) +
         (c.kind == Kind::kReady ? "" : std::string(", ") + phase) + ")";
}

class RecordingHooks : public UnitHooks {
 public:
  void acquire(int unit, UnitPhase phase) override { calls.push_back({Kind::kAcquire, unit, phase}); }
  void release(int unit, UnitPhase phase) override { calls.push_back({Kind::kRelease, unit, phase}); }
  void gradient_ready(int unit) override {
    calls.push_back({Kind::kReady, unit, UnitPhase::kBackward});
  }
  std::vector<Call> calls;
};

// The sequence param_units.h states, built here from its text.
class Script {
 public:
  Script& a(int u, UnitPhase p) { return add({Kind::kAcquire, u, p}); }
  Script& r(int u, UnitPhase p) { return add({Kind::kRelease, u, p}); }
  Script& ready(int u) { return add({Kind::kReady, u, UnitPhase::kBackward}); }
  // acquire(u..., p) <use> release(reverse, p)
  Script& use(std::vector<int> units, UnitPhase p) {
    for (int u : units) a(u, p);
    for (size_t i = units.size(); i-- > 0;) r(units[i], p);
    return *this;
  }
  std::vector<Call> calls;

 private:
  Script& add(Call c) {
    calls.push_back(c);
    return *this;
  }
};

void expect_calls(const std::vector<Call>& got, const std::vector<Call>& want) {
  std::string g, w;
  for (const Call& c : got) g += describe(c) + " ";
  for (const Call& c : want) w += describe(c) + " ";
  EXPECT_EQ(g, w);
}

struct Batch {
  std::vector<int32_t> tokens, targets;
};

Batch make_batch(int B, int T, uint64_t seed, bool targets = true) {
  Batch b;
  SplitMix64 rng(seed);
  for (int i = 0; i < B * T; ++i) {
    b.tokens.push_back(static_cast<int32_t>(rng.next() % 250));
    b.targets.push_back(targets ? static_cast<int32_t>(rng.next() % 250) : -1);
  }
  return b;
}

// A 3-block whole shard: units wte 0, wpe 1, blocks.0-2 2..4, ln_f 5.
TEST(GptShardUnitsTest, HooksSeeTheOrderOfParamUnits) {
  constexpr auto F = UnitPhase::kForward, Bk = UnitPhase::kBackward, R = UnitPhase::kRecompute;
  const GptConfig c = test_config(3);
  const Batch b = make_batch(2, 5, 1);
  for (const ActivationPolicy& policy :
       {ActivationPolicy{}, ActivationPolicy{2, false, 1}, ActivationPolicy{2, true, 1}}) {
    for (bool targets : {true, false}) {
      SCOPED_TRACE("checkpoint_every " + std::to_string(policy.checkpoint_every) +
                   (policy.offload ? " offload" : "") + (targets ? "" : ", no targets"));
      GptShard shard(c, ShardSpec{0, 3, true, true, 1, 0}, TensorParallelOps{});
      RecordingHooks hooks;
      shard.set_unit_hooks(&hooks);
      EXPECT_EQ(shard.unit_hooks(), &hooks);
      shard.set_activation_policy(policy);
      shard.init_parameters(kSeed);
      const Batch none = make_batch(2, 5, 1, false);
      shard.forward(0, b.tokens.data(), nullptr, (targets ? b : none).targets.data(), 2, 5,
                    nullptr);
      Script want;
      want.use({0, 1}, F).use({2}, F).use({3}, F).use({4}, F).use({5, 0}, F);
      expect_calls(hooks.calls, want.calls);

      hooks.calls.clear();
      shard.backward(0, nullptr, nullptr, 1.0f);
      Script back;
      back.use({5, 0}, Bk).ready(5);
      if (policy.checkpoint_every == 2) {  // groups {0, 1} and {2}
        back.use({4}, R).use({4}, Bk).ready(4);
        back.use({2}, R).use({3}, R).use({3}, Bk).ready(3).use({2}, Bk).ready(2);
      } else {
        back.use({4}, Bk).ready(4).use({3}, Bk).ready(3).use({2}, Bk).ready(2);
      }
      back.use({0, 1}, Bk).ready(0).ready(1);
      expect_calls(hooks.calls, back.calls);
    }
  }
}

// Head without the embedding: its own wte is the last unit and is ready with ln_f.
TEST(GptShardUnitsTest, HooksOfAHeadChunk) {
  constexpr auto F = UnitPhase::kForward, Bk = UnitPhase::kBackward;
  const GptConfig c = test_config(3);
  GptShard shard(c, ShardSpec{1, 3, false, true, 1, 0}, TensorParallelOps{});  // blocks.1-2 0-1
  RecordingHooks hooks;
  shard.set_unit_hooks(&hooks);
  shard.init_parameters(kSeed);
  const Batch b = make_batch(2, 5, 2);
  const std::vector<float> input(2 * 5 * 16, 0.5f);
  std::vector<float> din(input.size());
  shard.forward(0, nullptr, input.data(), b.targets.data(), 2, 5, nullptr);
  shard.backward(0, nullptr, din.data(), 1.0f);
  Script want;
  want.use({0}, F).use({1}, F).use({2, 3}, F);
  want.use({2, 3}, Bk).ready(2).ready(3).use({1}, Bk).ready(1).use({0}, Bk).ready(0);
  expect_calls(hooks.calls, want.calls);
}

// Hooks that free what the shard is done with, as ZeRO does: a unit's parameters exist only
// between acquire and release (poisoned with NaN, then released, and gathered back from a
// saved copy), its gradient range only from acquire(u, B) to gradient_ready(u) (moved out to an
// accumulator there). A shard that read a parameter or touched a gradient outside its window
// would change the loss or the gradients.
class FreeingHooks : public UnitHooks {
 public:
  explicit FreeingHooks(GptShard& shard) : shard_(shard), grads_(shard.num_params(), 0.0f) {
    saved_.assign(shard.params(), shard.params() + shard.num_params());
    for (const ParamUnit& u : shard.units()) {
      free_params(u);
      shard.grad_storage().release(u.offset, u.count);
    }
  }
  void acquire(int unit, UnitPhase phase) override {
    const ParamUnit& u = shard_.units()[unit];
    if (held_[unit]++ == 0) {
      shard_.param_storage().commit(u.offset, u.count);
      std::copy(saved_.begin() + u.offset, saved_.begin() + u.offset + u.count,
                shard_.params() + u.offset);
    }
    if (phase == UnitPhase::kBackward && !shard_.grad_storage().is_committed(u.offset, u.count)) {
      shard_.grad_storage().commit(u.offset, u.count);
    }
  }
  void release(int unit, UnitPhase) override {
    if (--held_[unit] == 0) free_params(shard_.units()[unit]);
  }
  void gradient_ready(int unit) override {
    const ParamUnit& u = shard_.units()[unit];
    for (size_t i = u.offset; i < u.offset + u.count; ++i) grads_[i] += shard_.grads()[i];
    std::fill(shard_.grads() + u.offset, shard_.grads() + u.offset + u.count,
              std::numeric_limits<float>::quiet_NaN());
    shard_.grad_storage().release(u.offset, u.count);
  }
  const std::vector<float>& grads() const { return grads_; }
  int held(int unit) const { return held_[unit]; }

 private:
  void free_params(const ParamUnit& u) {
    std::fill(shard_.params() + u.offset, shard_.params() + u.offset + u.count,
              std::numeric_limits<float>::quiet_NaN());
    shard_.param_storage().release(u.offset, u.count);
  }
  GptShard& shard_;
  std::vector<float> saved_, grads_;
  std::vector<int> held_ = std::vector<int>(64, 0);
};

TEST(GptShardUnitsTest, FreeingParametersAndGradientsOutsideTheirWindowChangesNothing) {
  openblas_set_num_threads(1);
  const GptConfig c = test_config(3);
  const Batch b = make_batch(3, 6, 3);
  const ShardSpec spec{0, 3, true, true, 1, 0};
  GptShard plain(c, spec, TensorParallelOps{});
  plain.init_parameters(kSeed);
  plain.zero_grad();
  const float want = plain.forward(0, b.tokens.data(), nullptr, b.targets.data(), 3, 6, nullptr);
  plain.backward(0, nullptr, nullptr, 1.0f);
  for (const ActivationPolicy& policy :
       {ActivationPolicy{}, ActivationPolicy{1, false, 1}, ActivationPolicy{2, true, 2}}) {
    SCOPED_TRACE("checkpoint_every " + std::to_string(policy.checkpoint_every));
    GptShard shard(c, spec, TensorParallelOps{});
    shard.set_activation_policy(policy);
    shard.init_parameters(kSeed);
    FreeingHooks hooks(shard);
    shard.set_unit_hooks(&hooks);
    EXPECT_EQ(shard.param_storage().committed(), 0u);
    const float loss =
        shard.forward(0, b.tokens.data(), nullptr, b.targets.data(), 3, 6, nullptr);
    shard.backward(0, nullptr, nullptr, 1.0f);
    EXPECT_EQ(loss, want);
    EXPECT_EQ(shard.param_storage().committed(), 0u);  // every acquire released
    EXPECT_EQ(shard.grad_storage().committed(), 0u);   // every gradient handed over
    for (size_t u = 0; u < shard.units().size(); ++u) EXPECT_EQ(hooks.held(u), 0) << u;
    for (size_t i = 0; i < shard.num_params(); ++i) {
      ASSERT_EQ(hooks.grads()[i], plain.grads()[i]) << i;
    }
  }
}

}  // namespace
}  // namespace plexus::engine
