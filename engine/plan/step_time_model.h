// step_time_model.h - a training step's predicted wall time for a run (memory_model.h's
// MemoryModelInput: degrees, batch, microbatches, schedule, memory plan), from the measured
// compute of one block and of the model's ends (compute_probe.h), AdamW's measured speed, and
// the collective cost model's predictions for each group's traffic (plx_comm_predict_time).
//
// Per microbatch, stage p with b_p blocks runs
//   compute   b_p (block forward + backward, + forward again with checkpointing) and, on the
//             last stage, the ends (embedding, head, loss);
//   tensor    (T > 1) the probe's counted allreduces of the T group, the forward ones again
//             with checkpointing;
//   pipeline  (P > 1) one activation and one gradient message to a neighbour stage;
// and the step takes M s_0 with P = 1, or sum_p s_p + (M - 1) max_p s_p for a pipeline (GPipe
// and 1F1B alike: Huang et al. 2019; Narayanan et al. 2021, the bubble (P - 1) / M). Then, not
// overlapped with compute: the data group's gradient traffic (allreduce of the stage's
// parameters; ZeRO-1 reduce-scatter + all-gather of the shard; ZeRO-2 a reduce-scatter per
// microbatch; ZeRO-3 also an all-gather of the non-persistent units per forward, backward and
// recompute), the tied embedding's allreduce between the first and last stage (P > 1), and
// AdamW over the stage's (sharded) parameters. The step's small collectives (loss, norm) are
// a few latencies. Validation is not part of a step.
// Thread safety: pure, except for what `cost` does.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "engine/plan/compute_probe.h"
#include "engine/plan/memory_model.h"

namespace plexus::engine {

// Predicted seconds of `collective` ("allreduce", "reduce_scatter", "allgather", "sendrecv")
// of `floats` float32 elements (counted as plx_comm_predict_time counts them) on these world
// ranks.
using CollectiveCost =
    std::function<double(const char* collective, size_t floats, const std::vector<int>& ranks)>;

struct StepTimePrediction {
  double compute_s = 0, tensor_s = 0, pipeline_s = 0, data_s = 0, optimizer_s = 0, other_s = 0;
  double total() const { return compute_s + tensor_s + pipeline_s + data_s + optimizer_s + other_s; }
};

// `probe` is the probe of ProbeShape{rows per microbatch, in.tensor}. World ranks are laid out
// in cluster order (D, P, T: rank = d|P||T| + p|T| + t), as PlanCandidate::placement() writes.
StepTimePrediction predict_step_time(const MemoryModelInput& in, const ProbeTimes& probe,
                                     double adamw_s_per_element, const CollectiveCost& cost);

}  // namespace plexus::engine
