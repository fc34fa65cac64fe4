// gpt_shard_init_test.cpp - initialising a GptShard unit by unit (what ZeRO-3's set-up does,
// as DeepSpeed's zero.Init): init_unit_parameters writes exactly its unit's range, bit for bit
// what init_parameters writes there, for a whole model, pipeline chunks and tensor-parallel
// shards; a shard built without its buffers committed never holds more than the unit being
// initialised, as its private MemoryTracker counts; and the misuses fail with a message naming
// the function, the shard, the unit and the range.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/memory/memory_tracker.h"
#include "engine/model/gpt_shard.h"

namespace plexus::engine {
namespace {

constexpr uint64_t kSeed = 4242;
constexpr int64_t kFloat = 4;  // bytes
constexpr float kUntouched = 42.0f;

GptConfig test_config() {
  // vocabulary 251 is odd: tp 2 pads it
  return {.vocab_size = 251, .max_seq_len = 8, .n_layer = 4, .n_head = 4, .n_embd = 16};
}

// The tensor ops a tp_degree > 1 shard needs to exist; init calls none of them.
TensorParallelOps no_ops() {
  TensorParallelOps ops;
  ops.allreduce_sum = ops.allreduce_max = [](float*, size_t) {};
  return ops;
}

// Whole, pipeline chunks (first, middle, last), and tensor ranks 0 and 1 of 2 (whole and last).
std::vector<ShardSpec> specs() {
  return {ShardSpec{0, 4, true, true, 1, 0},  ShardSpec{0, 1, true, false, 1, 0},
          ShardSpec{1, 3, false, false, 1, 0}, ShardSpec{3, 4, false, true, 1, 0},
          ShardSpec{0, 4, true, true, 2, 0},  ShardSpec{0, 4, true, true, 2, 1},
          ShardSpec{2, 4, false, true, 2, 1}};
}

// Every unit initialised into an otherwise untouched, committed buffer: its range equals the
// reference bit for bit, every other element keeps its old value.
TEST(GptShardInitTest, EachUnitWritesExactlyInitParametersValuesForItsRange) {
  const GptConfig c = test_config();
  for (const ShardSpec& spec : specs()) {
    SCOPED_TRACE(spec.describe());
    GptShard reference(c, spec, no_ops());
    reference.init_parameters(kSeed);
    GptShard shard(c, spec, no_ops());
    const size_t n = shard.num_params();
    ASSERT_EQ(n, reference.num_params());
    ASSERT_GE(shard.units().size(), 2u);
    for (size_t u = 0; u < shard.units().size(); ++u) {
      const ParamUnit& unit = shard.units()[u];
      SCOPED_TRACE("unit " + std::to_string(u) + " (" + unit.name + ")");
      shard.param_storage().fill(kUntouched);
      shard.init_unit_parameters(kSeed, static_cast<int>(u));
      EXPECT_EQ(std::memcmp(shard.params() + unit.offset, reference.params() + unit.offset,
                            unit.count * sizeof(float)),
                0);
      for (size_t i = 0; i < n; ++i) {
        if (i >= unit.offset && i < unit.offset + unit.count) continue;
        ASSERT_EQ(shard.params()[i], kUntouched) << "element " << i << " outside the unit";
      }
    }
    // All units, one after the other, give init_parameters' whole buffer.
    for (size_t u = 0; u < shard.units().size(); ++u) {
      shard.init_unit_parameters(kSeed, static_cast<int>(u));
    }
    EXPECT_EQ(std::memcmp(shard.params(), reference.params(), n * sizeof(float)), 0);
  }
}

// Built with nothing committed, the shard accounts no parameter or gradient byte; committing,
// initialising and releasing one unit at a time peaks at the largest unit, with the reference's
// values in each unit while it is committed.
TEST(GptShardInitTest, UnitByUnitInitNeverHoldsMoreThanOneUnit) {
  const GptConfig c = test_config();
  for (const ShardSpec& spec : specs()) {
    SCOPED_TRACE(spec.describe());
    GptShard reference(c, spec, no_ops());
    reference.init_parameters(kSeed);
    MemoryTracker tracker;
    GptShard shard(c, spec, no_ops(), &tracker, StorageOptions{false, false});
    EXPECT_EQ(shard.param_storage().committed(), 0u);
    EXPECT_EQ(shard.grad_storage().committed(), 0u);
    EXPECT_EQ(tracker.current(MemoryPool::kDevice, MemoryCategory::kParameters), 0);
    size_t largest = 0;
    for (size_t u = 0; u < shard.units().size(); ++u) {
      const ParamUnit& unit = shard.units()[u];
      largest = std::max(largest, unit.count);
      shard.param_storage().commit(unit.offset, unit.count);
      shard.init_unit_parameters(kSeed, static_cast<int>(u));
      EXPECT_EQ(std::memcmp(shard.params() + unit.offset, reference.params() + unit.offset,
                            unit.count * sizeof(float)),
                0)
          << "unit " << u << " (" << unit.name << ")";
      shard.param_storage().release(unit.offset, unit.count);
    }
    EXPECT_EQ(tracker.peak(MemoryPool::kDevice, MemoryCategory::kParameters),
              kFloat * static_cast<int64_t>(largest));
    EXPECT_LT(largest, shard.num_params());
    EXPECT_EQ(tracker.peak(MemoryPool::kDevice, MemoryCategory::kGradients), 0);
    EXPECT_EQ(tracker.current_total(MemoryPool::kDevice),
              tracker.current(MemoryPool::kDevice, MemoryCategory::kCommunication));
  }
}

TEST(GptShardInitTest, MisuseNamesTheShardTheUnitAndTheRange) {
  const GptConfig c = test_config();
  MemoryTracker tracker;
  GptShard shard(c, ShardSpec{0, 4, true, true, 1, 0}, TensorParallelOps{}, &tracker,
                 StorageOptions{false, true});
  const int units = static_cast<int>(shard.units().size());
  ASSERT_EQ(units, 7);  // wte wpe blocks.0-3 ln_f
  for (int bad : {-1, units}) {
    try {
      shard.init_unit_parameters(kSeed, bad);
      ADD_FAILURE() << "unit " << bad << " accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_EQ(std::string(e.what()),
                "GptShard::init_unit_parameters (blocks 0-3 +embed +head, tp 0/1): unit " +
                    std::to_string(bad) + " not in 0..6");
    }
  }
  const ParamUnit& block = shard.units()[2];
  try {
    shard.init_unit_parameters(kSeed, 2);
    ADD_FAILURE() << "a released unit was initialised";
  } catch (const std::logic_error& e) {
    EXPECT_EQ(std::string(e.what()),
              "GptShard::init_unit_parameters (blocks 0-3 +embed +head, tp 0/1): unit 2 "
              "('blocks.0', elements [" +
                  std::to_string(block.offset) + ", " + std::to_string(block.offset + block.count) +
                  ")) is not committed; commit it first");
  }
  EXPECT_EQ(tracker.current(MemoryPool::kDevice, MemoryCategory::kParameters), 0);
  shard.param_storage().commit(block.offset, block.count);
  try {
    shard.init_parameters(kSeed);
    ADD_FAILURE() << "init_parameters wrote released ranges";
  } catch (const std::logic_error& e) {
    EXPECT_EQ(std::string(e.what()),
              "GptShard::init_parameters (blocks 0-3 +embed +head, tp 0/1): " +
                  std::to_string(shard.num_params() - block.count) + " of " +
                  std::to_string(shard.num_params()) +
                  " parameters are released; commit them, or initialise unit by unit with "
                  "init_unit_parameters");
  }
  // Committed whole, init_parameters works again.
  shard.param_storage().commit_all();
  shard.init_parameters(kSeed);
  EXPECT_EQ(shard.params()[shard.units()[6].offset], 1.0f);  // ln_f.weight starts at 1
}

}  // namespace
}  // namespace plexus::engine
