// planner.h - plexus-train's `--placement auto`: the placement planner. It enumerates the ways
// to run the job on its world (the D/P/T degrees, the microbatches, the ZeRO stage, activation
// checkpointing and offloading), predicts each one's per-rank memory peak (memory_model.h) and
// step time (step_time_model.h), drops those that cannot run or do not fit the memory budget,
// and ranks the rest: optimize "speed" by predicted step time (then lower memory), "memory" by
// predicted peak (then speed), as SageMaker model parallel's `optimize`.
//
// Candidates: every D x P x T = world size with T dividing the heads and at most the ranks on
// one host (tensor-parallel traffic stays on the host, as Megatron-LM advises), P at most the
// blocks; every microbatch count M dividing the local batch (with P > 1, M >= P, so the 1F1B
// pipeline fills); ZeRO stages 0-3 when D > 1 (ZeRO-3 with the plugin's defaults, persist
// 100000 elements and prefetch 1); with and without +ckpt; with and without offloading the
// optimizer, and the activations when checkpointing (horizon 4, the plugin's default). A
// degree fixed by --pipeline-degree or --tensor-degree, or microbatches fixed by the user,
// limit the enumeration. Pipelines use the 1F1B schedule, one model chunk per stage.
// The peak compared with the budget is the largest rank's: device and host pools together on
// --device cpu (both are host memory), the device pool on cuda.
// Thread safety: pure, except for what the probe and cost functions do.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/config/options.h"
#include "engine/plan/compute_probe.h"
#include "engine/plan/memory_model.h"
#include "engine/plan/plan_candidate.h"
#include "engine/plan/step_time_model.h"

namespace plexus::engine {

struct PlannerInput {
  TrainOptions options;         // model, batch, seed ...; optimize; pipeline/tensor degrees
  bool microbatches_fixed = false;  // options.microbatches was given by the user
  int world_size = 1;
  int local_size = 1;           // ranks on one host (tensor groups stay within it)
  double budget_bytes = 0;      // per rank
  bool budget_device_only = false;  // --device cuda: compare the device pool only
};

struct PlanRow {
  PlanCandidate candidate;
  MemoryPrediction memory;
  double peak_bytes = 0;  // the largest rank's, as compared with the budget
  StepTimePrediction time;
  bool fits = false;
};

struct PlanResult {
  std::vector<PlanRow> rows;  // every valid candidate: the fitting ones ranked, then the others by peak
  int fitting = 0;            // rows[0 .. fitting-1] fit
  // Candidates not even predicted, with why, e.g. "tensor degree 3 does not divide the 4 heads".
  std::vector<std::pair<std::string, int>> invalid;  // reason, count
};

// The shapes whose compute the plan needs measured (one per microbatch rows x tensor degree).
std::vector<ProbeShape> planner_probe_shapes(const PlannerInput& in);

// Ranks every candidate. `probes` holds one ProbeTimes per planner_probe_shapes() entry, in
// that order.
PlanResult make_plan(const PlannerInput& in, const std::vector<ProbeTimes>& probes,
                     double adamw_s_per_element, const CollectiveCost& cost);

// The candidates the planner would consider (valid ones), and how many were left out and why.
std::vector<PlanCandidate> planner_candidates(
    const PlannerInput& in, std::vector<std::pair<std::string, int>>* invalid);

// The run's options for a candidate: placement string, microbatches, 1F1B, one chunk.
TrainOptions apply_candidate(const TrainOptions& o, const PlanCandidate& c);

// The ranked table rank 0 prints: the first `shown` fitting candidates with predicted peak,
// step time and its parts, then the best of those that do not fit and the counts of the
// invalid ones, each with why.
std::string plan_table(const PlannerInput& in, const PlanResult& result, size_t shown);

// Bytes as the table and messages print them: format_bytes below 1 MiB, else MiB with two
// decimals, so that a peak just over the budget does not print as equal to it.
std::string planner_bytes(double bytes);

// The message when nothing fits: the budget, and the smallest peak any candidate needs and
// which one it is.
std::string nothing_fits_message(const PlannerInput& in, const PlanResult& result);

}  // namespace plexus::engine
