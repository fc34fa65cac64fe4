// zero_unit_hooks_test.cpp - ZeRO's per-unit collectives (unit_collectives.h) and the stage 2/3
// unit hooks (zero_unit_hooks.h) on three real ranks.
//
// Three processes open a world over tcp; the sharding hooks are plain plx_reduce_scatter(AVG)
// and plx_allgather on it (what the zero plugins do). Collectives: a unit of 10 floats (parts of
// 4, padded by 2) and one of 9 (even), blocking and prefetched; rank r's element i is
// (r+1)*(i+1), so the average is 2*(i+1) and every gathered element is closed-form. Hooks: each
// rank runs two microbatches of its own tokens through a small GptShard (embedding, 3 blocks,
// head) with the hooks of stage 2 and of stage 3 (persistent small units, prefetch 1); the loss
// must equal the same shard's loss without hooks (the gathered parameters are the parameters),
// the shard gradient must equal the average over the ranks of the hook-less gradients (each
// rank recomputes all three ranks' microbatches), and afterwards no gradient range and only the
// persistent parameter ranges stay committed.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "engine/memory/memory_tracker.h"
#include "engine/model/gpt_shard.h"
#include "engine/state/unit_collectives.h"
#include "engine/state/unit_partition.h"
#include "engine/state/zero_unit_hooks.h"
#include "plexus/plexus.h"
#include "tests/comm/transport_cases.h"
#include "tests/engine/comm_sharding_hooks.h"
#include "tests/support/multiprocess.h"

namespace plexus::test {
namespace {

using engine::UnitPhase;

constexpr int kRanks = 3;

engine::ShardingHooks hooks_on(plx_comm_t comm) {
  engine::ShardingHooks h;
  h.reduce_scatter = comm_reduce_scatter;
  h.all_gather = comm_all_gather;
  h.state = comm;
  h.name = "test";
  return h;
}

std::string check_collectives(plx_comm_t world, int r) {
  engine::MemoryTracker tracker;
  engine::UnitCollectives coll(hooks_on(world), kRanks, r, r, tracker);
  const std::vector<engine::ParamUnit> units = {{"a", 0, 10}, {"b", 10, 9}};
  const engine::UnitPartition part(units, kRanks, r);
  std::vector<float> grads(19);
  for (size_t i = 0; i < 19; ++i) grads[i] = static_cast<float>((r + 1) * (i % 10 + 1));
  for (int u = 0; u < 2; ++u) {
    const engine::UnitSlice& s = part.slice(u);
    const std::string what = "unit " + std::to_string(u) + ": ";
    std::vector<float> out(s.part, -1.0f);
    coll.reduce_scatter(grads.data() + s.unit_offset, s, out.data());
    std::vector<float> sum(s.owned, 1.0f);
    coll.reduce_scatter_add(grads.data() + s.unit_offset, s, sum.data());
    for (size_t i = 0; i < s.owned; ++i) {
      const float want = 2.0f * static_cast<float>((s.unit_offset + s.begin + i) % 10 + 1);
      if (out[i] != want || sum[i] != want + 1.0f) {
        return what + "reduce-scatter element " + std::to_string(s.begin + i) + ": " +
               std::to_string(out[i]) + " (+1: " + std::to_string(sum[i]) + "), expected " +
               std::to_string(want);
      }
    }
    // Gather rank d's element j = 100*d + j, blocking, in place and prefetched.
    std::vector<float> own(s.owned), full(s.unit_count, -1.0f), pre(s.unit_count, -1.0f);
    for (size_t j = 0; j < s.owned; ++j) own[j] = static_cast<float>(100 * r + j);
    coll.all_gather(own.data(), s, full.data());
    engine::PendingGather pending = coll.start_all_gather(own.data(), s, pre.data());
    pending.finish();
    std::vector<float> in_place(s.unit_count, -1.0f);
    std::copy(own.begin(), own.end(), in_place.begin() + s.begin);
    coll.all_gather(in_place.data() + s.begin, s, in_place.data());
    for (size_t i = 0; i < s.unit_count; ++i) {
      const float want = static_cast<float>(100 * (i / s.part) + i % s.part);
      if (full[i] != want || pre[i] != want || in_place[i] != want) {
        return what + "all-gather element " + std::to_string(i) + ": " + std::to_string(full[i]) +
               ", prefetched " + std::to_string(pre[i]) + ", in place " +
               std::to_string(in_place[i]) + ", expected " + std::to_string(want);
      }
    }
  }
  return "";
}

engine::GptConfig hook_config() {
  return {.vocab_size = 23, .max_seq_len = 6, .n_layer = 3, .n_head = 2, .n_embd = 8};
}

// Rank r's microbatch m: 2 rows of 6 tokens.
void batch(int r, int m, std::vector<int32_t>& tokens, std::vector<int32_t>& targets) {
  tokens.resize(12);
  targets.resize(12);
  for (int i = 0; i < 12; ++i) {
    tokens[i] = (7 * r + 5 * m + 3 * i) % 23;
    targets[i] = (tokens[i] + r + 1) % 23;
  }
}

std::string check_hooks(plx_comm_t world, int r, int stage) {
  const std::string what = "stage " + std::to_string(stage) + ": ";
  const engine::GptConfig config = hook_config();
  const engine::ShardSpec spec{0, 3, true, true, 1, 0};
  std::vector<int32_t> tokens, targets;
  // The reference: every rank's two microbatches without hooks, gradients averaged.
  engine::GptShard plain(config, spec, engine::TensorParallelOps{});
  plain.init_parameters(11);
  std::vector<float> mean(plain.num_params(), 0.0f);
  float my_loss[2] = {};
  for (int d = 0; d < kRanks; ++d) {
    plain.zero_grad();
    for (int m = 0; m < 2; ++m) {
      batch(d, m, tokens, targets);
      const float loss = plain.forward(0, tokens.data(), nullptr, targets.data(), 2, 6, nullptr);
      if (d == r) my_loss[m] = loss;
      plain.backward(0, nullptr, nullptr, 0.5f);
    }
    for (size_t i = 0; i < mean.size(); ++i) mean[i] += plain.grads()[i] / kRanks;
  }

  engine::MemoryTracker tracker;
  engine::GptShard shard(config, spec, engine::TensorParallelOps{}, &tracker);
  shard.init_parameters(11);
  const engine::UnitPartition part(shard.units(), kRanks, r);
  engine::UnitCollectives coll(hooks_on(world), kRanks, r, r, tracker);
  std::vector<float> grad_shard(part.shard_elements(), 0.0f), param_shard(part.shard_elements());
  for (const engine::UnitSlice& s : part.slices()) {
    std::copy(shard.params() + s.full_begin(), shard.params() + s.full_begin() + s.owned,
              param_shard.begin() + s.shard_offset);
  }
  engine::ZeroHookSettings settings;
  settings.stage = stage;
  settings.param_persistence_threshold = 2 * config.n_embd;  // ln_f stays gathered
  settings.prefetch_units = 1;
  shard.grad_storage().release_all();
  engine::ZeroUnitHooks hooks(shard, part, coll, settings, grad_shard.data(), param_shard.data());
  size_t persistent = 0;
  for (int u = 0; u < part.num_units(); ++u) {
    const engine::UnitSlice& s = part.slice(u);
    if (stage == 3 && !hooks.persistent(u)) {
      shard.param_storage().release(s.unit_offset, s.unit_count);
    } else {
      persistent += s.unit_count;
    }
  }
  if (stage == 3 && persistent != static_cast<size_t>(2 * config.n_embd)) {
    return what + "persistent elements " + std::to_string(persistent) + ", expected ln_f's";
  }
  tracker.reset_peaks();  // the shard was built whole; measure the passes
  shard.set_unit_hooks(&hooks);
  for (int m = 0; m < 2; ++m) {
    batch(r, m, tokens, targets);
    const float loss = shard.forward(0, tokens.data(), nullptr, targets.data(), 2, 6, nullptr);
    if (loss != my_loss[m]) {
      return what + "microbatch " + std::to_string(m) + ": loss " + std::to_string(loss) +
             " with hooks, " + std::to_string(my_loss[m]) + " without";
    }
    shard.backward(0, nullptr, nullptr, 0.5f);
  }
  hooks.drain();
  shard.set_unit_hooks(nullptr);
  if (shard.grad_storage().committed() != 0) {
    return what + std::to_string(shard.grad_storage().committed()) +
           " gradient elements still committed";
  }
  if (shard.param_storage().committed() != persistent) {
    return what + std::to_string(shard.param_storage().committed()) +
           " parameter elements committed, expected " + std::to_string(persistent);
  }
  for (const engine::UnitSlice& s : part.slices()) {
    for (size_t i = 0; i < s.owned; ++i) {
      const float got = grad_shard[s.shard_offset + i], want = mean[s.full_begin() + i];
      if (std::fabs(got - want) > 1e-5f * std::fabs(want) + 1e-7f) {
        return what + "gradient element " + std::to_string(s.full_begin() + i) + ": " +
               std::to_string(got) + ", expected " + std::to_string(want);
      }
    }
    for (size_t i = s.owned; i < s.part; ++i) {
      if (grad_shard[s.shard_offset + i] != 0.0f) return what + "padding is not 0";
    }
  }
  if (tracker.peak(engine::MemoryPool::kDevice, engine::MemoryCategory::kGradients) >=
      static_cast<int64_t>(shard.num_params() * sizeof(float))) {
    return what + "the whole gradient was committed at once";
  }
  if (stage == 3 &&
      tracker.peak(engine::MemoryPool::kDevice, engine::MemoryCategory::kParameters) >=
          static_cast<int64_t>(shard.num_params() * sizeof(float))) {
    return what + "every parameter was gathered at once";
  }
  return "";
}

TEST(ZeroUnitHooks, CollectivesAndHooksOnThreeRanks) {
  expect_ranks_pass(kRanks, transport_env("tcp"), [](plx_comm_t world, int r) {
    std::string why = check_collectives(world, r);
    if (why.empty()) why = check_hooks(world, r, 2);
    if (why.empty()) why = check_hooks(world, r, 3);
    return why;
  });
}

}  // namespace
}  // namespace plexus::test
