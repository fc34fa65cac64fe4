// replicated_state.h - the training state without ZeRO: every data-parallel replica holds the
// whole gradient, the whole AdamW moments (device pool, or host pool with optimizer offload) and
// the whole parameters. After backward the tied embedding's gradient is summed over the
// embedding group and every plugin's after_backward runs in placement order (the D plugin
// averages the gradient over the data group); each replica then takes the same AdamW step on
// all of its elements. See training_state.h for the call order.
#pragma once

#include <vector>

#include "engine/state/training_state.h"
#include "engine/state/unit_partition.h"

namespace plexus::engine {

class ReplicatedState : public TrainingState {
 public:
  ReplicatedState(StageModel& model, const ParallelGroups& groups, const ActivePlugins& plugins,
                  bool offload_optimizer, int world_rank, MemoryTracker& tracker);

  void zero_grad() override;
  void reduce_gradients() override;
  double grad_sum_squares() override;
  void scale_grads(float factor) override;
  void step(int64_t step, const AdamWConfig& config) override;
  ChunkValues full_values(StateBuffer which) override;
  void load_values(StateBuffer which, int chunk, const float* values) override;
  std::vector<OwnedRange> owned_ranges(StateBuffer which, int chunk) override;
  void params_written() override;

 private:
  float* buffer(StateBuffer which, int chunk, const char* what);

  struct Chunk {
    UnitPartition whole;  // one part per unit: this rank owns everything
    TrackedBuffer m, v;
  };
  StageModel& model_;
  const ParallelGroups& groups_;
  const ActivePlugins& plugins_;
  bool offload_;
  int world_rank_;
  MemoryTracker& tracker_;
  std::vector<Chunk> chunks_;
};

}  // namespace plexus::engine
