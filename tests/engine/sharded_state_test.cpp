// sharded_state_test.cpp - ShardedState's way in and out of the sharded state on three real
// ranks (placement D3, a model whose units do not all divide by 3), for ZeRO stages 1, 2 and 3,
// with the moments on the device and offloaded:
//  - full_values(params) rebuilds the initial parameters exactly;
//  - load_values then full_values returns what was loaded (each rank kept its part);
//  - writing closed-form values through owned_ranges covers every element of the chunk exactly
//    once across the ranks, and params_written() makes the parameters whole again (stages 1, 2:
//    the model's buffer; stage 3: the persistent units, the rest on the next gather);
//  - after set-up only the shard and, for stage 3, the persistent units are committed.
// The sharding hooks are plx_reduce_scatter(AVG) / plx_allgather on the data group, as the zero
// plugins'.
#include "engine/train/sharded_state.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "engine/placement/placement.h"
#include "engine/train/parallel_groups.h"
#include "engine/train/stage_model.h"
#include "plexus/plexus.h"
#include "tests/support/multiprocess.h"

namespace plexus::test {
namespace {

using engine::StateBuffer;

constexpr int kRanks = 3;

EnvList rank_env() {
  static const std::string cache = [] {
    char pattern[] = "/tmp/plexus-sharded-state-test-XXXXXX";
    const char* made = mkdtemp(pattern);
    return std::string(made ? made : "/tmp");
  }();
  return {{"PLEXUS_TIMEOUT_MS", "30000"},
          {"PLEXUS_COST_MODEL", "2.5,0.1,0.05"},
          {"PLEXUS_CACHE_DIR", cache},
          {"PLEXUS_FI_PROVIDER", "tcp"}};
}

plx_result_t test_reduce_scatter(void* state, const float* full, float* shard, size_t count,
                                 char* err, size_t err_len) {
  auto comm = static_cast<plx_comm_t>(state);
  plx_result_t r = plx_reduce_scatter(full, shard, count, PLX_FLOAT32, PLX_AVG, comm, nullptr);
  if (r != PLX_SUCCESS) std::snprintf(err, err_len, "test: %s", plx_get_last_error(comm));
  return r;
}

plx_result_t test_all_gather(void* state, const float* shard, float* full, size_t count,
                             plx_request_t* request, char* err, size_t err_len) {
  auto comm = static_cast<plx_comm_t>(state);
  plx_result_t r = request == nullptr
                       ? plx_allgather(shard, full, count, PLX_FLOAT32, comm, nullptr)
                       : plx_iallgather(shard, full, count, PLX_FLOAT32, comm, request);
  if (r != PLX_SUCCESS) std::snprintf(err, err_len, "test: %s", plx_get_last_error(comm));
  return r;
}

engine::GptConfig config() {
  engine::GptConfig c;
  c.vocab_size = 29;  // wte = 29*8 = 232 elements: not a multiple of 3
  c.max_seq_len = 4;
  c.n_layer = 2;
  c.n_head = 2;
  c.n_embd = 8;
  return c;
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
  engine::StageModel model(config(), layout, engine::TensorParallelOps{}, groups.pipeline());
  model.chunk(0).init_parameters(5);
  const size_t n = model.chunk(0).num_params();
  const std::vector<float> initial(model.chunk(0).params(), model.chunk(0).params() + n);

  plx_memory_plan_t plan = PLX_MEMORY_PLAN_INIT;
  plan.zero_stage = stage;
  plan.param_persistence_threshold = 2 * config().n_embd;  // ln_f stays gathered
  plan.prefetch_units = 1;
  plan.offload_optimizer = offload ? 1 : 0;
  engine::ShardingHooks hooks{test_reduce_scatter, test_all_gather, groups.data(), "test"};
  engine::MemoryTracker tracker;
  engine::ShardedState state(plan, hooks, model, groups, r, kRanks, r, tracker);
  const engine::UnitPartition& part = state.partition(0);
  const auto pool = offload ? engine::MemoryPool::kHost : engine::MemoryPool::kDevice;
  if (tracker.current(pool, engine::MemoryCategory::kOptimizer) !=
      static_cast<int64_t>(2 * part.shard_elements() * sizeof(float))) {
    return what + "optimizer bytes are not 2 x 4 x the shard";
  }
  const engine::TrackedBuffer& grads = model.chunk(0).grad_storage();
  if (stage >= 2 && grads.committed() != 0) return what + "gradient not released";
  if (stage == 3 && model.chunk(0).param_storage().committed() != 2u * config().n_embd) {
    return what + std::to_string(model.chunk(0).param_storage().committed()) +
           " parameters committed, expected ln_f's";
  }
  // The shard holds this rank's part of every unit but the persistent ln_f (the last unit).
  const size_t lnf_part = part.slice(part.num_units() - 1).part;
  const int64_t shard_params = tracker.current(engine::MemoryPool::kDevice,
                                               engine::MemoryCategory::kParameters);
  if (shard_params != (stage == 3 ? static_cast<int64_t>((part.shard_elements() - lnf_part) * 4)
                                  : 0)) {
    return what + std::to_string(shard_params) + " bytes of shard parameters";
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

TEST(ShardedState, ValuesInAndOutOfTheShardsOnThreeRanks) {
  const auto outcomes = run_ranks(
      kRanks,
      [](int r) {
        plx_comm_t world = nullptr;
        auto failed = [&](const std::string& why) {
          if (world) plx_comm_abort(world);
          return rank_failure(r, why);
        };
        if (plx_comm_init_from_env(&world) != PLX_SUCCESS) {
          return failed(std::string("init: ") + plx_get_last_error(nullptr));
        }
        try {
          engine::Placement placement = engine::parse_placement("D3");
          engine::resolve_placement(placement, kRanks, 0, 0);
          engine::ParallelGroups groups(world, r, placement);
          for (int stage = 1; stage <= 3; ++stage) {
            for (bool offload : {false, true}) {
              const std::string why = check_stage(placement, groups, r, stage, offload);
              if (!why.empty()) return failed(why);
            }
          }
          if (!groups.finish()) return failed("destroying the groups failed");
        } catch (const std::exception& e) {
          return failed(e.what());
        }
        if (plx_comm_destroy(world) != PLX_SUCCESS) return rank_failure(r, "destroy failed");
        return 0;
      },
      120.0, rank_env());
  std::string why;
  EXPECT_TRUE(all_passed(outcomes, &why)) << why;
}

}  // namespace
}  // namespace plexus::test
