// memory_model.cpp - see memory_model.h.
#include "engine/plan/memory_model.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "engine/config/model_config.h"
#include "engine/memory/memory_tracker.h"
#include "engine/model/activation_policy.h"
#include "engine/model/gpt_shard.h"
#include "engine/model/shard_activations.h"
#include "engine/state/memory_plan.h"
#include "engine/state/stage_model.h"

namespace plexus::engine {

namespace {

constexpr double kFloat = sizeof(float);

size_t part_of(size_t count, int degree) { return (count + degree - 1) / degree; }

bool is_block(const ParamUnit& u) { return u.name.rfind("blocks.", 0) == 0; }

}  // namespace

StageSizes stage_sizes(const MemoryModelInput& in, int stage) {
  StageLayout layout;
  layout.pipeline_degree = in.pipeline;
  layout.stage = stage;
  layout.tensor_degree = in.tensor;
  StageSizes z;
  z.spec = chunk_spec(in.config, layout, 0);
  const std::vector<ShardTensor> tensors = shard_tensors(in.config, z.spec);
  ShardUnitTable table = shard_units(tensors);
  z.replicated_max = table.replicated_max;
  z.units = std::move(table.units);
  for (const ShardTensor& t : tensors) z.params += t.numel();
  for (const ParamUnit& u : z.units) {
    const size_t s = part_of(u.count, in.data);
    z.shard += s;
    z.largest_part = std::max(z.largest_part, s);
    if (s * in.data != u.count) z.padded = std::max(z.padded, s * in.data);
    if (is_block(u)) z.largest_block = std::max(z.largest_block, u.count);
    if (u.name == "wte") z.wte = u.count;
    if (u.name == "wpe") z.wpe = u.count;
    if (u.name == "ln_f") z.lnf = u.count;
  }
  return z;
}

namespace {

// Microbatches a chunk holds at once under the schedule (stage_model.h's slot reuse).
int slots_in_flight(const MemoryModelInput& in, int stage) {
  if (in.pipeline == 1) return 1;
  if (in.schedule == "simple") return in.microbatches;
  return std::min(in.microbatches, in.pipeline - stage);
}

RankMemory predict_stage(const MemoryModelInput& in, int stage) {
  const plx_memory_plan_t& plan = in.plan;
  const StageSizes z = stage_sizes(in, stage);
  const ShardSpec& spec = z.spec;
  const size_t n = z.params, shard = z.shard, wte = z.wte, wpe = z.wpe, lnf = z.lnf;
  const int D = in.data;
  RankMemory out;
  out.stage = stage;
  CategoryBytes& dev = out.device;
  CategoryBytes& host = out.host;
  const int zero = plan.zero_stage;

  // Parameters.
  if (zero < 3) {
    dev.parameters = n * kFloat;
  } else {
    const size_t persist = plan.param_persistence_threshold;
    size_t kept = 0;
    std::vector<size_t> gathered;  // the non-persistent units, whole while in use
    for (const ParamUnit& u : z.units) {
      if (u.count <= persist) {
        kept += u.count;
      } else {
        kept += part_of(u.count, D);
        gathered.push_back(u.count);
      }
    }
    std::sort(gathered.rbegin(), gathered.rend());
    const size_t at_once = std::min(gathered.size(), static_cast<size_t>(1 + plan.prefetch_units));
    size_t in_use = 0;
    for (size_t i = 0; i < at_once; ++i) in_use += gathered[i];
    dev.parameters = (kept + in_use) * kFloat;
  }
  // Gradients.
  if (zero < 2) {
    dev.gradients = n * kFloat;
  } else {
    const size_t held_wte = spec.embed && spec.head ? wte : 0;  // head to embedding
    size_t in_use = held_wte + z.largest_block;
    if (spec.head) in_use = std::max(in_use, lnf + wte);
    if (spec.embed) in_use = std::max(in_use, wte + wpe);
    dev.gradients = (shard + in_use) * kFloat;
  }
  // Optimizer.
  const double moments = 2.0 * (zero > 0 ? shard : n) * kFloat;
  (plan.offload_optimizer ? host.optimizer : dev.optimizer) = moments;
  if (plan.offload_optimizer) host.communication += moments;  // the step's host copies

  // Activations.
  const int rows = in.global_batch / D / in.microbatches;
  const int T = in.config.max_seq_len, C = in.config.n_embd;
  const ActivationPolicy policy = MemoryPlan{plan, nullptr}.activation_policy();
  const int blocks = spec.last_block - spec.first_block;
  SlotShape shape{rows, T, C, in.config.n_head, in.tensor, blocks,
                  padded_vocab(in.config.vocab_size, in.tensor) / in.tensor,
                  spec.embed, spec.head};
  const double slot = static_cast<double>(slot_floats(shape, policy)) * kFloat;
  const int k = slots_in_flight(in, stage);
  double acts = k * slot;
  if (policy.offload && policy.checkpoint_every > 0 && blocks > 0) {
    const int inputs = slot_inputs(shape, policy);
    const double input = static_cast<double>(rows) * T * C * kFloat;
    const int on_device = std::min(inputs, policy.loading_horizon);
    acts -= k * (inputs - on_device) * input;
    host.activations = k * inputs * input;
  }
  const ShardWorkspace work = shard_workspace_floats(in.config, spec, policy, rows, T);
  dev.activations = acts + (work.workspace + work.recompute) * kFloat;

  // Communication.
  if (in.tensor > 1) dev.communication += z.replicated_max * kFloat;
  if (zero > 0) {
    dev.communication += (z.largest_part + z.padded) * kFloat;
    if (in.saves_whole) dev.communication += n * kFloat;
  }
  return out;
}

}  // namespace

const RankMemory& MemoryPrediction::largest() const {
  const RankMemory* best = &stages.front();
  for (const RankMemory& r : stages) {
    if (r.device.total() > best->device.total() ||
        (r.device.total() == best->device.total() && r.total() > best->total())) {
      best = &r;
    }
  }
  return *best;
}

MemoryModelInput memory_model_input(const TrainOptions& o, int data, int pipeline, int tensor,
                                    const plx_memory_plan_t& plan) {
  MemoryModelInput in;
  in.config = model_config(o.model);
  in.data = data, in.pipeline = pipeline, in.tensor = tensor;
  in.global_batch = o.global_batch;
  in.microbatches = o.microbatches;
  in.schedule = o.pipeline_schedule;
  in.plan = plan;
  in.saves_whole = !o.checkpoint_path.empty() || !o.save_params_path.empty();
  in.bucket_bytes = o.bucket_bytes > 0 ? o.bucket_bytes : in.bucket_bytes;
  return in;
}

std::string describe_prediction(const MemoryPrediction& prediction) {
  std::string text;
  auto pool = [](const CategoryBytes& b) {
    return fmt::format("{} (parameters {}, gradients {}, optimizer {}, activations {}, "
                       "communication {})",
                       format_bytes(b.total()), format_bytes(b.parameters),
                       format_bytes(b.gradients), format_bytes(b.optimizer),
                       format_bytes(b.activations), format_bytes(b.communication));
  };
  for (const RankMemory& r : prediction.stages) {
    text += fmt::format("{}stage {}: device {}, host {}", text.empty() ? "" : "\n", r.stage,
                        pool(r.device), pool(r.host));
  }
  return text;
}

nlohmann::json prediction_json(const RankMemory& stage) {
  auto bytes = [](double b) { return static_cast<int64_t>(std::llround(b)); };
  auto pool = [&](const CategoryBytes& b) {
    const nlohmann::json peak = {{"parameters", bytes(b.parameters)},
                                 {"gradients", bytes(b.gradients)},
                                 {"optimizer", bytes(b.optimizer)},
                                 {"activations", bytes(b.activations)},
                                 {"communication", bytes(b.communication)}};
    return nlohmann::json{{"peak", peak}, {"peak_total", bytes(b.total())}};
  };
  return {{"stage", stage.stage}, {"device", pool(stage.device)}, {"host", pool(stage.host)}};
}

std::string check_memory_model_input(const MemoryModelInput& in) {
  if (std::string why = in.config.validate(); !why.empty()) return why;
  if (in.data < 1 || in.pipeline < 1 || in.tensor < 1) {
    return fmt::format("degrees D{} P{} T{} must be at least 1", in.data, in.pipeline, in.tensor);
  }
  if (in.pipeline > in.config.n_layer) {
    return fmt::format("pipeline degree {} exceeds the {} blocks", in.pipeline, in.config.n_layer);
  }
  if (in.config.n_head % in.tensor != 0) {
    return fmt::format("tensor degree {} does not divide the {} heads", in.tensor,
                       in.config.n_head);
  }
  if (in.microbatches < 1 || in.global_batch % (in.data * in.microbatches) != 0) {
    return fmt::format("batch {} does not split over {} data ranks x {} microbatches",
                       in.global_batch, in.data, in.microbatches);
  }
  if (in.schedule != "simple" && in.schedule != "1f1b") {
    return fmt::format("schedule '{}' is not modelled (simple, 1f1b)", in.schedule);
  }
  return "";
}

MemoryPrediction predict_memory(const MemoryModelInput& in) {
  MemoryPrediction out;
  for (int p = 0; p < in.pipeline; ++p) out.stages.push_back(predict_stage(in, p));
  return out;
}

}  // namespace plexus::engine
