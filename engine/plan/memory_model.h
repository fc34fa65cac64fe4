// memory_model.h - what each rank of a run will hold, predicted from the engine's own sizes
// without building anything: the same figures the memory report measures (docs/memory.md: per
// pool and category, accounted TrackedBuffers), for the placement planner (planner.h) and for
// checking a hand-written placement against a budget.
//
// Per chunk of a rank (stage p, tensor rank 0, data rank 0; v = 1) with n parameters in units
// u of count_u elements, parts s_u = ceil(count_u / |D|) and shard S = sum s_u:
//   parameters     n; ZeRO-3: the persistent units (count_u <= persist) whole, the others' parts,
//                  and the units gathered at once (the one in use and `prefetch` ahead)
//   gradients      n; ZeRO-2/3: S plus the units whose backward is running (wte stays committed
//                  from the head to the embedding when one chunk holds both)
//   optimizer      AdamW's m and v, 2n, or 2S with ZeRO (host pool with offload(optimizer))
//   activations    k activation slots (shard_activations.h's slot_floats) for microbatches of
//                  rows = batch / (|D| M), k the microbatches in flight (1 with |P| = 1; GPipe
//                  M; 1F1B min(M, |P| - p)), plus the backward workspace and the recompute area
//                  (gpt_shard.h's shard_workspace_floats); offloaded inputs live in the host
//                  pool except the `horizon` groups fetched ahead
//   communication  tensor parallelism's replicated-gradient staging; ZeRO's part and padded
//                  unit buffers; at the end, with ZeRO, one whole buffer that a save gathers;
//                  optimizer offload's host copies of parameters and gradients
// Each category is predicted at its peak and the pool's peak as their sum: an upper bound that
// the run reaches when the peaks coincide (the last backward of a step), which they nearly do.
// Untracked memory (the data file, the plugins' own buffers, the BLAS library) is not in it.
// Thread safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "engine/config/options.h"
#include "engine/model/gpt.h"
#include "engine/model/gpt_shard.h"
#include "engine/model/param_units.h"
#include "plexus/plugin.h"

namespace plexus::engine {

struct MemoryModelInput {
  GptConfig config;
  int data = 1, pipeline = 1, tensor = 1;  // degrees
  int global_batch = 1;                    // sequences per step over all data ranks
  int microbatches = 1;
  std::string schedule = "1f1b";           // simple (GPipe) or 1f1b; interleaved not modelled
  plx_memory_plan_t plan = PLX_MEMORY_PLAN_INIT;  // what the memory plugins ask (memory_plan.h)
  bool saves_whole = true;                 // --checkpoint or --save-params gathers at the end
  size_t bucket_bytes = size_t{25} << 20;  // the D plugin's allreduce buckets (step time only)
};

struct CategoryBytes {
  double parameters = 0, gradients = 0, optimizer = 0, activations = 0, communication = 0;
  double total() const { return parameters + gradients + optimizer + activations + communication; }
};

struct RankMemory {
  int stage = 0;  // p
  CategoryBytes device, host;
  double total() const { return device.total() + host.total(); }
};

struct MemoryPrediction {
  std::vector<RankMemory> stages;  // one per pipeline stage p (its ranks hold the same)
  // The stage whose device pool (then both pools) is largest: the run's most loaded rank.
  const RankMemory& largest() const;
};

// The sizes of one stage's chunk (v = 1), tensor rank 0, data rank 0, in elements: its shard
// spec and units, its parameters n, its ZeRO shard S = sum s_u, the largest part and padded
// unit (ZeRO's staging), the largest block unit, wte (the last wte unit: the head's copy when
// the chunk does not embed), wpe, ln_f (0 when absent), and the tensor-parallel staging.
struct StageSizes {
  ShardSpec spec;
  std::vector<ParamUnit> units;
  size_t params = 0, shard = 0, largest_part = 0, padded = 0, largest_block = 0;
  size_t wte = 0, wpe = 0, lnf = 0, replicated_max = 0;
};
StageSizes stage_sizes(const MemoryModelInput& in, int stage);

// The input for a run with these options, resolved degrees and memory plan.
MemoryModelInput memory_model_input(const TrainOptions& o, int data, int pipeline, int tensor,
                                    const plx_memory_plan_t& plan);

// "" or why the input cannot be predicted (a bad degree, batch not splitting, interleaved).
std::string check_memory_model_input(const MemoryModelInput& in);
// Predicts every stage's peaks (see above). The input must pass check_memory_model_input.
MemoryPrediction predict_memory(const MemoryModelInput& in);
// One line per stage: "stage 0: device 7.5 MiB (parameters 275.2 KiB, gradients ...,
// communication 0 B), host 0 B".
std::string describe_prediction(const MemoryPrediction& prediction);
// One stage's prediction in the shape of MemoryTracker::report()'s peaks, whole bytes:
//   {"stage": p, "device": {"peak": {"parameters": ..., ..., "communication": ...},
//    "peak_total": ...}, "host": {...}}
// (plexus-train --estimate-memory --memory-report writes it per rank; docs/memory.md).
nlohmann::json prediction_json(const RankMemory& stage);

}  // namespace plexus::engine
