// step_time_model.cpp - see step_time_model.h.
#include "engine/plan/step_time_model.h"

#include <fmt/format.h>

#include <algorithm>

#include "engine/placement/placement.h"

namespace plexus::engine {

namespace {

// The run's placement in cluster order (rank = d*|P|*|T| + p*|T| + t), as
// PlanCandidate::placement() writes it, for the groups of rank 0.
Placement cluster_placement(const MemoryModelInput& in) {
  Placement placement =
      parse_placement(fmt::format("D{}P{}T{}", in.data, in.pipeline, in.tensor));
  resolve_placement(placement, in.data * in.pipeline * in.tensor, 0, 0);
  return placement;
}

}  // namespace

StepTimePrediction predict_step_time(const MemoryModelInput& in, const ProbeTimes& probe,
                                     double adamw_s_per_element, const CollectiveCost& cost) {
  const plx_memory_plan_t& plan = in.plan;
  const bool ckpt = plan.checkpoint_every > 0;
  const int M = in.microbatches, P = in.pipeline;
  const int rows = in.global_batch / in.data / M;
  const Placement placement = cluster_placement(in);
  const std::vector<int> pipeline = placement.group_ranks(0, 'P');
  const size_t boundary = static_cast<size_t>(rows) * in.config.max_seq_len * in.config.n_embd;

  // Every collective also pays the synchronisation overhead among busy ranks, by the compute
  // that precedes it (sync_probe.h).
  const SyncOverhead& sync = probe.sync;
  const double block_compute = probe.block_forward_s + probe.block_backward_s;
  // Tensor-parallel allreduces of one block and of the ends, per microbatch.
  double block_tp = 0, ends_tp = 0;
  if (in.tensor > 1) {
    const std::vector<int> group = placement.group_ranks(0, 'T');
    if (probe.block_allreduces > 0) {
      const size_t each = static_cast<size_t>(probe.block_allreduce_floats /
                                              probe.block_allreduces);
      // Half the calls are the forward's, which checkpointing runs twice.
      block_tp = probe.block_allreduces * (ckpt ? 1.5 : 1.0) *
                 (cost("allreduce", each, group) +
                  sync.at(block_compute / probe.block_allreduces));
    }
    if (probe.ends_allreduces > 0) {
      const size_t each = static_cast<size_t>(probe.ends_allreduce_floats /
                                              probe.ends_allreduces);
      ends_tp = probe.ends_allreduces *
                (cost("allreduce", each, group) +
                 sync.at((probe.ends_forward_s + probe.ends_backward_s) / probe.ends_allreduces));
    }
  }
  // A stage's two messages per microbatch follow its forward and its backward.
  const double message =
      P > 1 ? cost("sendrecv", boundary, {pipeline[0], pipeline[1]}) + sync.at(block_compute / 2) : 0.0;

  StepTimePrediction out;
  double sum = 0, slowest = 0, slowest_compute = 0, slowest_tensor = 0;
  std::vector<StageSizes> stages;
  for (int p = 0; p < P; ++p) {
    stages.push_back(stage_sizes(in, p));
    const ShardSpec& spec = stages.back().spec;
    const int blocks = spec.last_block - spec.first_block;
    double compute = blocks * (probe.block_forward_s + probe.block_backward_s +
                               (ckpt ? probe.block_forward_s : 0.0));
    if (spec.head) compute += probe.ends_forward_s + probe.ends_backward_s;
    const double tensor = blocks * block_tp + (spec.head ? ends_tp : 0.0);
    const double s = compute + tensor + 2 * message;
    sum += s;
    if (s > slowest) slowest = s, slowest_compute = compute, slowest_tensor = tensor;
  }
  // The pipeline's time, split between compute, tensor and pipeline traffic in the proportions
  // of its slowest stage (stages that all take no time take none, rather than 0 / 0).
  const double steps = P == 1 || slowest <= 0 ? M : (sum / slowest + (M - 1));
  out.compute_s = steps * slowest_compute;
  out.tensor_s = steps * slowest_tensor;
  out.pipeline_s = steps * 2 * message;

  // Data-parallel traffic and the optimizer, on the stage with the most parameters.
  const StageSizes* largest = &stages.front();
  for (const StageSizes& z : stages) {
    if (z.params > largest->params) largest = &z;
  }
  const std::vector<int> data = placement.group_ranks(0, 'D');
  const size_t shard = largest->shard;
  if (in.data > 1) {
    // One collective per unit (unit_collectives.h) or per bucket (the D plugin).
    // During the passes a unit's collective follows its block's compute; after the step they
    // come back to back.
    auto per_unit = [&](const char* collective, bool gathered_only, double burst) {
      double s = 0;
      for (const ParamUnit& u : largest->units) {
        if (gathered_only && u.count <= plan.param_persistence_threshold) continue;
        s += cost(collective, (u.count + in.data - 1) / in.data, data) + sync.at(burst);
      }
      return s;
    };
    const double pass = block_compute / 2;
    switch (plan.zero_stage) {
      case 0: {
        const size_t bucket = std::max<size_t>(1, in.bucket_bytes / sizeof(float));
        for (size_t left = largest->params; left > 0; left -= std::min(left, bucket)) {
          out.data_s += cost("allreduce", std::min(left, bucket), data) + sync.at(0);
        }
        break;
      }
      case 1:
        out.data_s = per_unit("reduce_scatter", false, 0) + per_unit("allgather", false, 0);
        break;
      case 2:
        out.data_s = M * per_unit("reduce_scatter", false, pass) + per_unit("allgather", false, 0);
        break;
      default:
        // Every unit's gradient per microbatch; the gathered units at every forward, backward
        // and recompute; the persistent ones once after the step.
        out.data_s = M * per_unit("reduce_scatter", false, pass) +
                     M * (ckpt ? 3 : 2) * per_unit("allgather", true, pass) +
                     (per_unit("allgather", false, 0) - per_unit("allgather", true, 0));
    }
  }
  // ZeRO-2 and -3 commit (zero-fill and fault in) each unit's gradient range per microbatch and
  // release it after its reduce-scatter; ZeRO-3 does the same with the parameters of each
  // gathered unit at every use.
  if (plan.zero_stage >= 2) {
    double gathered = 0;
    for (const ParamUnit& u : largest->units) {
      if (plan.zero_stage == 3 && u.count > plan.param_persistence_threshold) gathered += u.count;
    }
    out.data_s += M * probe.commit_s_per_float *
                  (static_cast<double>(largest->params) + (ckpt ? 3 : 2) * gathered);
  }
  if (P > 1) {
    out.data_s += cost("allreduce", stages.front().wte, {pipeline.front(), pipeline.back()}) + sync.at(0);
  }
  out.optimizer_s = static_cast<double>(plan.zero_stage > 0 ? shard : largest->params) *
                    adamw_s_per_element;
  // The loss, the gradient norm's sums and the stop check: five one-float collectives.
  std::vector<int> world(static_cast<size_t>(in.data) * P * in.tensor);
  for (size_t r = 0; r < world.size(); ++r) world[r] = static_cast<int>(r);
  out.other_s = 5 * (cost("allreduce", 1, world) + (world.size() > 1 ? sync.at(0) : 0.0));
  return out;
}

}  // namespace plexus::engine
