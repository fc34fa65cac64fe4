// unit_partition_test.cpp - ZeRO's split of a chunk's units over the data-parallel ranks
// (unit_partition.h) and the work on a rank's owned elements (shard_step.h): every element is
// owned by exactly one rank, parts are ceil(count/|D|) with the padding at the end, pieces
// never cross a tensor, and AdamW stepped shard by shard (on the device or offloaded to host
// copies) gives bit for bit what one AdamW step over the whole buffer gives.
#include "engine/state/unit_partition.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "engine/memory/memory_tracker.h"
#include "engine/model/gpt_shard.h"
#include "engine/model/rng.h"
#include "engine/optim/adamw.h"
#include "engine/state/shard_step.h"

namespace plexus::engine {
namespace {

using ::testing::HasSubstr;

std::vector<ParamUnit> make_units(const std::vector<size_t>& counts) {
  std::vector<ParamUnit> units;
  size_t offset = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    units.push_back(ParamUnit{fmt::format("u{}", i), offset, counts[i]});
    offset += counts[i];
  }
  return units;
}

TEST(UnitPartition, PartsAreCeilOfCountOverDegreeWithPaddingAtTheEnd) {
  // A unit of 10 over 4 ranks: parts of 3; ranks own 3, 3, 3, 1. A unit of 2: parts of 1;
  // ranks 2 and 3 own nothing. A unit of 8 divides evenly.
  const std::vector<ParamUnit> units = make_units({10, 2, 8});
  const size_t owned[4][3] = {{3, 1, 2}, {3, 1, 2}, {3, 0, 2}, {1, 0, 2}};
  const size_t begin[4][3] = {{0, 0, 0}, {3, 1, 2}, {6, 2, 4}, {9, 2, 6}};
  for (int d = 0; d < 4; ++d) {
    SCOPED_TRACE(fmt::format("rank {}", d));
    const UnitPartition p(units, 4, d);
    ASSERT_EQ(p.num_units(), 3);
    EXPECT_EQ(p.shard_elements(), 3u + 1u + 2u);
    EXPECT_EQ(p.total_elements(), 20u);
    EXPECT_EQ(p.max_padded_unit(), 12u);
    for (int u = 0; u < 3; ++u) {
      EXPECT_EQ(p.slice(u).owned, owned[d][u]) << "unit " << u;
      EXPECT_EQ(p.slice(u).begin, begin[d][u]) << "unit " << u;
      EXPECT_EQ(p.slice(u).unit_offset, units[u].offset);
    }
    EXPECT_EQ(p.slice(0).shard_offset, 0u);
    EXPECT_EQ(p.slice(1).shard_offset, 3u);
    EXPECT_EQ(p.slice(2).shard_offset, 4u);
    EXPECT_FALSE(p.slice(0).even(4));
    EXPECT_FALSE(p.slice(1).even(4));
    EXPECT_TRUE(p.slice(2).even(4));
    EXPECT_EQ(p.slice(2).full_begin(), 12u + 2u * d);
  }
}

TEST(UnitPartition, EveryElementHasExactlyOneOwnerForEveryDegree) {
  const std::vector<ParamUnit> units = make_units({1, 7, 12, 1009, 64, 3});
  for (int degree : {1, 2, 3, 4, 7, 16}) {
    SCOPED_TRACE(fmt::format("degree {}", degree));
    std::vector<int> owners(1 + 7 + 12 + 1009 + 64 + 3, 0);
    size_t owned_total = 0;
    for (int d = 0; d < degree; ++d) {
      const UnitPartition p(units, degree, d);
      owned_total += p.owned_elements();
      size_t shard = 0;
      for (int u = 0; u < p.num_units(); ++u) {
        const UnitSlice& s = p.slice(u);
        EXPECT_EQ(s.part, (units[u].count + degree - 1) / degree);
        EXPECT_EQ(s.shard_offset, shard);
        shard += s.part;
        EXPECT_LE(s.owned, s.part);
        for (size_t i = 0; i < s.owned; ++i) ++owners[s.full_begin() + i];
      }
      EXPECT_EQ(p.shard_elements(), shard);
    }
    EXPECT_EQ(owned_total, owners.size());
    for (size_t i = 0; i < owners.size(); ++i) ASSERT_EQ(owners[i], 1) << "element " << i;
  }
}

TEST(UnitPartition, DegreeOneIsTheWholeBufferInItsOwnLayout) {
  const std::vector<ParamUnit> units = make_units({5, 9, 2});
  const UnitPartition p(units, 1, 0);
  for (int u = 0; u < 3; ++u) {
    EXPECT_EQ(p.slice(u).shard_offset, units[u].offset);
    EXPECT_EQ(p.slice(u).owned, units[u].count);
    EXPECT_TRUE(p.slice(u).even(1));
  }
  EXPECT_EQ(p.shard_elements(), 16u);
}

TEST(UnitPartition, BadArgumentsNameTheArgumentAndTheRange) {
  const std::vector<ParamUnit> units = make_units({4, 4});
  try {
    UnitPartition(units, 0, 0);
    ADD_FAILURE() << "degree 0 accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("UnitPartition: degree 0 not >= 1"));
  }
  try {
    UnitPartition(units, 4, 4);
    ADD_FAILURE() << "rank 4 of 4 accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("UnitPartition: rank 4 not in 0..3"));
  }
  std::vector<ParamUnit> gap = units;
  gap[1].offset = 5;
  try {
    UnitPartition(gap, 2, 0);
    ADD_FAILURE() << "a gap accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("unit 'u1' starts at element 5, expected 4"));
  }
}

// ---- the model's own units ---------------------------------------------------------------

GptConfig small_config() {
  return {.vocab_size = 37, .max_seq_len = 8, .n_layer = 3, .n_head = 2, .n_embd = 8};
}

TEST(OwnedPieces, EachOwnedElementOnceAndInsideOneTensor) {
  const GptConfig config = small_config();
  for (const ShardSpec spec : {ShardSpec{0, 3, true, true, 1, 0}, ShardSpec{1, 3, false, true, 2, 1},
                               ShardSpec{0, 1, true, false, 1, 0}}) {
    SCOPED_TRACE(spec.describe());
    GptShard shard(config, spec, TensorParallelOps{[](float*, size_t) {}, [](float*, size_t) {}});
    const std::vector<ShardTensor>& tensors = shard.tensors();
    for (int degree : {1, 3, 5}) {
      std::vector<int> seen(shard.num_params(), 0);
      for (int d = 0; d < degree; ++d) {
        const UnitPartition p(shard.units(), degree, d);
        std::vector<int> shard_seen(p.shard_elements(), 0);
        for_each_owned_piece(tensors, p, [&](int unit, const ShardTensor& t, size_t full,
                                             size_t at, size_t n) {
          ASSERT_GE(full, p.slice(unit).full_begin());
          ASSERT_LE(full + n, p.slice(unit).full_begin() + p.slice(unit).owned);
          ASSERT_GE(full, t.offset);
          ASSERT_LE(full + n, t.offset + t.numel()) << t.name;
          ASSERT_LE(at + n, p.shard_elements());
          for (size_t i = 0; i < n; ++i) ++seen[full + i], ++shard_seen[at + i];
        });
        size_t counted = 0;
        for (int v : shard_seen) counted += v;
        EXPECT_EQ(counted, p.owned_elements());
      }
      for (size_t i = 0; i < seen.size(); ++i) ASSERT_EQ(seen[i], 1) << "element " << i;
    }
  }
}

// AdamW over the whole buffer with the decay mask (what the trainer did before ZeRO) against
// AdamW shard by shard: parameters in full or shard space, on the device or offloaded.
TEST(AdamwOwned, ShardsStepBitIdenticallyToTheWholeBuffer) {
  const GptConfig config = small_config();
  GptShard shard(config, ShardSpec{0, 3, true, true, 1, 0}, TensorParallelOps{});
  const size_t n = shard.num_params();
  const std::vector<uint8_t> mask = shard.decay_mask();
  SplitMix64 rng(7);
  auto uniform = [&] { return static_cast<float>(static_cast<double>(rng.next() >> 11) * 0x1.0p-53 - 0.5); };
  std::vector<float> p0(n), g1(n), g2(n);
  for (size_t i = 0; i < n; ++i) p0[i] = uniform(), g1[i] = uniform(), g2[i] = 0.1f * uniform();
  AdamWConfig adam;
  adam.lr = 3e-3f;
  adam.weight_decay = 0.1f;

  std::vector<float> want = p0, m(n, 0.0f), v(n, 0.0f);
  adamw_step(want.data(), g1.data(), m.data(), v.data(), n, 1, adam, mask.data());
  adamw_step(want.data(), g2.data(), m.data(), v.data(), n, 2, adam, mask.data());

  MemoryTracker tracker;
  for (int degree : {1, 3, 4}) {
    for (bool params_in_shard : {false, true}) {
      for (bool offload : {false, true}) {
        SCOPED_TRACE(fmt::format("degree {}{}{}", degree, params_in_shard ? ", shard params" : "",
                                 offload ? ", offloaded" : ""));
        std::vector<float> got = p0;
        for (int d = 0; d < degree; ++d) {
          const UnitPartition part(shard.units(), degree, d);
          const size_t k = part.shard_elements();
          std::vector<float> ms(k, 0.0f), vs(k, 0.0f), ps(k, 0.0f), gs1(k, 0.0f), gs2(k, 0.0f);
          std::vector<float> full = p0;
          for (const UnitSlice& s : part.slices()) {
            for (size_t i = 0; i < s.owned; ++i) {
              ps[s.shard_offset + i] = p0[s.full_begin() + i];
              gs1[s.shard_offset + i] = g1[s.full_begin() + i];
              gs2[s.shard_offset + i] = g2[s.full_begin() + i];
            }
          }
          for (int t = 1; t <= 2; ++t) {
            StepBuffers b;
            b.params = params_in_shard ? ps.data() : full.data();
            b.params_in_shard = params_in_shard;
            b.grads = t == 1 ? gs1.data() : gs2.data();
            b.grads_in_shard = true;
            b.m = ms.data();
            b.v = vs.data();
            adamw_owned(shard.tensors(), part, b, t, adam, offload, tracker);
          }
          for (const UnitSlice& s : part.slices()) {
            for (size_t i = 0; i < s.owned; ++i) {
              got[s.full_begin() + i] =
                  params_in_shard ? ps[s.shard_offset + i] : full[s.full_begin() + i];
            }
          }
        }
        for (size_t i = 0; i < n; ++i) {
          ASSERT_EQ(got[i], want[i]) << "element " << i;
        }
        EXPECT_EQ(tracker.current(MemoryPool::kHost, MemoryCategory::kCommunication), 0)
            << "host staging freed";
      }
    }
  }
  EXPECT_GT(tracker.peak(MemoryPool::kHost, MemoryCategory::kCommunication), 0)
      << "offloaded steps stage on the host";
}

}  // namespace
}  // namespace plexus::engine
