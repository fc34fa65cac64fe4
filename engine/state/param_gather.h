// param_gather.h - the full model assembled on rank 0 from every rank's shards.
//
// Only the ranks of the first data-parallel replica (d = 0) send: replicas hold equal values.
// Rank 0 knows every rank's shards from the placement (stage_layout, chunk_spec, shard_tensors),
// so each sender sends just its chunks' flat buffers, in chunk order, with blocking plx_send on
// the world communicator; rank 0 receives them in rank order and copies each tensor's slice to
// its place in Gpt's flat layout (scatter_into_full; vocabulary padding is dropped). Copies held
// by several ranks (replicated tensors, the tied wte on the first and last stage) are equal and
// written more than once.
#pragma once

#include <vector>

#include "engine/placement/placement.h"
#include "engine/state/stage_model.h"
#include "plexus/plexus.h"

namespace plexus::engine {

// values[c]: this rank's buffer for chunk c in the shard's layout (params, grads, AdamW m or v).
// Returns Gpt's flat buffer (full_num_params floats) on rank 0, an empty vector elsewhere.
// Collective over `world`. Throws CommFailure.
std::vector<float> gather_full_model(const GptConfig& config, const Placement& placement,
                                     const StageModel& model,
                                     const std::vector<const float*>& values, plx_comm_t world,
                                     int world_rank);

}  // namespace plexus::engine
