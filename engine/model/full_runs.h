// full_runs.h - where a shard's elements sit in the full model: runs of contiguous elements
// shared by the shard's flat buffer (gpt_shard.h) and Gpt's flat layout (gpt.h), the map that
// sharded checkpoints are keyed by (engine/checkpoint/sharded_checkpoint.h).
//
// A run {local_offset, full_offset, count} says: shard elements [local_offset, +count) are the
// full model's elements [full_offset, +count). A shard tensor maps as (tp rank r, tp degree n):
//   whole or replicated      one run: the whole tensor
//   rows split (qkv, fc)     one run per part (q, k, v): rows [r*R/n, (r+1)*R/n) of the part
//   columns split (proj)     one run per row: columns [r*K/n, (r+1)*K/n) of that row
//   wte (vocabulary split)   one run: the real rows of the slice; padding rows map nowhere
// Runs come in increasing local_offset, and neighbours contiguous in both layouts are merged,
// so a tp 1 shard of the whole model is the single run {0, 0, full_num_params}.
//
// Applying the runs is exactly scatter_into_full / extract_from_full (tp_partition.cpp); the
// test checks both against them.
#pragma once

#include <cstddef>
#include <vector>

#include "engine/model/gpt_shard.h"

namespace plexus::engine {

struct FullRun {
  size_t local_offset = 0;  // in the shard's flat buffer, elements
  size_t full_offset = 0;   // in Gpt's flat buffer, elements
  size_t count = 0;         // elements, > 0

  bool operator==(const FullRun&) const = default;
};

// Every non-padding element of the shard's tensors, merged into maximal runs.
std::vector<FullRun> full_runs(const std::vector<ShardTensor>& tensors);

// The elements this shard writes when every shard of a placement writes the full model once:
// full_runs() without the tensors another shard of the same placement also holds, namely
//  - tensors replicated over the tensor group (LayerNorms, wpe, row-parallel biases) unless
//    spec.tp_rank is 0;
//  - wte on a shard that holds the head but does not embed (the first stage owns the tied
//    weight; the head's copy equals it).
// Over all chunks and tensor ranks of one data-parallel replica the result covers each element
// of [0, full_num_params(config)) exactly once. `tensors` must be shard_tensors(config, spec).
std::vector<FullRun> owned_full_runs(const std::vector<ShardTensor>& tensors,
                                     const ShardSpec& spec);

// The parts of `runs` inside local elements [local_begin, local_end), e.g. one data-parallel
// rank's share of the shard or its ZeRO partition. Runs cut at the edges keep their mapping.
std::vector<FullRun> clip_runs(const std::vector<FullRun>& runs, size_t local_begin,
                               size_t local_end);

// Elements in the runs.
size_t run_elements(const std::vector<FullRun>& runs);

}  // namespace plexus::engine
