// gradient_sync.h - what a step does to the gradients between backward and the optimizer,
// besides the plugins' after_backward (the D plugin's data-parallel average):
//  - tied embedding: with P > 1 the first stage (token embedding) and the last stage (LM head)
//    both hold wte; its two gradients are summed over the 2-rank embedding group, so both copies
//    take the same step (Megatron-LM's embedding group);
//  - global gradient norm for clipping, over the whole model: each rank sums the squares of the
//    gradients it owns, the sums are added over the tensor group and then the pipeline group.
//    A tensor held by several ranks counts once: replicated_in_tp tensors only on tensor rank 0,
//    and wte only on the first stage when the last stage holds a copy (counts_toward_norm).
//    Data-parallel replicas hold equal (averaged) gradients and compute the same norm; with
//    ZeRO each data rank counts only the elements it owns (never the padding) and the sums are
//    added over the data group first (sharded_state.cpp).
#pragma once

#include "engine/state/stage_model.h"
#include "engine/world/parallel_groups.h"

namespace plexus::engine {

// Sums wte's gradient over `embedding` (nullptr: nothing to do). Throws CommFailure.
void allreduce_tied_embedding(StageModel& model, plx_comm_t embedding, int world_rank);

// Whether tensor t (of a chunk with layers l) counts toward the global norm on this rank.
bool counts_toward_norm(const ShardTensor& t, const ChunkLayers& l, const StageLayout& layout);

// Adds `local` (this rank's sum of squares) over the data group (when with_data and |D| > 1),
// then the tensor group, then the pipeline group. Throws CommFailure.
double sum_norm_over_groups(double local, bool with_data, const StageLayout& layout,
                            const ParallelGroups& groups, int world_rank);

// Sum of squared gradients of the whole model, the same on every rank. Throws CommFailure.
double global_grad_sum_squares(const StageModel& model, const ParallelGroups& groups,
                               int world_rank);

// Multiplies every gradient of every chunk by `factor`.
void scale_grads(StageModel& model, float factor);

}  // namespace plexus::engine
