// training_state.cpp - choosing the training state a memory plan asks for (see
// training_state.h).
#include "engine/state/training_state.h"

#include "engine/state/replicated_state.h"
#include "engine/state/sharded_state.h"

namespace plexus::engine {

StorageOptions model_storage(const plx_memory_plan_t& plan) {
  StorageOptions storage;
  storage.params_committed = plan.zero_stage < 3;
  storage.grads_committed = plan.zero_stage < 2;
  return storage;
}

std::unique_ptr<TrainingState> make_training_state(const MemoryPlan& plan, StageModel& model,
                                                   const ParallelGroups& groups,
                                                   const ActivePlugins& plugins,
                                                   int world_rank, int data_degree,
                                                   int data_rank, uint64_t seed,
                                                   MemoryTracker& tracker) {
  if (!plan.sharded()) {
    for (int c = 0; c < model.num_chunks(); ++c) model.chunk(c).init_parameters(seed);
    return std::make_unique<ReplicatedState>(model, groups, plugins,
                                             plan.plan.offload_optimizer != 0, world_rank,
                                             tracker);
  }
  ShardingHooks hooks;
  if (plan.sharder != nullptr) {
    hooks.reduce_scatter = plan.sharder->reduce_scatter();
    hooks.all_gather = plan.sharder->all_gather();
    hooks.state = plan.sharder->state;
    hooks.name = plan.sharder->name();
  }
  return std::make_unique<ShardedState>(plan.plan, hooks, model, groups, world_rank, data_degree,
                                        data_rank, seed, tracker);
}

}  // namespace plexus::engine
