// auto_placement.cpp - see auto_placement.h.
#include "engine/plan/auto_placement.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <vector>

#include "engine/config/blas_threads.h"
#include "engine/config/model_config.h"
#include "engine/config/size_limits.h"
#include "engine/device/compute.h"
#include "engine/device/device.h"
#include "engine/plan/planner.h"
#include "engine/plan/sync_probe.h"
#include "plexus/plexus.h"

namespace plexus::engine {

namespace {

constexpr int kProbeReps = 3;
constexpr size_t kTableRows = 8;
constexpr int kSyncIterations = 60;

// Without --memory-per-rank: on cpu the host's memory over its ranks; on cuda the GPU's memory
// over the ranks that share it (ranks take GPU local rank modulo the visible GPUs).
double default_budget(ComputeDevice device, const World& world) {
  if (device != ComputeDevice::kCuda) {
    return static_cast<double>(host_memory_bytes()) / world.local_size();
  }
  const int gpus = std::max(1, cuda_device_count(nullptr));
  const int sharing = (world.local_size() + gpus - 1) / gpus;
  return static_cast<double>(cuda_device_memory_bytes()) / sharing;
}

}  // namespace

TrainOptions plan_auto_placement(const TrainOptions& o, World& world) {
  PlannerInput in;
  in.options = o;
  in.microbatches_fixed = o.microbatches_given;
  in.world_size = world.size();
  in.local_size = world.local_size();
  in.budget_device_only = o.device == ComputeDevice::kCuda;
  in.budget_bytes = o.memory_per_rank > 0 ? static_cast<double>(o.memory_per_rank)
                                          : default_budget(o.device, world);
  if (o.optimize != "speed" && o.optimize != "memory") {
    throw std::invalid_argument(
        fmt::format("--optimize '{}' is not one of speed, memory", o.optimize));
  }
  if (std::string why = model_config(o.model).validate(); !why.empty()) {
    throw std::invalid_argument("--placement auto: " + why);
  }
  const std::vector<ProbeShape> shapes = planner_probe_shapes(in);
  std::vector<ProbeTimes> probes;
  const bool leader = world.rank() == 0;
  if (leader) {
    std::printf("plexus-train: placement planner: measuring %zu microbatch shape%s on rank 0\n",
                shapes.size(), shapes.size() == 1 ? "" : "s");
    std::fflush(stdout);
  }
  // Rank 0 measures alone, with the BLAS threads every rank will use, while the others wait;
  // the figures are scaled by how much the host's ranks share its cores, then broadcast, so
  // every rank plans from the same numbers.
  const int threads = choose_blas_threads(world.local_size());
  const double sharing = core_sharing_factor(world.local_size(), threads);
  for (const ProbeShape& shape : shapes) {
    ProbeTimes t;
    if (leader) t = probe_compute(model_config(o.model), shape, kProbeReps);
    float figures[8] = {static_cast<float>(t.block_forward_s * sharing),
                        static_cast<float>(t.block_backward_s * sharing),
                        static_cast<float>(t.ends_forward_s * sharing),
                        static_cast<float>(t.ends_backward_s * sharing),
                        static_cast<float>(t.block_allreduces),
                        static_cast<float>(t.block_allreduce_floats),
                        static_cast<float>(t.ends_allreduces),
                        static_cast<float>(t.ends_allreduce_floats)};
    world.broadcast(figures, 8, "planner probe");
    t.block_forward_s = figures[0], t.block_backward_s = figures[1];
    t.ends_forward_s = figures[2], t.ends_backward_s = figures[3];
    t.block_allreduces = static_cast<int>(figures[4]);
    t.block_allreduce_floats = figures[5];
    t.ends_allreduces = static_cast<int>(figures[6]);
    t.ends_allreduce_floats = figures[7];
    probes.push_back(t);
  }
  float rates[2] = {0.0f, 0.0f};
  if (leader) {
    rates[0] = static_cast<float>(probe_adamw_seconds_per_element(kProbeReps) * sharing);
    rates[1] = static_cast<float>(probe_commit_seconds_per_float(kProbeReps) * sharing);
  }
  world.broadcast(rates, 2, "planner probe");
  const double adamw = rates[0];
  for (ProbeTimes& t : probes) t.commit_s_per_float = rates[1];
  plx_comm_t comm = world.comm();
  const SyncOverhead sync = probe_sync_overhead(comm, kSyncIterations);
  for (ProbeTimes& t : probes) t.sync = sync;
  if (leader && world.size() > 1) {
    std::printf("plexus-train: placement planner: a collective among busy ranks costs %.0f us "
                "(after %.0f us of compute) to %.0f us (after %.0f us) more than the cost model "
                "predicts (%d ranks, %d on this host)\n",
                sync.short_overhead_s * 1e6, sync.short_burst_s * 1e6,
                sync.long_overhead_s * 1e6, sync.long_burst_s * 1e6, world.size(),
                world.local_size());
    std::fflush(stdout);
  }
  const CollectiveCost cost = [comm](const char* collective, size_t floats,
                                           const std::vector<int>& ranks) {
    if (ranks.size() < 2) return 0.0;
    double seconds = 0;
    const plx_result_t r = plx_comm_predict_time(comm, collective, floats, PLX_FLOAT32,
                                                 ranks.data(), static_cast<int>(ranks.size()),
                                                 &seconds);
    if (r != PLX_SUCCESS) {
      throw CommFailure(r, std::string("placement planner: ") + plx_get_last_error(comm));
    }
    return seconds;
  };
  const PlanResult result = make_plan(in, probes, adamw, cost);
  if (leader) {
    std::printf("plexus-train: %s", plan_table(in, result, kTableRows).c_str());
    std::fflush(stdout);
  }
  if (result.fitting == 0) throw std::invalid_argument(nothing_fits_message(in, result));
  const PlanRow& chosen = result.rows.front();
  if (leader) {
    // One line for scripts (perf/planner-accuracy.sh compares it with the run's figures).
    std::printf("plexus-train: planned: placement %s microbatches %d predicted_peak_bytes %.0f "
                "predicted_step_s %.6f\n",
                chosen.candidate.placement().c_str(), chosen.candidate.microbatches,
                chosen.peak_bytes, chosen.time.total());
    std::fflush(stdout);
  }
  return apply_candidate(o, chosen.candidate);
}

}  // namespace plexus::engine
