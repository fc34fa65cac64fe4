// shard_step.h - the element-wise work a rank does on the elements it owns: AdamW (on the
// device pool, or on host copies when the optimizer is offloaded), the gradient's sum of
// squares, and walking those elements tensor by tensor.
//
// A rank owns, of each unit, the elements its UnitPartition gives it (all of them when the
// state is replicated: a partition over one rank). Each buffer is read in one of two index
// spaces (unit_partition.h): full (the chunk's flat layout) or shard (the rank's shard). AdamW
// is element-wise (adamw.h), so stepping the owned elements piece by piece gives exactly the
// numbers stepping the whole buffer gives; a piece is the part of one unit that lies in one
// tensor, stepped with the tensor's weight decay (0 for tensors that do not decay, which leaves
// the parameter as the decay mask would).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/memory/memory_tracker.h"
#include "engine/model/gpt_shard.h"
#include "engine/optim/adamw.h"
#include "engine/state/unit_partition.h"

namespace plexus::engine {

// Calls fn(unit, tensor, full_index, shard_index, n) for every run of n owned elements that
// lies in one tensor, in buffer order. tensors: the chunk's table (GptShard::tensors(), ordered
// by offset, tiling the buffer).
template <typename Fn>
void for_each_owned_piece(const std::vector<ShardTensor>& tensors,
                          const UnitPartition& partition, Fn&& fn) {
  size_t t = 0;
  for (int unit = 0; unit < partition.num_units(); ++unit) {
    const UnitSlice& s = partition.slice(unit);
    const size_t begin = s.full_begin(), end = begin + s.owned;
    while (t < tensors.size() && tensors[t].offset + tensors[t].numel() <= begin) ++t;
    for (size_t k = t; k < tensors.size() && tensors[k].offset < end; ++k) {
      const size_t a = std::max(begin, tensors[k].offset);
      const size_t b = std::min(end, tensors[k].offset + tensors[k].numel());
      if (b > a) fn(unit, tensors[k], a, s.shard_offset + (a - begin), b - a);
    }
  }
}

// Where one chunk's step reads and writes.
struct StepBuffers {
  float* params = nullptr;
  bool params_in_shard = false;  // false: full space (params()), true: shard space
  float* whole_params = nullptr;  // with params_in_shard: the full-space buffer of the units
  const std::vector<bool>* whole_units = nullptr;  // marked true here (ZeRO-3's persistent ones)
  float* grads = nullptr;
  bool grads_in_shard = false;
  float* m = nullptr;  // shard space, partition.shard_elements() floats
  float* v = nullptr;
};

// One AdamW step (adamw_step's arithmetic) over the rank's owned elements of one chunk, on the
// compute device (adamw_step). offload: m and v live in the host pool; the owned gradient and
// parameters are first copied to host staging (host, communication; freed on return), stepped
// there on the host (adamw_step_host, whatever the device), and the parameters copied back.
void adamw_owned(const std::vector<ShardTensor>& tensors, const UnitPartition& partition,
                 const StepBuffers& buffers, int64_t step, const AdamWConfig& config,
                 bool offload, MemoryTracker& tracker);

}  // namespace plexus::engine
