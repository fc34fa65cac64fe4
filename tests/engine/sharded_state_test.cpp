// sharded_state_test.cpp - ShardedState's way in and out of the sharded state on three real
// ranks (placement D3, a model whose units do not all divide by 3), for ZeRO stages 1, 2 and 3,
// with the moments on the device and offloaded:
//  - full_values(params) rebuilds the initial parameters exactly;
//  - load_values then full_values returns what was loaded (each rank kept its part);
//  - writing closed-form values through owned_ranges covers every element of the chunk exactly
//    once across the ranks, and params_written() makes the parameters whole again (stages 1, 2:
//    the model's buffer; stage 3: the persistent units, the rest on the next gather);
//  - after set-up only the shard and, for stage 3, the persistent units are committed;
// and, with one private MemoryTracker from before the model is built (as training_state.h's
// model_storage() builds it) to after three training steps, that the gradient peak under
// ZeRO-2/3 and the parameter peak under ZeRO-3 are the shard plus the units in flight, never
// the whole model, set-up included (DeepSpeed's zero.Init), and that the losses are those of the
// initial values (the first step's equals a replicated model's bit for bit).
// The sharding hooks are plx_reduce_scatter(AVG) / plx_allgather on the data group, as the zero
// plugins'.
#include "engine/state/sharded_state.h"

#include <cblas.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "engine/optim/grad_clip.h"
#include "engine/placement/placement.h"
#include "engine/state/stage_model.h"
#include "engine/state/training_state.h"
#include "engine/world/parallel_groups.h"
#include "plexus/plexus.h"
#include "tests/comm/transport_cases.h"
#include "tests/engine/comm_sharding_hooks.h"
#include "tests/support/multiprocess.h"

namespace plexus::test {
namespace {

using engine::StateBuffer;

constexpr int kRanks = 3;

engine::GptConfig config() {
  // vocabulary 29: wte = 29*8 = 232 elements, not a multiple of 3
  return {.vocab_size = 29, .max_seq_len = 4, .n_layer = 2, .n_head = 2, .n_embd = 8};
}

float closed_form(int which, size_t i) { return static_cast<float>(which * 1000 + i % 997); }

std::string compare(const float* got, const std::vector<float>& want, const std::string& what) {
  for (size_t i = 0; i < want.size(); ++i) {
    if (got[i] != want[i]) {
      return what + ": element " + std::to_string(i) + " is " + std::to_string(got[i]) +
             ", expected " + std::to_string(want[i]);
    }
  }
  return "";
}

std::string check_stage(const engine::Placement& placement, const engine::ParallelGroups& groups,
                        int r, int stage, bool offload) {
  const std::string what = "stage " + std::to_string(stage) + (offload ? " offloaded" : "") + ": ";
  const engine::StageLayout layout = engine::stage_layout(placement, r, 1);
  // The initial values, from a model built and initialised whole.
  const std::vector<float> initial = [&] {
    engine::MemoryTracker scratch;
    engine::GptShard whole(config(), engine::chunk_spec(config(), layout, 0),
                           engine::TensorParallelOps{}, &scratch);
    whole.init_parameters(5);
    return std::vector<float>(whole.params(), whole.params() + whole.num_params());
  }();
  const size_t n = initial.size();

  plx_memory_plan_t plan = PLX_MEMORY_PLAN_INIT;
  plan.zero_stage = stage;
  plan.param_persistence_threshold = 2 * config().n_embd;  // ln_f stays gathered
  plan.prefetch_units = 1;
  plan.offload_optimizer = offload ? 1 : 0;
  engine::ShardingHooks hooks{comm_reduce_scatter, comm_all_gather, groups.data(), "test"};
  engine::MemoryTracker tracker;
  engine::StageModel model(config(), layout, engine::TensorParallelOps{}, groups.pipeline(),
                           engine::model_storage(plan), &tracker);
  engine::ShardedState state(plan, hooks, model, groups, r, kRanks, r, 5, tracker);
  const engine::UnitPartition& part = state.partition(0);
  const auto pool = offload ? engine::MemoryPool::kHost : engine::MemoryPool::kDevice;
  if (tracker.current(pool, engine::MemoryCategory::kOptimizer) !=
      static_cast<int64_t>(2 * part.shard_elements() * sizeof(float))) {
    return what + "optimizer bytes are not 2 x 4 x the shard";
  }
  const engine::TrackedBuffer& grads = model.chunk(0).grad_storage();
  if (stage >= 2 && grads.committed() != 0) return what + "gradient not released";
  if (stage == 1 && grads.committed() != n) return what + "stage 1's gradient is not whole";
  const int64_t grad_bytes = tracker.current(engine::MemoryPool::kDevice,
                                             engine::MemoryCategory::kGradients);
  if (grad_bytes != static_cast<int64_t>((stage == 1 ? n : part.shard_elements()) * 4)) {
    return what + std::to_string(grad_bytes) + " bytes of gradients";
  }
  if (stage == 3 && model.chunk(0).param_storage().committed() != 2u * config().n_embd) {
    return what + std::to_string(model.chunk(0).param_storage().committed()) +
           " parameters committed, expected ln_f's";
  }
  // Stages 1, 2: the whole model's parameters. Stage 3: the shard holds this rank's part of
  // every unit but the persistent ln_f (the last unit), which is whole in the model's buffer.
  const size_t lnf_part = part.slice(part.num_units() - 1).part;
  const int64_t param_bytes = tracker.current(engine::MemoryPool::kDevice,
                                              engine::MemoryCategory::kParameters);
  if (param_bytes != static_cast<int64_t>(stage == 3 ? (part.shard_elements() - lnf_part +
                                                        2 * config().n_embd) * 4
                                                     : n * 4)) {
    return what + std::to_string(param_bytes) + " bytes of parameters";
  }

  if (auto why = compare(state.full_values(StateBuffer::kParams).chunks[0], initial,
                         what + "initial parameters");
      !why.empty()) {
    return why;
  }
  std::vector<float> m(n);
  for (size_t i = 0; i < n; ++i) m[i] = closed_form(1, i);
  state.load_values(StateBuffer::kAdamM, 0, m.data());
  if (auto why = compare(state.full_values(StateBuffer::kAdamM).chunks[0], m, what + "loaded m");
      !why.empty()) {
    return why;
  }
  std::vector<float> v(n), p(n);
  for (size_t i = 0; i < n; ++i) v[i] = closed_form(2, i), p[i] = closed_form(3, i);
  for (StateBuffer which : {StateBuffer::kAdamV, StateBuffer::kParams}) {
    const std::vector<float>& values = which == StateBuffer::kAdamV ? v : p;
    for (const engine::OwnedRange& range : state.owned_ranges(which, 0)) {
      std::copy(values.begin() + range.offset, values.begin() + range.offset + range.count,
                range.data);
    }
  }
  state.params_written();
  if (auto why = compare(state.full_values(StateBuffer::kAdamV).chunks[0], v, what + "written v");
      !why.empty()) {
    return why;
  }
  if (auto why = compare(state.full_values(StateBuffer::kParams).chunks[0], p,
                         what + "written parameters");
      !why.empty()) {
    return why;
  }
  if (stage < 3) {
    if (auto why = compare(model.chunk(0).params(), p, what + "the model's parameters");
        !why.empty()) {
      return why;
    }
  }
  if (tracker.current(engine::MemoryPool::kDevice, engine::MemoryCategory::kCommunication) >
      static_cast<int64_t>(2 * part.max_padded_unit() * sizeof(float))) {
    return what + "whole temporary buffers outlived full_values";
  }
  return "";
}

// ---- memory peaks, set-up included -------------------------------------------------------------

constexpr uint64_t kSeed = 17;
constexpr int kSteps = 3, kRows = 2, kMicrobatches = 2;

// Six blocks: on three ranks the shard plus two blocks is well under the whole model.
engine::GptConfig deep_config() {
  engine::GptConfig c = config();
  c.n_layer = 6;
  return c;
}

// Rank r's rows of step `step`, closed form.
void make_batch(int r, int step, std::vector<int32_t>& tokens, std::vector<int32_t>& targets) {
  const int V = deep_config().vocab_size, T = deep_config().max_seq_len;
  tokens.resize(kRows * T);
  targets.resize(kRows * T);
  for (int i = 0; i < kRows * T; ++i) {
    tokens[i] = (5 * i + 7 * step + 3 * r) % V;
    targets[i] = (3 * tokens[i] + 1) % V;
  }
}

size_t largest_two(std::vector<size_t> v) {
  std::sort(v.rbegin(), v.rend());
  return v.size() < 2 ? (v.empty() ? 0 : v[0]) : v[0] + v[1];
}

// The first step's loss of a model built whole and initialised with init_parameters: what the
// replicated state starts from.
double replicated_first_loss(const engine::StageLayout& layout,
                             const engine::ParallelGroups& groups, int r) {
  engine::MemoryTracker scratch;
  engine::StageModel model(deep_config(), layout, engine::TensorParallelOps{}, groups.pipeline(),
                           engine::StorageOptions{}, &scratch);
  model.chunk(0).init_parameters(kSeed);
  std::vector<int32_t> tokens, targets;
  make_batch(r, 0, tokens, targets);
  model.set_batch(tokens.data(), targets.data(), kRows, deep_config().max_seq_len, kMicrobatches);
  model.run_local();
  return model.mean_loss();
}

// Builds the model and the state of `stage` in a fresh tracker, checks the set-up peaks, trains
// kSteps steps, checks the whole-run peaks against the units, and returns the step losses in
// *losses.
std::string check_peaks(const engine::Placement& placement, const engine::ParallelGroups& groups,
                        int r, int stage, std::vector<double>* losses) {
  const std::string what = "zero" + std::to_string(stage) + " peaks: ";
  plx_memory_plan_t plan = PLX_MEMORY_PLAN_INIT;
  plan.zero_stage = stage;
  plan.param_persistence_threshold = 2 * deep_config().n_embd;  // ln_f stays gathered
  plan.prefetch_units = 1;
  engine::ShardingHooks hooks{comm_reduce_scatter, comm_all_gather, groups.data(), "test"};
  engine::MemoryTracker tracker;  // from before the model is built
  const engine::StageLayout layout = engine::stage_layout(placement, r, 1);
  engine::StageModel model(deep_config(), layout, engine::TensorParallelOps{}, groups.pipeline(),
                           engine::model_storage(plan), &tracker);
  engine::ShardedState state(plan, hooks, model, groups, r, kRanks, r, kSeed, tracker);
  const engine::UnitPartition& part = state.partition(0);

  // The figures, from the units: whole model, shard, the gradient window of a backward pass
  // (wte from the head until the embedding, plus one block), what ZeRO-3 keeps (the shard of the
  // gathered units, the persistent ones whole), and its set-up (unit by unit: commit the unit,
  // commit its part of the shard, release the unit), replayed serially.
  const std::vector<engine::ParamUnit>& units = model.chunk(0).units();
  size_t whole = 0, wte = 0, block = 0, resident = 0, held = 0, setup = 0;
  std::vector<size_t> counts, gathered;
  for (int u = 0; u < part.num_units(); ++u) {
    const size_t count = units[u].count;
    const bool persistent = count <= plan.param_persistence_threshold;
    whole += count;
    counts.push_back(count);
    if (units[u].name == "wte") wte = count;
    if (units[u].name.rfind("blocks.", 0) == 0) block = std::max(block, count);
    held += count + (persistent ? 0 : part.slice(u).part);
    setup = std::max(setup, held);
    if (!persistent) held -= count, gathered.push_back(count);
    resident += persistent ? count : part.slice(u).part;
  }
  const size_t shard = part.shard_elements();
  const auto device_peak = [&](engine::MemoryCategory c) {
    return static_cast<size_t>(tracker.peak(engine::MemoryPool::kDevice, c)) / sizeof(float);
  };
  const auto expect = [&](const char* figure, size_t got, size_t want) {
    return got == want ? std::string()
                       : what + figure + " peak " + std::to_string(got) + " floats, expected " +
                             std::to_string(want);
  };
  const auto within = [&](const char* figure, size_t got, size_t low, size_t high) {
    return got >= low && got <= high && got < whole
               ? std::string()
               : what + figure + " peak " + std::to_string(got) + " floats not in " +
                     std::to_string(low) + ".." + std::to_string(high) + " or not under the " +
                     std::to_string(whole) + " of the whole model";
  };
  using engine::MemoryCategory;
  // Set-up: the gradient never whole (stages 2, 3), the parameters never whole (stage 3).
  if (auto why = expect("set-up gradient", device_peak(MemoryCategory::kGradients),
                        stage == 1 ? whole : shard);
      !why.empty()) {
    return why;
  }
  if (auto why = expect("set-up parameter", device_peak(MemoryCategory::kParameters),
                        stage == 3 ? setup : whole);
      !why.empty()) {
    return why;
  }
  std::vector<int32_t> tokens, targets;
  engine::AdamWConfig adam;
  for (int step = 0; step < kSteps; ++step) {
    make_batch(r, step, tokens, targets);
    model.set_batch(tokens.data(), targets.data(), kRows, deep_config().max_seq_len,
                    kMicrobatches);
    state.zero_grad();
    model.run_local();
    state.reduce_gradients();
    state.scale_grads(engine::clip_coefficient(state.grad_sum_squares(), 1.0f));
    state.step(step + 1, adam);
    losses->push_back(model.mean_loss());
  }
  // The run: as memory_plugins_test.cpp's bounds (shard plus the largest units in flight), and
  // exactly the gradient window for stages 2, 3.
  const size_t grads = device_peak(MemoryCategory::kGradients);
  if (stage == 1) {
    if (auto why = expect("gradient", grads, whole); !why.empty()) return why;
  } else {
    if (auto why = within("gradient", grads, shard, shard + largest_two(counts)); !why.empty()) {
      return why;
    }
    if (auto why = expect("gradient", grads, shard + wte + block); !why.empty()) return why;
  }
  const size_t params = device_peak(MemoryCategory::kParameters);
  if (stage < 3) return expect("parameter", params, whole);
  return within("parameter", params, std::max(resident, setup),
                resident + largest_two(gathered));
}

// The losses of stage 2 and 3 are bit-identical (the same operations on the same values),
// stage 1's equal within rounding (it averages the sum of the microbatches' gradients instead
// of summing their averages), and every stage's first loss is the replicated model's.
std::string check_losses(const std::vector<std::vector<double>>& losses, double first) {
  for (int stage = 1; stage <= 3; ++stage) {
    const std::vector<double>& l = losses[stage - 1];
    if (l.size() != static_cast<size_t>(kSteps)) {
      return "zero" + std::to_string(stage) + ": " + std::to_string(l.size()) + " losses";
    }
    if (l[0] != first) {
      return "zero" + std::to_string(stage) + ": first loss " + std::to_string(l[0]) +
             ", the replicated model's " + std::to_string(first);
    }
    for (int i = 0; i < kSteps; ++i) {
      const double tol = stage == 1 ? 1e-5 * std::fabs(losses[2][i]) : 0.0;
      if (std::fabs(l[i] - losses[2][i]) > tol) {
        return "step " + std::to_string(i + 1) + ": zero" + std::to_string(stage) + " loss " +
               std::to_string(l[i]) + ", zero3 " + std::to_string(losses[2][i]);
      }
    }
  }
  return "";
}

TEST(ShardedState, PeaksFromBeforeTheModelToAfterTrainingStayAtTheShard) {
  expect_ranks_pass(kRanks, transport_env("tcp"), [](plx_comm_t world, int r) -> std::string {
    openblas_set_num_threads(1);
    engine::Placement placement = engine::parse_placement("D3");
    engine::resolve_placement(placement, kRanks, 0, 0);
    engine::ParallelGroups groups(world, r, placement);
    std::vector<std::vector<double>> losses(3);
    for (int stage = 1; stage <= 3; ++stage) {
      const std::string why = check_peaks(placement, groups, r, stage, &losses[stage - 1]);
      if (!why.empty()) return why;
    }
    const double first = replicated_first_loss(engine::stage_layout(placement, r, 1), groups, r);
    if (std::string why = check_losses(losses, first); !why.empty()) return why;
    if (!groups.finish()) return "destroying the groups failed";
    return "";
  });
}

TEST(ShardedState, ValuesInAndOutOfTheShardsOnThreeRanks) {
  expect_ranks_pass(kRanks, transport_env("tcp"), [](plx_comm_t world, int r) -> std::string {
    engine::Placement placement = engine::parse_placement("D3");
    engine::resolve_placement(placement, kRanks, 0, 0);
    engine::ParallelGroups groups(world, r, placement);
    for (int stage = 1; stage <= 3; ++stage) {
      for (bool offload : {false, true}) {
        const std::string why = check_stage(placement, groups, r, stage, offload);
        if (!why.empty()) return why;
      }
    }
    if (!groups.finish()) return "destroying the groups failed";
    return "";
  });
}

}  // namespace
}  // namespace plexus::test
