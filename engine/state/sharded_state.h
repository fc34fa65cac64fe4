// sharded_state.h - the training state under ZeRO (Rajbhandari et al., SC 2020), stages 1-3,
// over the data group of this rank's (p, t) coordinate; every unit split as unit_partition.h.
//
//   stage  parameters (device)             gradient (device)               AdamW m, v
//   1      whole chunk                     whole chunk; after backward     this rank's parts
//                                          each unit is reduce-scattered   (sum_u s_u each)
//                                          and the averaged part written
//                                          back over this rank's elements
//   2      whole chunk                     this rank's parts only (the     this rank's parts
//                                          shard); units reduce-scattered
//                                          during backward (hooks)
//   3      this rank's parts (the shard)   as 2                            this rank's parts
//          plus the units gathered right
//          now; persistent units whole
//          (no shard copy: their owned
//          elements step in place)
// m and v live in the device pool, or in the host pool with optimizer offload (the step then
// runs on host copies, shard_step.h). No plugin's after_backward runs: the reduce-scatter is
// the data-parallel average. The step updates this rank's parts, then stages 1 and 2 all-gather
// every unit's parameters, stage 3 only the persistent units (the others are gathered when next
// used). The tied embedding (P > 1) is summed over the embedding group on the wte unit's part,
// which is the same part on the first and the last stage. The gradient norm counts the owned
// elements, never the padding, then sums over the data, tensor and pipeline groups.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "engine/state/training_state.h"
#include "engine/state/unit_collectives.h"
#include "engine/state/unit_partition.h"
#include "engine/state/zero_unit_hooks.h"

namespace plexus::engine {

class ShardedState : public TrainingState {
 public:
  // plan.zero_stage in 1..3; hooks: the sharding plugin's collectives on the data group (both
  // set; make_memory_plan checks it). Initialises the parameters to the matching slice of
  // Gpt::init_parameters(seed) (the same on every data replica) and lays out what the stage
  // keeps (DeepSpeed's zero.Init):
  //   stages 1, 2  the parameters whole (committed if the model was built without them), then
  //                init_parameters; stage 1 the gradient whole too;
  //   stages 2, 3  the model's gradient released (the hooks commit a unit's range during its
  //                backward), the shard gradient committed;
  //   stage 3      unit by unit: commit the unit, init_unit_parameters, copy this rank's part to
  //                the shard, release the unit unless persistent.
  // A model built with training_state.h's model_storage(plan) therefore never holds its whole
  // gradient (stages 2, 3) or its whole parameters (stage 3), not even here. Installs the hooks
  // (stages 2, 3) on every chunk. Throws std::logic_error for a stage outside 1..3.
  ShardedState(const plx_memory_plan_t& plan, const ShardingHooks& hooks, StageModel& model,
               const ParallelGroups& groups, int world_rank, int data_degree, int data_rank,
               uint64_t seed, MemoryTracker& tracker);
  ~ShardedState() override;

  void zero_grad() override;
  void reduce_gradients() override;
  double grad_sum_squares() override;
  void scale_grads(float factor) override;
  void step(int64_t step, const AdamWConfig& config) override;
  ChunkValues full_values(StateBuffer which) override;
  void load_values(StateBuffer which, int chunk, const float* values) override;
  std::vector<OwnedRange> owned_ranges(StateBuffer which, int chunk) override;
  void params_written() override;

  const UnitPartition& partition(int chunk) const { return chunks_.at(chunk).partition; }

 private:
  struct Chunk {
    UnitPartition partition;
    TrackedBuffer grad_shard;   // stages 2, 3
    TrackedBuffer param_shard;  // stage 3
    TrackedBuffer m, v;
    std::unique_ptr<ZeroUnitHooks> hooks;  // stages 2, 3
  };
  // The chunk's gradient of its owned elements: full space (stage 1) or the shard.
  float* owned_grads(int c, size_t full_index, size_t shard_index);
  void drain();
  void init_sharded_params(int chunk, uint64_t seed);
  void rebuild_params(int chunk);
  void sum_tied_embedding();
  void check_chunk(int chunk, const char* what) const;

  plx_memory_plan_t plan_;
  StageModel& model_;
  const ParallelGroups& groups_;
  int world_rank_;
  MemoryTracker& tracker_;
  UnitCollectives collectives_;
  std::vector<Chunk> chunks_;
};

}  // namespace plexus::engine
