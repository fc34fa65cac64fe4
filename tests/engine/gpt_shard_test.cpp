// gpt_shard_test.cpp - GptShard against the single-process Gpt, its reference: the full spec
// (bit-identical), pipeline chunks run in sequence, Megatron tensor parallelism with the tensor
// ranks on threads that meet in an in-test allreduce, microbatches with two in flight, activation
// checkpointing and offloading (bit-identical to keeping everything), the init and the gather of
// shards into the full layout, and the error messages.
#include "engine/model/gpt_shard.h"

#include <cblas.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "engine/model/gpt.h"
#include "engine/model/rng.h"

namespace plexus::engine {
namespace {

constexpr double kRelTol = 1e-5;
constexpr uint64_t kSeed = 1234;

GptConfig test_config(int vocab = 250, int layers = 6) {
  return {.vocab_size = vocab, .max_seq_len = 8, .n_layer = layers, .n_head = 4, .n_embd = 16};
}

// B rows of T tokens; targets random except position 2 of every row, ignored (-1), so every
// row (and so every microbatch of whole rows) has the same number of targets.
struct Batch {
  int B = 4, T = 7;
  std::vector<int32_t> tokens, targets;
};

Batch make_batch(int V, uint64_t seed, int B = 4, int T = 7) {
  Batch b;
  b.B = B, b.T = T;
  SplitMix64 rng(seed);
  for (int i = 0; i < B * T; ++i) {
    b.tokens.push_back(static_cast<int32_t>(rng.next() % static_cast<uint64_t>(V)));
    b.targets.push_back(i % T == 2 ? -1 : static_cast<int32_t>(rng.next() % V));
  }
  return b;
}

// The reference: Gpt's loss and gradients for the whole batch.
struct Reference {
  Gpt model;
  float loss;
  Reference(const GptConfig& c, const Batch& b) : model(c) {
    model.init_parameters(kSeed);
    model.zero_grad();
    loss = model.forward(b.tokens.data(), b.targets.data(), b.B, b.T);
    model.backward();
  }
};

// |got - want| <= kRelTol * (largest |want| of the tensor), element by element.
void expect_close(const float* got, const float* want, size_t n, const std::string& what) {
  float scale = 0.0f;
  for (size_t i = 0; i < n; ++i) scale = std::max(scale, std::fabs(want[i]));
  const double tol = kRelTol * std::max(scale, 1e-30f);
  for (size_t i = 0; i < n; ++i) {
    ASSERT_LE(std::fabs(static_cast<double>(got[i]) - want[i]), tol)
        << what << "[" << i << "]: got " << got[i] << ", want " << want[i];
  }
}

// In-test tensor group: tp threads meet here; every rank gets the sum (or max) taken in rank
// order, so all ranks get the same bits. Waits are bounded; one failing rank aborts the rest.
class Rendezvous {
 public:
  explicit Rendezvous(int n) : n_(n), buffers_(n), counts_(n) {}

  void allreduce(int rank, float* data, size_t count, bool max) {
    buffers_[rank] = data;
    counts_[rank] = count;
    barrier();
    std::vector<float> result(count);
    for (int r = 0; r < n_; ++r) {
      if (counts_[r] != count) fail("rank " + std::to_string(r) + " passed another count");
      for (size_t i = 0; i < count; ++i) {
        const float v = buffers_[r][i];
        result[i] = r == 0 ? v : max ? std::max(result[i], v) : result[i] + v;
      }
    }
    barrier();  // everyone has read every buffer
    std::copy(result.begin(), result.end(), data);
  }

  void abort() {
    std::lock_guard<std::mutex> lock(mu_);
    broken_ = true;
    cv_.notify_all();
  }

 private:
  [[noreturn]] void fail(const std::string& why) {
    abort();
    throw std::runtime_error("rendezvous: " + why);
  }
  void barrier() {
    std::unique_lock<std::mutex> lock(mu_);
    if (broken_) throw std::runtime_error("rendezvous: another rank failed");
    const uint64_t generation = generation_;
    if (++arrived_ == n_) {
      arrived_ = 0;
      ++generation_;
      cv_.notify_all();
      return;
    }
    const bool met = cv_.wait_for(lock, std::chrono::seconds(60),
                                  [&] { return generation_ != generation || broken_; });
    if (!met || broken_) {
      broken_ = true;
      cv_.notify_all();
      throw std::runtime_error(met ? "rendezvous: another rank failed" : "rendezvous: timeout");
    }
  }

  const int n_;
  std::vector<const float*> buffers_;
  std::vector<size_t> counts_;
  std::mutex mu_;
  std::condition_variable cv_;
  int arrived_ = 0;
  uint64_t generation_ = 0;
  bool broken_ = false;
};

// A grid of shards: pipeline chunks [bounds[c], bounds[c+1]) times tp tensor ranks.
struct Grid {
  std::vector<int> bounds;
  int tp = 1;
  int microbatches = 1;
  ActivationPolicy policy{};  // every shard's
};

struct GridRun {
  std::vector<std::vector<GptShard>> shards;  // shards[t][c]
  std::vector<float> loss;                    // per tensor rank: mean over microbatches
};

ShardSpec chunk_spec(const Grid& g, int c, int t) {
  ShardSpec s;
  s.first_block = g.bounds[c];
  s.last_block = g.bounds[c + 1];
  s.embed = c == 0;
  s.head = c + 2 == static_cast<int>(g.bounds.size());
  s.tp_degree = g.tp;
  s.tp_rank = t;
  return s;
}

// One training step's forward and backward on tensor rank t: microbatches in pairs (two in
// flight: forward m, forward m+1, backward m, backward m+1), each through every chunk in turn,
// backward in reverse, loss_scale 1/M.
float run_rank(std::vector<GptShard>& chunks, const GptConfig& c, const Batch& b, int M) {
  const int nc = static_cast<int>(chunks.size()), rows = b.B / M;
  const size_t stride = static_cast<size_t>(rows) * b.T, acts = stride * c.n_embd;
  for (GptShard& s : chunks) {
    s.init_parameters(kSeed);
    s.zero_grad();
  }
  // out[slot][k]: output of chunk k; dout[slot][k]: its gradient
  std::vector<std::vector<std::vector<float>>> out(2), dout(2);
  for (int slot = 0; slot < 2; ++slot) {
    out[slot].assign(nc, std::vector<float>(acts));
    dout[slot].assign(nc, std::vector<float>(acts));
  }
  double loss = 0.0;
  for (int m0 = 0; m0 < M; m0 += 2) {
    const int last = std::min(M, m0 + 2);
    for (int m = m0; m < last; ++m) {
      const int slot = m - m0;
      const int32_t* tokens = b.tokens.data() + m * stride;
      const int32_t* targets = b.targets.data() + m * stride;
      for (int k = 0; k < nc; ++k) {
        const bool head = k == nc - 1;
        loss += chunks[k].forward(slot, k == 0 ? tokens : nullptr,
                                  k == 0 ? nullptr : out[slot][k - 1].data(),
                                  head ? targets : nullptr, rows, b.T,
                                  head ? nullptr : out[slot][k].data());
      }
    }
    for (int m = m0; m < last; ++m) {
      const int slot = m - m0;
      for (int k = nc - 1; k >= 0; --k) {
        chunks[k].backward(slot, k == nc - 1 ? nullptr : dout[slot][k].data(),
                           k == 0 ? nullptr : dout[slot][k - 1].data(), 1.0f / M);
      }
    }
  }
  return static_cast<float>(loss / M);
}

GridRun run_grid(const GptConfig& c, const Grid& g, const Batch& b) {
  GridRun run;
  Rendezvous rendezvous(g.tp);
  const int nc = static_cast<int>(g.bounds.size()) - 1;
  run.shards.resize(g.tp);
  for (int t = 0; t < g.tp; ++t) {
    TensorParallelOps ops;
    ops.allreduce_sum = [&rendezvous, t](float* d, size_t n) {
      rendezvous.allreduce(t, d, n, false);
    };
    ops.allreduce_max = [&rendezvous, t](float* d, size_t n) {
      rendezvous.allreduce(t, d, n, true);
    };
    for (int k = 0; k < nc; ++k) run.shards[t].emplace_back(c, chunk_spec(g, k, t), ops);
    for (GptShard& s : run.shards[t]) s.set_activation_policy(g.policy);
  }
  run.loss.assign(g.tp, 0.0f);
  std::vector<std::string> errors(g.tp);
  std::vector<std::thread> threads;
  for (int t = 0; t < g.tp; ++t) {
    threads.emplace_back([&, t] {
      try {
        run.loss[t] = run_rank(run.shards[t], c, b, g.microbatches);
      } catch (const std::exception& e) {
        errors[t] = e.what();
        rendezvous.abort();
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < g.tp; ++t) EXPECT_EQ(errors[t], "") << "tp rank " << t;
  return run;
}

// Every shard's gradients equal the matching slices of Gpt's; wte's gradient split between the
// first and the last chunk sums to Gpt's. Replicated tensors are bit-equal across tensor ranks.
void expect_grid_matches(const GridRun& run, const Reference& ref) {
  const int tp = static_cast<int>(run.shards.size());
  for (int t = 0; t < tp; ++t) {
    EXPECT_EQ(run.loss[t], run.loss[0]) << "tp rank " << t;
    EXPECT_NEAR(run.loss[t], ref.loss, kRelTol * ref.loss) << "tp rank " << t;
    const std::vector<GptShard>& chunks = run.shards[t];
    const size_t nc = chunks.size();
    for (size_t k = 0; k < nc; ++k) {
      const GptShard& s = chunks[k];
      std::vector<float> want(s.num_params());
      extract_from_full(s.tensors(), ref.model.grads(), want.data());
      for (const ShardTensor& st : s.tensors()) {
        const std::string what = "tp " + std::to_string(t) + " chunk " + std::to_string(k) +
                                 " " + st.name;
        std::vector<float> got(s.grads() + st.offset, s.grads() + st.offset + st.numel());
        if (st.name == "wte" && nc > 1) {  // tied: the two copies' gradients sum to Gpt's
          if (k != 0) continue;
          const GptShard& head = chunks[nc - 1];
          for (const ShardTensor& ht : head.tensors()) {
            if (ht.name != "wte") continue;
            for (size_t i = 0; i < got.size(); ++i) got[i] += head.grads()[ht.offset + i];
          }
        }
        expect_close(got.data(), want.data() + st.offset, st.numel(), what);
        if (st.replicated_in_tp && t > 0) {
          const float* rank0 = run.shards[0][k].grads() + st.offset;
          for (size_t i = 0; i < st.numel(); ++i) {
            ASSERT_EQ(s.grads()[st.offset + i], rank0[i]) << what << "[" << i << "] vs tp 0";
          }
        }
      }
    }
  }
}

class GptShardTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { openblas_set_num_threads(1); }  // tp ranks are threads
};

TEST_F(GptShardTest, FullSpecHasGptsLayoutAndIsBitIdentical) {
  const GptConfig c = test_config();
  const Batch b = make_batch(c.vocab_size, 7);
  const Reference ref(c, b);
  GptShard shard(c, ShardSpec{0, c.n_layer, true, true, 1, 0}, TensorParallelOps{});
  ASSERT_EQ(shard.num_params(), ref.model.num_params());
  EXPECT_EQ(full_num_params(c), ref.model.num_params());
  ASSERT_EQ(shard.tensors().size(), ref.model.param_table().size());
  for (size_t i = 0; i < shard.tensors().size(); ++i) {
    const ShardTensor& t = shard.tensors()[i];
    const ParamTensor& p = ref.model.param_table()[i];
    EXPECT_EQ(t.name, p.name);
    EXPECT_EQ(t.offset, p.offset) << t.name;
    EXPECT_EQ(t.full_offset, p.offset) << t.name;
    EXPECT_EQ(t.full_index, static_cast<int>(i)) << t.name;
    EXPECT_EQ(t.shape, p.shape) << t.name;
    EXPECT_EQ(t.decay, p.decay) << t.name;
    EXPECT_EQ(t.split_dim, -1) << t.name;
    EXPECT_TRUE(t.replicated_in_tp) << t.name;
  }
  EXPECT_EQ(shard.decay_mask(), ref.model.decay_mask());

  shard.init_parameters(kSeed);
  shard.zero_grad();
  const float loss = shard.forward(0, b.tokens.data(), nullptr, b.targets.data(), b.B, b.T,
                                   nullptr);
  shard.backward(0, nullptr, nullptr, 1.0f);
  EXPECT_EQ(loss, ref.loss);
  EXPECT_EQ(shard.num_targets(0), static_cast<size_t>(b.B * (b.T - 1)));
  for (size_t i = 0; i < shard.num_params(); ++i) {
    ASSERT_EQ(shard.params()[i], ref.model.params()[i]) << i;
    ASSERT_EQ(shard.grads()[i], ref.model.grads()[i]) << i;
  }
}

TEST_F(GptShardTest, PipelineChunksInSequenceMatchGpt) {
  const GptConfig c = test_config();
  const Batch b = make_batch(c.vocab_size, 8);
  const Reference ref(c, b);
  for (const std::vector<int>& bounds : std::vector<std::vector<int>>{
           {0, 3, 6}, {0, 2, 4, 6}, {0, 2, 3, 4, 6}, {0, 1, 5, 6}}) {
    SCOPED_TRACE("chunks " + std::to_string(bounds.size() - 1));
    const GridRun run = run_grid(c, Grid{bounds, 1, 1}, b);
    expect_grid_matches(run, ref);
  }
}

TEST_F(GptShardTest, TensorParallelMatchesGpt) {
  const GptConfig c = test_config(250, 2);  // 250 % 4 != 0: two padding rows at tp 4
  const Batch b = make_batch(c.vocab_size, 9);
  const Reference ref(c, b);
  for (int tp : {2, 4}) {
    SCOPED_TRACE("tp " + std::to_string(tp));
    const GridRun run = run_grid(c, Grid{{0, 2}, tp, 1}, b);
    expect_grid_matches(run, ref);
  }
}

TEST_F(GptShardTest, TensorParallelWithARankHoldingOnlyPadding) {
  const GptConfig c = test_config(9, 1);  // Vp 12, 3 rows a rank: rank 3 holds rows 9..11
  const Batch b = make_batch(c.vocab_size, 10);
  const Reference ref(c, b);
  const GridRun run = run_grid(c, Grid{{0, 1}, 4, 1}, b);
  const GptShard& last = run.shards[3][0];
  EXPECT_EQ(last.vocab().begin, 9);
  EXPECT_EQ(last.vocab().rows, 3);
  EXPECT_EQ(last.vocab().valid, 0);
  expect_grid_matches(run, ref);
}

TEST_F(GptShardTest, PipelineTimesTensorParallelMatchesGpt) {
  const GptConfig c = test_config(250, 4);
  const Batch b = make_batch(c.vocab_size, 11);
  const Reference ref(c, b);
  const GridRun run = run_grid(c, Grid{{0, 1, 3, 4}, 2, 1}, b);
  expect_grid_matches(run, ref);
}

TEST_F(GptShardTest, MicrobatchesTwoInFlightEqualOneBatch) {
  const GptConfig c = test_config(250, 3);
  const Batch b = make_batch(c.vocab_size, 12);
  const Reference ref(c, b);
  {
    SCOPED_TRACE("M 4, one chunk");
    expect_grid_matches(run_grid(c, Grid{{0, 3}, 1, 4}, b), ref);
  }
  {
    SCOPED_TRACE("M 2, two chunks, tp 2");
    expect_grid_matches(run_grid(c, Grid{{0, 2, 3}, 2, 2}, b), ref);
  }
}

// The same grid run under two activation policies: equal losses and gradients, bit for bit.
void expect_bit_identical(const GridRun& got, const GridRun& want) {
  ASSERT_EQ(got.shards.size(), want.shards.size());
  for (size_t t = 0; t < got.shards.size(); ++t) {
    EXPECT_EQ(got.loss[t], want.loss[t]) << "tp rank " << t;
    for (size_t k = 0; k < got.shards[t].size(); ++k) {
      const GptShard& a = got.shards[t][k];
      const GptShard& b = want.shards[t][k];
      ASSERT_EQ(a.num_params(), b.num_params());
      for (size_t i = 0; i < a.num_params(); ++i) {
        ASSERT_EQ(a.grads()[i], b.grads()[i]) << "tp " << t << " chunk " << k << " grad " << i;
      }
    }
  }
}

TEST_F(GptShardTest, CheckpointingAndOffloadingAreBitIdenticalToPlain) {
  const GptConfig c = test_config(250, 5);
  const Batch b = make_batch(c.vocab_size, 13);
  const Reference ref(c, b);
  // one chunk; two chunks with four microbatches two in flight; tp 2 with two microbatches;
  // pipeline times tensor parallel
  const std::vector<Grid> grids{
      {{0, 5}, 1, 1}, {{0, 3, 5}, 1, 4}, {{0, 5}, 2, 2}, {{0, 2, 5}, 2, 1}};
  const std::vector<ActivationPolicy> policies{
      {1, false, 1}, {2, false, 1}, {5, false, 1}, {2, true, 1},
      {1, true, 1},  {1, true, 2},  {3, true, 2},  {1, true, 9}};
  for (const Grid& plain_grid : grids) {
    const GridRun plain = run_grid(c, plain_grid, b);
    expect_grid_matches(plain, ref);
    for (const ActivationPolicy& p : policies) {
      SCOPED_TRACE("chunks " + std::to_string(plain_grid.bounds.size() - 1) + ", tp " +
                   std::to_string(plain_grid.tp) + ", M " +
                   std::to_string(plain_grid.microbatches) + ": checkpoint_every " +
                   std::to_string(p.checkpoint_every) + (p.offload ? " offload" : "") +
                   " horizon " + std::to_string(p.loading_horizon));
      Grid g = plain_grid;
      g.policy = p;
      expect_bit_identical(run_grid(c, g, b), plain);
    }
  }
}

TEST_F(GptShardTest, BadActivationPoliciesNameTheField) {
  const GptConfig c = test_config(250, 2);
  GptShard shard(c, ShardSpec{0, 2, true, true, 1, 0}, TensorParallelOps{});
  const std::string at = "GptShard::set_activation_policy (blocks 0-1 +embed +head, tp 0/1): ";
  auto error = [&](const ActivationPolicy& p) -> std::string {
    try {
      shard.set_activation_policy(p);
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(error({-1, false, 1}),
            at + "ActivationPolicy: checkpoint_every -1 < 0 (0: no checkpointing)");
  EXPECT_EQ(error({0, true, 1}),
            at + "ActivationPolicy: offload needs checkpoint_every >= 1 (got 0): only the "
                 "checkpointed block inputs are offloaded");
  EXPECT_EQ(error({1, true, 0}), at + "ActivationPolicy: loading_horizon 0 < 1");
  EXPECT_EQ(error({1, false, -3}), at + "ActivationPolicy: loading_horizon -3 < 1");
  EXPECT_EQ(error({3, true, 2}), "");  // N above the block count: one group
  EXPECT_EQ(shard.activation_policy(), (ActivationPolicy{3, true, 2}));

  const Batch b = make_batch(c.vocab_size, 14, 2, 4);
  shard.init_parameters(kSeed);
  EXPECT_EQ(error({1, true, 0}), at + "ActivationPolicy: loading_horizon 0 < 1");
  EXPECT_EQ(shard.activation_policy(), (ActivationPolicy{3, true, 2}));  // unchanged
  // a new policy drops a forward left in a slot (validation): its backward has nothing to use
  shard.forward(0, b.tokens.data(), nullptr, b.targets.data(), b.B, b.T, nullptr);
  EXPECT_EQ(error({}), "");
  EXPECT_EQ(shard.num_slots(), 0);
  EXPECT_THROW(shard.backward(0, nullptr, nullptr, 1.0f), std::logic_error);
}

TEST_F(GptShardTest, InitIsTheSliceOfGptsInitAndShardsReassembleIt) {
  const GptConfig c = test_config(250, 6);
  Gpt model(c);
  model.init_parameters(kSeed);
  for (int tp : {1, 2, 4}) {
    const Grid g{{0, 2, 3, 6}, tp, 1};
    std::vector<float> full(full_num_params(c), std::numeric_limits<float>::quiet_NaN());
    for (int t = 0; t < tp; ++t) {
      for (int k = 0; k + 1 < static_cast<int>(g.bounds.size()); ++k) {
        const ShardSpec spec = chunk_spec(g, k, t);
        TensorParallelOps none;
        none.allreduce_sum = none.allreduce_max = [](float*, size_t) {};
        GptShard s(c, spec, none);
        s.init_parameters(kSeed);
        std::vector<float> want(s.num_params());
        extract_from_full(s.tensors(), model.params(), want.data());
        for (size_t i = 0; i < s.num_params(); ++i) {
          ASSERT_EQ(s.params()[i], want[i]) << spec.describe() << " element " << i;
        }
        EXPECT_EQ(shard_tensors(c, spec).size(), s.tensors().size());
        scatter_into_full(s.tensors(), s.params(), full.data());
      }
    }
    for (size_t i = 0; i < full.size(); ++i) {
      ASSERT_EQ(full[i], model.params()[i]) << "tp " << tp << " element " << i;
    }
  }
}

TEST_F(GptShardTest, TensorSlicesFollowMegatron) {
  const GptConfig c = test_config(250, 2);
  const std::vector<ShardTensor> t = shard_tensors(c, ShardSpec{1, 2, false, true, 4, 3});
  auto find = [&](const std::string& name) {
    for (const ShardTensor& x : t) {
      if (x.name == name) return x;
    }
    ADD_FAILURE() << name << " missing";
    return ShardTensor{};
  };
  const int C = c.n_embd;
  ShardTensor qkv = find("blocks.1.attn.qkv.weight");
  EXPECT_EQ(qkv.shape, (std::vector<int>{3 * C / 4, C}));
  EXPECT_EQ(qkv.split_dim, 0);
  EXPECT_EQ(qkv.split_parts, 3);
  EXPECT_EQ(qkv.split_begin, 3 * C / 4);
  EXPECT_EQ(qkv.split_end, C);
  ShardTensor proj = find("blocks.1.mlp.proj.weight");
  EXPECT_EQ(proj.shape, (std::vector<int>{C, C}));
  EXPECT_EQ(proj.split_dim, 1);
  EXPECT_EQ(proj.split_begin, 3 * C);
  EXPECT_FALSE(proj.replicated_in_tp);
  EXPECT_TRUE(find("blocks.1.mlp.proj.bias").replicated_in_tp);
  EXPECT_TRUE(find("ln_f.weight").replicated_in_tp);
  ShardTensor wte = find("wte");  // head-only chunk: its own copy, last in the buffer
  EXPECT_EQ(t.back().name, "wte");
  EXPECT_EQ(wte.shape, (std::vector<int>{63, C}));  // Vp 252 / 4
  EXPECT_EQ(wte.split_begin, 189);
  EXPECT_EQ(wte.split_end, 250);
  EXPECT_EQ(wte.full_offset, 0u);
}

std::string construct_error(const GptConfig& c, const ShardSpec& s) {
  TensorParallelOps ops;
  ops.allreduce_sum = ops.allreduce_max = [](float*, size_t) {};
  try {
    GptShard shard(c, s, ops);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST_F(GptShardTest, BadSpecsNameTheFieldValueAndRange) {
  const GptConfig c = test_config(250, 6);
  EXPECT_EQ(construct_error(c, ShardSpec{0, 6, true, true, 3, 0}),
            "ShardSpec: tp_degree 3 does not divide n_head 4");
  EXPECT_EQ(construct_error(c, ShardSpec{0, 6, true, true, 8, 0}),
            "ShardSpec: tp_degree 8 not in 1..4 (n_head)");
  EXPECT_EQ(construct_error(c, ShardSpec{0, 6, true, true, 2, 2}),
            "ShardSpec: tp_rank 2 not in 0..1 (tp_degree - 1)");
  EXPECT_EQ(construct_error(c, ShardSpec{4, 7, true, true, 1, 0}),
            "ShardSpec: last_block 7 not in 4..6 (first_block..n_layer)");
  EXPECT_EQ(construct_error(c, ShardSpec{-1, 2, true, true, 1, 0}),
            "ShardSpec: first_block -1 not in 0..6 (n_layer)");
  GptConfig bad = c;
  bad.n_layer = 0;
  EXPECT_EQ(construct_error(bad, ShardSpec{}), "GptConfig: n_layer 0 not in 1..1048576");
  try {
    GptShard shard(c, ShardSpec{0, 6, true, true, 2, 0}, TensorParallelOps{});
    ADD_FAILURE() << "no error without ops at tp 2";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(),
                 "GptShard (blocks 0-5 +embed +head, tp 0/2): tp_degree 2 needs both "
                 "TensorParallelOps functions");
  }
}

std::string forward_error(GptShard& s, int slot, const int32_t* tokens, const float* input,
                          const int32_t* targets, int B, int T, float* output) {
  try {
    s.forward(slot, tokens, input, targets, B, T, output);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST_F(GptShardTest, BadCallsNameTheArgumentAndRange) {
  const GptConfig c = test_config(250, 2);
  GptShard mid(c, ShardSpec{1, 2, false, false, 1, 0}, TensorParallelOps{});
  std::vector<float> acts(2 * 3 * c.n_embd);
  const std::string at = "GptShard::forward (blocks 1-1, tp 0/1): ";
  EXPECT_EQ(forward_error(mid, 0, nullptr, nullptr, nullptr, 2, 3, acts.data()),
            at + "input is null (this shard does not embed)");
  EXPECT_EQ(forward_error(mid, 0, nullptr, acts.data(), nullptr, 2, 3, nullptr),
            at + "output is null (this shard has no head)");
  EXPECT_EQ(forward_error(mid, 1, nullptr, acts.data(), nullptr, 2, 3, acts.data()),
            at + "slot 1 not in 0..0");
  EXPECT_EQ(forward_error(mid, 0, nullptr, acts.data(), nullptr, 0, 3, acts.data()),
            at + "B 0 < 1");
  EXPECT_EQ(forward_error(mid, 0, nullptr, acts.data(), nullptr, 1, 9, acts.data()),
            at + "T 9 not in 1..8 (max_seq_len)");
  try {
    mid.backward(0, acts.data(), acts.data(), 1.0f);
    ADD_FAILURE() << "backward of an empty slot";
  } catch (const std::logic_error& e) {
    EXPECT_STREQ(e.what(),
                 "GptShard::backward (blocks 1-1, tp 0/1): slot 0 holds no forward (forward "
                 "fills slots 0..0, backward frees them)");
  }

  GptShard full(c, ShardSpec{0, 2, true, true, 1, 0}, TensorParallelOps{});
  const std::vector<int32_t> tokens{1, 2, 250}, targets{1, -1, 250};
  const std::string fat = "GptShard::forward (blocks 0-1 +embed +head, tp 0/1): ";
  EXPECT_EQ(forward_error(full, 0, tokens.data(), nullptr, targets.data(), 1, 3, nullptr),
            fat + "tokens[2] 250 not in 0..249");
  const std::vector<int32_t> ok{1, 2, 3};
  EXPECT_EQ(forward_error(full, 0, ok.data(), nullptr, targets.data(), 1, 3, nullptr),
            fat + "targets[2] 250 not in 0..249 (or < 0 to ignore)");
  EXPECT_EQ(forward_error(full, 0, ok.data(), nullptr, nullptr, 1, 3, nullptr),
            fat + "targets is null (this shard computes the loss)");
  // a microbatch without targets: loss 0, backward adds nothing
  const std::vector<int32_t> none{-1, -1, -1};
  full.init_parameters(kSeed);
  full.zero_grad();
  EXPECT_EQ(full.forward(0, ok.data(), nullptr, none.data(), 1, 3, nullptr), 0.0f);
  full.backward(0, nullptr, nullptr, 1.0f);
  for (size_t i = 0; i < full.num_params(); ++i) ASSERT_EQ(full.grads()[i], 0.0f) << i;
}

}  // namespace
}  // namespace plexus::engine
