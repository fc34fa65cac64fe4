// training_state.h - the training state a step goes through after its forward and backward
// passes: the gradients, AdamW's moments and the parameters, held either whole on every
// data-parallel replica (replicated_state.h, the plain D plugin's way) or sharded over the
// data group (sharded_state.h, ZeRO stages 1-3), on the device pool or, for the moments, the
// host pool (optimizer offload).
//
// Per step the trainer calls, in order, on every rank:
//   zero_grad()              before the first forward of the step;
//   <forward and backward of every microbatch>
//   reduce_gradients()       the gradient average over the data group (replicated: the
//                            plugins' after_backward; ZeRO-1: reduce-scatter now; ZeRO-2/3:
//                            already reduce-scattered unit by unit during backward), then the
//                            tied embedding's sum over the embedding group (P > 1);
//   grad_sum_squares()       the global sum of squares, each element of the model counted once;
//   scale_grads(clip)        the clipping factor;
//   step(t, config)          AdamW on the elements this rank owns, then the parameters made
//                            whole again where the state keeps them whole (all-gather).
// full_values() and load_values() move whole chunks (GptShard's flat layout) in and out, for the
// single-file checkpoint (gather_full_model) and for loading one.
//
// Errors: communication failures throw CommFailure; a call out of order is an engine bug
// (std::logic_error). Thread safety: the training thread only.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "engine/memory/memory_tracker.h"
#include "engine/memory/tracked_buffer.h"
#include "engine/optim/adamw.h"
#include "engine/plugin/active_plugins.h"
#include "engine/state/memory_plan.h"
#include "engine/state/stage_model.h"
#include "engine/world/parallel_groups.h"

namespace plexus::engine {

enum class StateBuffer { kParams, kAdamM, kAdamV };

// One whole buffer per chunk, in the chunk's flat layout: borrowed from the state, or built for
// the call (owned, device communication bytes) when the state keeps only shards.
struct ChunkValues {
  std::vector<const float*> chunks;
  std::vector<TrackedBuffer> owned;
};

// count elements of a chunk's flat layout, from `offset`, that this rank holds at `data`.
struct OwnedRange {
  size_t offset = 0;
  size_t count = 0;
  float* data = nullptr;
};

class TrainingState {
 public:
  virtual ~TrainingState() = default;

  virtual void zero_grad() = 0;
  virtual void reduce_gradients() = 0;
  virtual double grad_sum_squares() = 0;
  virtual void scale_grads(float factor) = 0;
  // step: 1-based AdamW step count including this one.
  virtual void step(int64_t step, const AdamWConfig& config) = 0;

  // Whole values of every chunk (collective over the data group when sharded: every rank calls).
  virtual ChunkValues full_values(StateBuffer which) = 0;
  // Sets the state from whole values of chunk c (its flat layout); every data rank passes the
  // same values and keeps its part.
  virtual void load_values(StateBuffer which, int chunk, const float* values) = 0;

  // For sharded checkpoints: the elements of chunk c this rank owns in `which`, in buffer
  // order, with where they live (no copies, no communication). Replicated: the whole chunk, on
  // every data rank (the replicas hold equal values). ZeRO: this rank's part of each unit. The
  // data may be written (loading); after writing parameters call params_written().
  virtual std::vector<OwnedRange> owned_ranges(StateBuffer which, int chunk) = 0;
  // Rebuilds the parameters the state keeps whole from the owned ones just written (ZeRO-1/2:
  // all-gather every unit; ZeRO-3: the persistent units). Collective over the data group.
  virtual void params_written() = 0;
};

// How the model must be built for the state a plan asks for (StageModel's storage): ZeRO-2/3
// with the gradient released, ZeRO-3 with the parameters released too, else both committed.
StorageOptions model_storage(const plx_memory_plan_t& plan);

// The state a plan asks for: ReplicatedState when plan.zero_stage is 0, else ShardedState.
// Either initialises the parameters to the matching slice of Gpt::init_parameters(seed), so
// replicas start equal: the replicated state with every chunk's init_parameters, the sharded
// one as sharded_state.h says (ZeRO-3 unit by unit). Build the model with model_storage(plan)
// first, so that no moment of set-up holds what the plan does not keep. world_rank: for
// messages; data_degree, data_rank: |D| and this rank's coordinate in the data group. The
// model, groups, plugins and tracker must outlive the state. Throws CommFailure, and
// std::logic_error from init_parameters for a replicated state over a model built without its
// parameters committed.
std::unique_ptr<TrainingState> make_training_state(const MemoryPlan& plan, StageModel& model,
                                                   const ParallelGroups& groups,
                                                   const ActivePlugins& plugins,
                                                   int world_rank, int data_degree,
                                                   int data_rank, uint64_t seed,
                                                   MemoryTracker& tracker);

}  // namespace plexus::engine
