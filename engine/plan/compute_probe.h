// compute_probe.h - the placement planner's measured compute: how long one transformer block
// and the model's ends (embedding, final LayerNorm, LM head and loss) take forward and backward
// on this machine, for a microbatch of `rows` sequences on a tensor-parallel slice of degree
// `tensor`, and how many floats their tensor-parallel allreduces move.
//
// Each shape builds two throwaway GptShards on the compute device, accounted in a tracker of
// their own (the run's memory report never sees them): one block alone, and one block with the
// embedding and the head. Their difference is the ends' cost. Each runs forward then backward
// once to warm up, then `reps` times; the median is kept. The tensor-parallel allreduces are
// not run (a rank alone holds one slice): they are counted, so the planner prices them with
// the collective cost model (plx_comm_predict_time) instead. The planner runs the probe on rank
// 0 alone and scales it by how much the host's ranks share its cores (blas_threads.h), then
// broadcasts it, so every rank plans from the same numbers (auto_placement.h).
//
// Thread safety: none; uses the compute device and its BLAS threads.
#pragma once

#include <vector>

#include "engine/model/gpt.h"
#include "engine/plan/sync_probe.h"

namespace plexus::engine {

struct ProbeShape {
  int rows = 1;    // sequences per microbatch
  int tensor = 1;  // tensor-parallel degree
  auto operator<=>(const ProbeShape&) const = default;
};

struct ProbeTimes {
  double block_forward_s = 0, block_backward_s = 0;  // one block
  double ends_forward_s = 0, ends_backward_s = 0;    // embedding + head + loss
  // Tensor-parallel allreduce traffic (tensor > 1): calls and floats of one block's forward and
  // backward, and of the ends' forward and backward.
  int block_allreduces = 0, ends_allreduces = 0;
  double block_allreduce_floats = 0, ends_allreduce_floats = 0;
  // Seconds per float to give back a range of a TrackedBuffer and commit it again (its pages
  // returned, zero-filled and faulted in): what ZeRO-2 and -3 pay for every unit they gather or
  // whose gradient they hold (probe_commit_seconds_per_float; the same for every shape).
  double commit_s_per_float = 0;
  // What a collective costs beyond the cost model among busy ranks, by the compute before it
  // (sync_probe.h); the same for every shape. Default: nothing.
  SyncOverhead sync;
};

// Measures one shape (see above) for the model `config` (its seq len is the microbatch's).
// Throws what the model throws (std::bad_alloc included).
ProbeTimes probe_compute(const GptConfig& config, const ProbeShape& shape, int reps);

// AdamW's seconds per parameter element on this machine (engine/optim/adamw.h, a 1 Mi-element
// buffer, the median of `reps`).
double probe_adamw_seconds_per_element(int reps);

// The seconds per float of TrackedBuffer::release then commit of a 4 MiB range (the median of
// `reps`), in a tracker of its own.
double probe_commit_seconds_per_float(int reps);

}  // namespace plexus::engine
