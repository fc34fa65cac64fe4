// full_runs_test.cpp - full_runs (engine/model/full_runs.h) against the model's own copies
// between layouts: applying the runs to random data equals scatter_into_full and
// extract_from_full for the whole model, pipeline chunks, tensor degrees 2 and 4 and a padded
// vocabulary; over a placement's shards the owned runs cover every full element exactly once.
#include "engine/model/full_runs.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace plexus::engine {
namespace {

// vocab 13: padded to 14 for tp 2 and to 16 for tp 4, so the last wte slices carry padding rows.
GptConfig small_config() {
  return {.vocab_size = 13, .max_seq_len = 8, .n_layer = 4, .n_head = 4, .n_embd = 16};
}

size_t shard_size(const std::vector<ShardTensor>& tensors) {
  return tensors.empty() ? 0 : tensors.back().offset + tensors.back().numel();
}

std::vector<float> random_values(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// The shards of one data-parallel replica: pipeline chunks x tensor ranks.
std::vector<ShardSpec> placement_specs(int chunks, int tp, int n_layer) {
  std::vector<ShardSpec> specs;
  const int per = n_layer / chunks;
  for (int c = 0; c < chunks; ++c) {
    for (int t = 0; t < tp; ++t) {
      specs.push_back({c * per, (c + 1) * per, c == 0, c == chunks - 1, tp, t});
    }
  }
  return specs;
}

struct Case {
  const char* name;
  ShardSpec spec;
};

class FullRunsApply : public ::testing::TestWithParam<Case> {};

TEST_P(FullRunsApply, EqualsScatterAndExtract) {
  const GptConfig config = small_config();
  const ShardSpec s = GetParam().spec;
  const std::vector<ShardTensor> tensors = shard_tensors(config, s);
  const std::vector<FullRun> runs = full_runs(tensors);
  const size_t local = shard_size(tensors), full = full_num_params(config);

  // scatter: shard -> full, over a sentinel so untouched elements show.
  const std::vector<float> shard = random_values(local, 7);
  std::vector<float> expected(full, -7.0f), got(full, -7.0f);
  scatter_into_full(tensors, shard.data(), expected.data());
  for (const FullRun& r : runs) {
    ASSERT_LE(r.local_offset + r.count, local);
    ASSERT_LE(r.full_offset + r.count, full);
    std::memcpy(got.data() + r.full_offset, shard.data() + r.local_offset, r.count * 4);
  }
  EXPECT_TRUE(same_bits(expected, got)) << GetParam().name << ": scatter differs";

  // extract: full -> shard; padding rows stay 0 on both sides.
  const std::vector<float> model = random_values(full, 11);
  std::vector<float> want(local, -3.0f), mine(local, 0.0f);
  extract_from_full(tensors, model.data(), want.data());
  for (const FullRun& r : runs) {
    std::memcpy(mine.data() + r.local_offset, model.data() + r.full_offset, r.count * 4);
  }
  EXPECT_TRUE(same_bits(want, mine)) << GetParam().name << ": extract differs";

  // Increasing, disjoint and maximal: no two neighbours could merge.
  for (size_t i = 1; i < runs.size(); ++i) {
    const FullRun& a = runs[i - 1];
    const FullRun& b = runs[i];
    EXPECT_LE(a.local_offset + a.count, b.local_offset) << "run " << i;
    EXPECT_FALSE(a.local_offset + a.count == b.local_offset &&
                 a.full_offset + a.count == b.full_offset)
        << "runs " << i - 1 << " and " << i << " should have merged";
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shards, FullRunsApply,
    ::testing::Values(Case{"whole", {0, 4, true, true, 1, 0}},
                      Case{"first_chunk", {0, 2, true, false, 1, 0}},
                      Case{"middle_chunk", {1, 3, false, false, 1, 0}},
                      Case{"last_chunk", {2, 4, false, true, 1, 0}},
                      Case{"tp2_rank0", {0, 4, true, true, 2, 0}},
                      Case{"tp2_rank1_padded", {0, 4, true, true, 2, 1}},
                      Case{"tp4_rank2", {0, 4, true, true, 4, 2}},
                      Case{"tp4_rank3_padded", {0, 4, true, true, 4, 3}},
                      Case{"tp2_last_chunk_padded", {2, 4, false, true, 2, 1}}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(FullRuns, WholeModelIsOneRun) {
  const GptConfig config = small_config();
  const std::vector<FullRun> runs = full_runs(shard_tensors(config, {0, 4, true, true, 1, 0}));
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0], (FullRun{0, 0, full_num_params(config)}));
}

TEST(FullRuns, PaddingRowsMapNowhere) {
  const GptConfig config = small_config();
  // tp 4: Vp = 16, 4 rows per rank; rank 3 holds row 12 only, rows 13-15 are padding.
  const std::vector<ShardTensor> tensors = shard_tensors(config, {0, 4, true, true, 4, 3});
  const std::vector<FullRun> runs = full_runs(tensors);
  ASSERT_EQ(tensors[0].name, "wte");
  ASSERT_FALSE(runs.empty());
  EXPECT_EQ(runs[0], (FullRun{0, 12 * 16, 16}));  // one real row of 16 elements
  EXPECT_GE(runs[1].local_offset, tensors[0].numel()) << "a run inside the padding";
}

// Over the shards of a placement, owned runs cover [0, full_num_params) exactly once; full_runs
// covers it at least once.
TEST(FullRuns, OwnedRunsCoverTheModelExactlyOnce) {
  const GptConfig config = small_config();
  const size_t full = full_num_params(config);
  struct Layout {
    int chunks, tp;
  };
  for (const Layout l : {Layout{1, 1}, Layout{2, 1}, Layout{4, 1}, Layout{1, 2}, Layout{1, 4},
                         Layout{2, 2}, Layout{2, 4}}) {
    SCOPED_TRACE("chunks " + std::to_string(l.chunks) + " tp " + std::to_string(l.tp));
    std::vector<int> owned(full, 0), any(full, 0);
    for (const ShardSpec& s : placement_specs(l.chunks, l.tp, config.n_layer)) {
      const std::vector<ShardTensor> tensors = shard_tensors(config, s);
      for (const FullRun& r : owned_full_runs(tensors, s)) {
        for (size_t i = 0; i < r.count; ++i) ++owned[r.full_offset + i];
      }
      for (const FullRun& r : full_runs(tensors)) {
        for (size_t i = 0; i < r.count; ++i) ++any[r.full_offset + i];
      }
    }
    size_t bad = 0;
    for (size_t i = 0; i < full; ++i) {
      if (owned[i] != 1 && ++bad <= 3) ADD_FAILURE() << "element " << i << " owned " << owned[i];
      if (any[i] < 1 && ++bad <= 3) ADD_FAILURE() << "element " << i << " held by no shard";
    }
    EXPECT_EQ(bad, 0u);
  }
}

TEST(FullRuns, ClipKeepsTheMapping) {
  const std::vector<FullRun> runs = {{0, 100, 10}, {10, 50, 5}, {20, 0, 4}};
  EXPECT_EQ(clip_runs(runs, 3, 12), (std::vector<FullRun>{{3, 103, 7}, {10, 50, 2}}));
  EXPECT_EQ(clip_runs(runs, 15, 20), std::vector<FullRun>{});
  EXPECT_EQ(clip_runs(runs, 0, 100), runs);
  EXPECT_EQ(clip_runs(runs, 21, 22), (std::vector<FullRun>{{21, 1, 1}}));
  EXPECT_EQ(run_elements(runs), 19u);
  // Splitting a shard's runs in D shares loses and duplicates nothing.
  const GptConfig config = small_config();
  const std::vector<ShardTensor> tensors = shard_tensors(config, {0, 4, true, true, 2, 1});
  const std::vector<FullRun> all = full_runs(tensors);
  const size_t n = shard_size(tensors);
  size_t total = 0;
  for (size_t d = 0; d < 3; ++d) total += run_elements(clip_runs(all, d * n / 3, (d + 1) * n / 3));
  EXPECT_EQ(total, run_elements(all));
}

}  // namespace
}  // namespace plexus::engine
