// gpt_shard_memory_test.cpp - what a GptShard holds, as its private MemoryTracker counts it:
// parameters and gradients (4 bytes a parameter, or none when built without them committed, as
// ZeRO builds them), and the activation peaks of keeping every
// block's activations, of checkpointing every N blocks and of offloading the checkpointed inputs
// to the host pool, each against the figure computed from the shapes here.
#include <cblas.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/memory/memory_tracker.h"
#include "engine/model/gpt_shard.h"
#include "engine/model/rng.h"

namespace plexus::engine {
namespace {

constexpr uint64_t kSeed = 99;
constexpr int64_t kFloat = 4;  // bytes

GptConfig test_config(int layers) {
  return {.vocab_size = 250, .max_seq_len = 8, .n_layer = layers, .n_head = 4, .n_embd = 16};
}

// Floats of the pieces, from the shapes (tp 1): B rows of T tokens, width C, NH heads, V rows.
struct Shapes {
  int64_t B, T, C, NH, V;
  int64_t BT() const { return B * T; }
  int64_t BTC() const { return B * T * C; }
  // ln1, atty, attproj, res2, ln2, fcproj, res3 (7 BTC), qkv (3), fch, fch_gelu (4 + 4);
  // four means/rstds (B,T); att (B,NH,T,T)
  int64_t block_acts() const { return 18 * BTC() + 4 * BT() + B * NH * T * T; }
  // dln1, dattproj, dln2, dfcproj, dqkv (3), datty (1), dfch, dfch_gelu (4 + 4); att (T,T)
  int64_t block_scratch() const { return 16 * BTC() + T * T; }
  // ln_f (B,T,C), mean, rstd, losses (B,T), logits and probs (B,T,V)
  int64_t head_acts() const { return BTC() + 3 * BT() + 2 * BT() * V; }
  // dstream a/b, dres2, the block scratch; head: dlnf, dlogits, the loss statistics (3 BT)
  int64_t workspace(bool head) const {
    return 3 * BTC() + block_scratch() + (head ? BTC() + BT() * V + 3 * BT() : 0);
  }
  // what forward keeps besides the blocks: tokens (embed), head activations and targets (head)
  int64_t slot_rest(const ShardSpec& s) const {
    return (s.embed ? BT() : 0) + (s.head ? head_acts() + BT() : 0);
  }
};

struct Batch {
  std::vector<int32_t> tokens, targets;
  std::vector<float> input, output, dout, din;
};

Batch make_batch(const Shapes& sh, uint64_t seed) {
  Batch b;
  SplitMix64 rng(seed);
  for (int64_t i = 0; i < sh.BT(); ++i) {
    b.tokens.push_back(static_cast<int32_t>(rng.next() % 250));
    b.targets.push_back(static_cast<int32_t>(rng.next() % 250));
  }
  NormalSampler normal(seed);
  for (int64_t i = 0; i < sh.BTC(); ++i) {
    b.input.push_back(static_cast<float>(normal.next()));
    b.dout.push_back(static_cast<float>(0.01 * normal.next()));
  }
  b.output.resize(sh.BTC());
  b.din.resize(sh.BTC());
  return b;
}

// One shard with its own tracker; forward/backward of `slot` on the batch.
struct ShardRun {
  MemoryTracker tracker;
  GptShard shard;
  ShardRun(const GptConfig& c, const ShardSpec& spec, const ActivationPolicy& policy)
      : shard(c, spec, TensorParallelOps{}, &tracker) {
    shard.set_activation_policy(policy);
    shard.init_parameters(kSeed);
  }
  void forward(int slot, Batch& b, int B, int T) {
    const ShardSpec& s = shard.spec();
    shard.forward(slot, s.embed ? b.tokens.data() : nullptr, s.embed ? nullptr : b.input.data(),
                  s.head ? b.targets.data() : nullptr, B, T, s.head ? nullptr : b.output.data());
  }
  void backward(int slot, Batch& b) {
    const ShardSpec& s = shard.spec();
    shard.backward(slot, s.head ? nullptr : b.dout.data(), s.embed ? nullptr : b.din.data(),
                   1.0f);
  }
  int64_t device_acts() const { return tracker.current(MemoryPool::kDevice, kActs); }
  int64_t device_peak() const { return tracker.peak(MemoryPool::kDevice, kActs); }
  int64_t host_acts() const { return tracker.current(MemoryPool::kHost, kActs); }
  int64_t host_peak() const { return tracker.peak(MemoryPool::kHost, kActs); }
  static constexpr MemoryCategory kActs = MemoryCategory::kActivations;
};

class GptShardMemoryTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { openblas_set_num_threads(1); }
};

TEST_F(GptShardMemoryTest, ParametersAndGradientsAreFourBytesEach) {
  const GptConfig c = test_config(4);
  TensorParallelOps none;
  none.allreduce_sum = none.allreduce_max = [](float*, size_t) {};
  for (const ShardSpec& spec : {ShardSpec{0, 4, true, true, 1, 0}, ShardSpec{0, 2, true, false, 1, 0},
                                ShardSpec{2, 4, false, true, 2, 1}}) {
    SCOPED_TRACE(spec.describe());
    MemoryTracker tracker;
    {
      GptShard shard(c, spec, none, &tracker);
      const int64_t bytes = kFloat * static_cast<int64_t>(shard.num_params());
      EXPECT_EQ(tracker.current(MemoryPool::kDevice, MemoryCategory::kParameters), bytes);
      EXPECT_EQ(tracker.current(MemoryPool::kDevice, MemoryCategory::kGradients), bytes);
      EXPECT_EQ(tracker.peak(MemoryPool::kDevice, MemoryCategory::kParameters), bytes);
      EXPECT_EQ(tracker.current(MemoryPool::kHost, MemoryCategory::kParameters), 0);
      EXPECT_EQ(shard.param_storage().data(), shard.params());
      EXPECT_EQ(shard.grad_storage().data(), shard.grads());
      // a unit's range given back and taken again, at the same address
      const ParamUnit& u = shard.units().back();
      float* before = shard.params();
      shard.param_storage().release(u.offset, u.count);
      EXPECT_EQ(tracker.current(MemoryPool::kDevice, MemoryCategory::kParameters),
                bytes - kFloat * static_cast<int64_t>(u.count));
      shard.param_storage().commit(u.offset, u.count);
      EXPECT_EQ(shard.params(), before);
      EXPECT_EQ(tracker.current(MemoryPool::kDevice, MemoryCategory::kParameters), bytes);
    }
    EXPECT_EQ(tracker.current_total(MemoryPool::kDevice), 0);  // all given back
  }
}

TEST_F(GptShardMemoryTest, ZeroGradZeroesOnlyCommittedRanges) {
  const GptConfig c = test_config(2);
  MemoryTracker tracker;
  GptShard shard(c, ShardSpec{0, 2, true, true, 1, 0}, TensorParallelOps{}, &tracker);
  std::fill(shard.grads(), shard.grads() + shard.num_params(), 3.0f);
  const ParamUnit& block = shard.units()[2];  // blocks.0
  ASSERT_EQ(block.name, "blocks.0");
  shard.grad_storage().release(block.offset, block.count);
  shard.zero_grad();
  EXPECT_EQ(shard.grad_storage().committed(), shard.num_params() - block.count);
  for (size_t i = 0; i < shard.num_params(); ++i) {
    if (i >= block.offset && i < block.offset + block.count) continue;
    ASSERT_EQ(shard.grads()[i], 0.0f) << i;
  }
}

// StorageOptions: a buffer built uncommitted accounts nothing, ever, until a range is committed;
// zero_grad leaves released gradient ranges alone.
TEST_F(GptShardMemoryTest, BuffersBuiltUncommittedAccountNothingUntilCommitted) {
  const GptConfig c = test_config(2);
  const ShardSpec spec{0, 2, true, true, 1, 0};
  for (const StorageOptions storage : {StorageOptions{true, false}, StorageOptions{false, false},
                                       StorageOptions{false, true}}) {
    SCOPED_TRACE(std::string("params ") + (storage.params_committed ? "committed" : "released") +
                 ", grads " + (storage.grads_committed ? "committed" : "released"));
    MemoryTracker tracker;
    GptShard shard(c, spec, TensorParallelOps{}, &tracker, storage);
    const size_t n = shard.num_params();
    const int64_t bytes = kFloat * static_cast<int64_t>(n);
    EXPECT_EQ(shard.param_storage().committed(), storage.params_committed ? n : 0u);
    EXPECT_EQ(shard.grad_storage().committed(), storage.grads_committed ? n : 0u);
    EXPECT_EQ(tracker.current(MemoryPool::kDevice, MemoryCategory::kParameters),
              storage.params_committed ? bytes : 0);
    EXPECT_EQ(tracker.current(MemoryPool::kDevice, MemoryCategory::kGradients),
              storage.grads_committed ? bytes : 0);
    shard.zero_grad();
    EXPECT_EQ(shard.grad_storage().committed(), storage.grads_committed ? n : 0u);
    // One unit's gradient committed (as ZeRO-2's acquire does), written, then zeroed.
    const ParamUnit& block = shard.units()[3];  // blocks.1
    ASSERT_EQ(block.name, "blocks.1");
    shard.grad_storage().commit(block.offset, block.count);
    std::fill(shard.grads() + block.offset, shard.grads() + block.offset + block.count, 2.0f);
    shard.zero_grad();
    for (size_t i = block.offset; i < block.offset + block.count; ++i) {
      ASSERT_EQ(shard.grads()[i], 0.0f) << i;
    }
    EXPECT_EQ(shard.grad_storage().committed(), storage.grads_committed ? n : block.count);
    const int64_t grad_peak = storage.grads_committed
                                  ? bytes
                                  : kFloat * static_cast<int64_t>(block.count);
    EXPECT_EQ(tracker.peak(MemoryPool::kDevice, MemoryCategory::kGradients), grad_peak);
    EXPECT_EQ(tracker.peak(MemoryPool::kDevice, MemoryCategory::kParameters),
              storage.params_committed ? bytes : 0);
  }
}

// The device activation peak of one microbatch's forward and backward, for a shard with nb
// blocks, under each policy, against the shapes: plain keeps x0 and every block's activations;
// checkpointing every N keeps G = ceil(nb/N) group inputs (+ the last block's output for the
// head) and recomputes into a min(N, nb)-block area; offloading moves the G inputs to the host,
// leaving at most min(horizon, G) of them on the device at once.
void expect_policy_peaks(const GptConfig& c, const ShardSpec& spec) {
  const int nb = spec.last_block - spec.first_block;
  const Shapes sh{4, 7, c.n_embd, c.n_head, c.vocab_size};
  Batch b = make_batch(sh, 5);
  const int64_t work = sh.workspace(spec.head), rest = sh.slot_rest(spec);
  ShardRun plain(c, spec, ActivationPolicy{});
  plain.forward(0, b, 4, 7);
  plain.backward(0, b);
  const int64_t plain_floats = sh.BTC() + nb * sh.block_acts() + rest + work;
  EXPECT_EQ(plain.device_peak(), kFloat * plain_floats);
  EXPECT_EQ(plain.host_peak(), 0);
  for (int every : {1, 2, 3}) {
    const int64_t G = (nb + every - 1) / every;
    const int64_t inputs = G * sh.BTC(), output = spec.head ? sh.BTC() : 0;
    const int64_t ckpt_floats =
        inputs + output + rest + work + std::min(every, nb) * sh.block_acts();
    SCOPED_TRACE("every " + std::to_string(every));
    ShardRun ckpt(c, spec, ActivationPolicy{every, false, 1});
    ckpt.forward(0, b, 4, 7);
    ckpt.backward(0, b);
    EXPECT_EQ(ckpt.device_peak(), kFloat * ckpt_floats);
    // one group of every block saves nothing: a head chunk keeps its output besides its input
    if (every < nb) {
      EXPECT_LT(ckpt.device_peak(), plain.device_peak());
    }
    EXPECT_EQ(ckpt.host_peak(), 0);
    for (int horizon : {1, 2, 9}) {
      SCOPED_TRACE("offload, horizon " + std::to_string(horizon));
      ShardRun off(c, spec, ActivationPolicy{every, true, horizon});
      off.forward(0, b, 4, 7);
      // after the forward every input is on the host and none on the device
      EXPECT_EQ(off.host_acts(), kFloat * inputs);
      EXPECT_EQ(off.device_acts(), kFloat * (ckpt_floats - inputs));
      off.backward(0, b);
      const int64_t on_device = std::min<int64_t>(horizon, G);
      EXPECT_EQ(off.device_peak(), kFloat * (ckpt_floats - inputs + on_device * sh.BTC()));
      EXPECT_EQ(ckpt.device_peak() - off.device_peak(), kFloat * (G - on_device) * sh.BTC());
      EXPECT_EQ(off.host_peak(), kFloat * inputs);
      EXPECT_EQ(off.host_acts(), 0);  // all brought back, and dropped after their backward
      EXPECT_EQ(off.device_acts(), kFloat * (ckpt_floats - inputs));
    }
  }
}

TEST_F(GptShardMemoryTest, ActivationPeaksOfAWholeShard) {
  expect_policy_peaks(test_config(4), ShardSpec{0, 4, true, true, 1, 0});
}

TEST_F(GptShardMemoryTest, ActivationPeaksOfAMiddleChunk) {
  expect_policy_peaks(test_config(6), ShardSpec{1, 6, false, false, 1, 0});
}

TEST_F(GptShardMemoryTest, ActivationPeaksOfAHeadChunk) {
  expect_policy_peaks(test_config(6), ShardSpec{3, 6, false, true, 1, 0});
}

// 1F1B keeps several microbatches in flight: each slot offloads its own inputs.
TEST_F(GptShardMemoryTest, TwoSlotsInFlightOffloadTwiceTheInputs) {
  const GptConfig c = test_config(4);
  const Shapes sh{2, 5, c.n_embd, c.n_head, c.vocab_size};
  Batch b0 = make_batch(sh, 6), b1 = make_batch(sh, 7);
  ShardRun off(c, ShardSpec{0, 4, true, true, 1, 0}, ActivationPolicy{2, true, 1});
  off.forward(0, b0, 2, 5);
  off.forward(1, b1, 2, 5);
  EXPECT_EQ(off.host_acts(), kFloat * 2 * 2 * sh.BTC());  // 2 slots x 2 groups
  off.backward(0, b0);
  EXPECT_EQ(off.host_acts(), kFloat * 2 * sh.BTC());
  off.backward(1, b1);
  EXPECT_EQ(off.host_acts(), 0);
  EXPECT_EQ(off.host_peak(), kFloat * 4 * sh.BTC());
  // a forward over a slot still in flight (validation) drops what it had offloaded
  off.forward(0, b0, 2, 5);
  off.forward(0, b1, 2, 5);
  EXPECT_EQ(off.host_acts(), kFloat * 2 * sh.BTC());
  off.backward(0, b1);
  EXPECT_EQ(off.host_acts(), 0);
}

// A new policy drops the slots: what it keeps is laid out afresh.
TEST_F(GptShardMemoryTest, ChangingThePolicyReleasesTheOldActivations) {
  const GptConfig c = test_config(4);
  const ShardSpec spec{0, 4, true, true, 1, 0};
  const Shapes sh{4, 7, c.n_embd, c.n_head, c.vocab_size};
  Batch b = make_batch(sh, 8);
  ShardRun run(c, spec, ActivationPolicy{});
  run.forward(0, b, 4, 7);
  run.backward(0, b);
  const int64_t work = sh.workspace(true);
  EXPECT_EQ(run.device_acts(), kFloat * (sh.BTC() + 4 * sh.block_acts() + sh.slot_rest(spec) + work));
  run.shard.set_activation_policy(ActivationPolicy{4, false, 1});
  EXPECT_EQ(run.device_acts(), kFloat * work);
  run.forward(0, b, 4, 7);
  run.backward(0, b);
  EXPECT_EQ(run.device_acts(),
            kFloat * (2 * sh.BTC() + sh.slot_rest(spec) + work + 4 * sh.block_acts()));
}

}  // namespace
}  // namespace plexus::engine
