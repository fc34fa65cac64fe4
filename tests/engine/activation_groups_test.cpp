// activation_groups_test.cpp - the checkpoint groups of a shard (shard_activations.h): with
// checkpoint_every N a shard of n blocks keeps ceil(n/N) group inputs per microbatch; N >= n is
// one group, the whole shard (Megatron-LM's "uniform" method with recompute_num_layers equal to
// the stage's layers), whatever N is past n. The slot sizes are checked against closed forms.
#include "engine/model/shard_activations.h"

#include <gtest/gtest.h>

namespace plexus::engine {
namespace {

SlotShape shape(int blocks, bool head) {
  SlotShape s;
  s.B = 2, s.T = 8, s.C = 16, s.NH = 2;
  s.num_blocks = blocks;
  s.vocab_rows = 11;
  s.embed = true, s.head = head;
  return s;
}

ActivationPolicy every(int n) { return ActivationPolicy{n, false, 1}; }

TEST(ActivationGroups, GroupsAreCeilOfBlocksOverEvery) {
  for (int blocks : {1, 3, 4, 7}) {
    for (int n = 1; n <= 2 * blocks + 1; ++n) {
      EXPECT_EQ(slot_inputs(shape(blocks, true), every(n)), (blocks + n - 1) / n)
          << blocks << " blocks, every " << n;
    }
    EXPECT_EQ(slot_inputs(shape(blocks, true), every(0)), 1) << "no checkpointing";
  }
}

// every=N >= blocks: the slot keeps the shard's input only (one group), the same floats for
// every such N; the plain slot keeps every block's activations.
TEST(ActivationGroups, EveryAtOrPastTheBlocksKeepsTheShardInputOnly) {
  for (bool head : {false, true}) {
    const SlotShape s = shape(4, head);
    const size_t input = static_cast<size_t>(s.B) * s.T * s.C;
    const size_t block = tp_block_acts_floats(s.dims(), 1);
    const size_t plain = slot_floats(s, every(0));
    const size_t one_group = slot_floats(s, every(4));
    EXPECT_EQ(slot_floats(s, every(5)), one_group);
    EXPECT_EQ(slot_floats(s, every(1 << 20)), one_group);
    // plain: x0 + 4 blocks (+ head); one group: in 0 (+ out, head only) (+ head).
    EXPECT_EQ(plain - one_group, 4 * block - (head ? input : 0)) << "head " << head;
    EXPECT_EQ(slot_floats(s, every(2)) - one_group, input) << "two groups: one input more";
  }
}

}  // namespace
}  // namespace plexus::engine
