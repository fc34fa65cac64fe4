// full_runs.cpp - a shard's tensors as runs of Gpt's flat layout (full_runs.h).
#include "engine/model/full_runs.h"

#include <algorithm>

namespace plexus::engine {

namespace {

// Appends a run, merging it into the last one when both layouts continue it.
void append(std::vector<FullRun>& runs, size_t local, size_t full, size_t count) {
  if (count == 0) return;
  if (!runs.empty()) {
    FullRun& last = runs.back();
    if (last.local_offset + last.count == local && last.full_offset + last.count == full) {
      last.count += count;
      return;
    }
  }
  runs.push_back(FullRun{local, full, count});
}

// The runs of one tensor (gpt_shard.h's ShardTensor: split_dim, split_parts, padding rows).
void append_tensor(std::vector<FullRun>& runs, const ShardTensor& t) {
  if (t.split_dim < 0) {
    append(runs, t.offset, t.full_offset, t.numel());
    return;
  }
  const size_t held = static_cast<size_t>(t.split_end - t.split_begin);
  if (t.split_dim == 0) {  // rows: one run per part; wte's padding rows are past `held`
    size_t row = 1;        // elements per row (1 for a vector)
    for (size_t d = 1; d < t.shape.size(); ++d) row *= static_cast<size_t>(t.shape[d]);
    const size_t local_part = static_cast<size_t>(t.shape[0] / t.split_parts);
    const size_t full_part = static_cast<size_t>(t.full_shape[0] / t.split_parts);
    for (size_t k = 0; k < static_cast<size_t>(t.split_parts); ++k) {
      append(runs, t.offset + k * local_part * row,
             t.full_offset + (k * full_part + static_cast<size_t>(t.split_begin)) * row,
             held * row);
    }
    return;
  }
  const size_t local_cols = static_cast<size_t>(t.shape[1]);  // columns: one run per row
  const size_t full_cols = static_cast<size_t>(t.full_shape[1]);
  for (size_t i = 0; i < static_cast<size_t>(t.shape[0]); ++i) {
    append(runs, t.offset + i * local_cols,
           t.full_offset + i * full_cols + static_cast<size_t>(t.split_begin), held);
  }
}

}  // namespace

std::vector<FullRun> full_runs(const std::vector<ShardTensor>& tensors) {
  std::vector<FullRun> runs;
  for (const ShardTensor& t : tensors) append_tensor(runs, t);
  return runs;
}

std::vector<FullRun> owned_full_runs(const std::vector<ShardTensor>& tensors,
                                     const ShardSpec& spec) {
  std::vector<FullRun> runs;
  for (const ShardTensor& t : tensors) {
    if (t.replicated_in_tp && spec.tp_rank != 0) continue;
    if (t.name == "wte" && !spec.embed) continue;
    append_tensor(runs, t);
  }
  return runs;
}

std::vector<FullRun> clip_runs(const std::vector<FullRun>& runs, size_t local_begin,
                               size_t local_end) {
  std::vector<FullRun> out;
  for (const FullRun& r : runs) {
    const size_t begin = std::max(r.local_offset, local_begin);
    const size_t end = std::min(r.local_offset + r.count, local_end);
    if (begin >= end) continue;
    const size_t skip = begin - r.local_offset;
    out.push_back(FullRun{begin, r.full_offset + skip, end - begin});
  }
  return out;
}

size_t run_elements(const std::vector<FullRun>& runs) {
  size_t n = 0;
  for (const FullRun& r : runs) n += r.count;
  return n;
}

}  // namespace plexus::engine
