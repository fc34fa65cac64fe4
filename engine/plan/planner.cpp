// planner.cpp - see planner.h.
#include "engine/plan/planner.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "engine/memory/memory_tracker.h"

namespace plexus::engine {

namespace {

// The memory plugins' defaults (plugins/zero, plugins/offload): the planner writes the plugins
// without arguments, so the run gets these.
constexpr size_t kZero3Persist = 100000;
constexpr int kZero3Prefetch = 1;
constexpr int kOffloadHorizon = 4;

std::vector<int> divisors(int n) {
  std::vector<int> out;
  for (int d = 1; d <= n; ++d) {
    if (n % d == 0) out.push_back(d);
  }
  return out;
}

plx_memory_plan_t memory_plan_of(const PlanCandidate& c) {
  plx_memory_plan_t plan = PLX_MEMORY_PLAN_INIT;
  plan.zero_stage = c.zero_stage;
  if (c.zero_stage == 3) {
    plan.param_persistence_threshold = kZero3Persist;
    plan.prefetch_units = kZero3Prefetch;
  }
  plan.checkpoint_every = c.checkpointing ? 1 : 0;
  plan.offload_activations = c.offload_activations ? 1 : 0;
  if (c.offload_activations) plan.activation_loading_horizon = kOffloadHorizon;
  plan.offload_optimizer = c.offload_optimizer ? 1 : 0;
  return plan;
}

MemoryModelInput model_input(const PlannerInput& in, const PlanCandidate& c) {
  return memory_model_input(apply_candidate(in.options, c), c.data, c.pipeline, c.tensor,
                            memory_plan_of(c));
}

double peak_of(const PlannerInput& in, const MemoryPrediction& m) {
  double peak = 0;
  for (const RankMemory& r : m.stages) {
    peak = std::max(peak, in.budget_device_only ? r.device.total() : r.total());
  }
  return peak;
}

int rows_of(const PlannerInput& in, const PlanCandidate& c) {
  return in.options.global_batch / c.data / c.microbatches;
}

void count(std::vector<std::pair<std::string, int>>* invalid, const std::string& why, int n) {
  if (invalid == nullptr || n == 0) return;
  for (auto& [reason, k] : *invalid) {
    if (reason == why) {
      k += n;
      return;
    }
  }
  invalid->emplace_back(why, n);
}

// `base` with every memory-plugin combination: ZeRO stages 0-3 (only 0 without data
// parallelism), with and without +ckpt, offloaded optimizer, and offloaded activations (only
// with checkpointing).
void add_memory_variants(const PlanCandidate& base, std::vector<PlanCandidate>* out) {
  for (int zero = 0; zero <= (base.data > 1 ? 3 : 0); ++zero) {
    for (const bool ckpt : {false, true}) {
      for (const bool off_act : {false, true}) {
        if (off_act && !ckpt) continue;
        for (const bool off_opt : {false, true}) {
          PlanCandidate c = base;
          c.zero_stage = zero;
          c.checkpointing = ckpt;
          c.offload_activations = off_act;
          c.offload_optimizer = off_opt;
          out->push_back(c);
        }
      }
    }
  }
}

std::string seconds_text(double s) {
  return s >= 1 ? fmt::format("{:.2f} s", s) : fmt::format("{:.1f} ms", s * 1e3);
}

}  // namespace

std::string planner_bytes(double bytes) {
  if (bytes < 1024.0 * 1024) return format_bytes(bytes);
  return fmt::format("{:.2f} MiB", bytes / (1024.0 * 1024));
}

TrainOptions apply_candidate(const TrainOptions& o, const PlanCandidate& c) {
  TrainOptions out = o;
  out.placement = c.placement();
  out.pipeline_degree = 0;
  out.tensor_degree = 0;
  out.microbatches = c.microbatches;
  out.pipeline_schedule = "1f1b";
  out.virtual_stages = 1;
  return out;
}

std::vector<PlanCandidate> planner_candidates(
    const PlannerInput& in, std::vector<std::pair<std::string, int>>* invalid) {
  const TrainOptions& o = in.options;
  const ModelOptions& m = o.model;
  std::vector<PlanCandidate> out;
  for (const auto& [option, degree] : {std::pair{"--tensor-degree", o.tensor_degree},
                                       std::pair{"--pipeline-degree", o.pipeline_degree}}) {
    if (degree > 0 && in.world_size % degree != 0) {
      count(invalid, fmt::format("{} {} does not divide the world size {}", option, degree,
                                 in.world_size),
            1);
      return out;
    }
  }
  for (int T : divisors(in.world_size)) {
    if (o.tensor_degree > 0 && T != o.tensor_degree) continue;
    for (int P : divisors(in.world_size / T)) {
      if (o.pipeline_degree > 0 && P != o.pipeline_degree) continue;
      const int D = in.world_size / (T * P);
      if (m.n_head % T != 0 || m.n_embd % m.n_head != 0) {
        count(invalid, fmt::format("tensor degree does not divide the {} heads", m.n_head), 1);
        continue;
      }
      if (T > in.local_size) {
        count(invalid, fmt::format("tensor degree above the {} ranks of a host", in.local_size),
              1);
        continue;
      }
      if (P > m.n_layer) {
        count(invalid, fmt::format("pipeline degree above the {} blocks", m.n_layer), 1);
        continue;
      }
      if (o.global_batch % D != 0) {
        count(invalid,
              fmt::format("the batch of {} does not split over the data degree", o.global_batch),
              1);
        continue;
      }
      const int local_rows = o.global_batch / D;
      for (int M : divisors(local_rows)) {
        if (in.microbatches_fixed && M != o.microbatches) continue;
        if (!in.microbatches_fixed && P > 1 && M < P) {  // an unfilled pipeline
          count(invalid,
                "fewer microbatches than pipeline stages (the 1F1B pipeline would not fill)", 1);
          continue;
        }
        PlanCandidate c;
        c.data = D, c.pipeline = P, c.tensor = T, c.microbatches = M;
        add_memory_variants(c, &out);
      }
    }
  }
  if (in.microbatches_fixed && out.empty()) {
    count(invalid, fmt::format("--microbatches {} does not divide the local batch", o.microbatches),
          1);
  }
  return out;
}

std::vector<ProbeShape> planner_probe_shapes(const PlannerInput& in) {
  std::vector<ProbeShape> shapes;
  for (const PlanCandidate& c : planner_candidates(in, nullptr)) {
    const ProbeShape s{rows_of(in, c), c.tensor};
    if (std::find(shapes.begin(), shapes.end(), s) == shapes.end()) shapes.push_back(s);
  }
  std::sort(shapes.begin(), shapes.end());
  return shapes;
}

PlanResult make_plan(const PlannerInput& in, const std::vector<ProbeTimes>& probes,
                     double adamw_s_per_element, const CollectiveCost& cost) {
  const std::vector<ProbeShape> shapes = planner_probe_shapes(in);
  PlanResult result;
  for (const PlanCandidate& c : planner_candidates(in, &result.invalid)) {
    const MemoryModelInput mi = model_input(in, c);
    if (std::string why = check_memory_model_input(mi); !why.empty()) {
      count(&result.invalid, why, 1);
      continue;
    }
    const ProbeShape shape{rows_of(in, c), c.tensor};
    const size_t k = std::find(shapes.begin(), shapes.end(), shape) - shapes.begin();
    PlanRow row;
    row.candidate = c;
    row.memory = predict_memory(mi);
    row.peak_bytes = peak_of(in, row.memory);
    row.time = predict_step_time(mi, probes.at(k), adamw_s_per_element, cost);
    row.fits = row.peak_bytes <= in.budget_bytes;
    result.rows.push_back(std::move(row));
  }
  const bool by_memory = in.options.optimize == "memory";
  std::stable_sort(result.rows.begin(), result.rows.end(), [&](const PlanRow& a, const PlanRow& b) {
    if (a.fits != b.fits) return a.fits;
    if (!a.fits) return a.peak_bytes < b.peak_bytes;
    const double at = a.time.total(), bt = b.time.total();
    if (by_memory && a.peak_bytes != b.peak_bytes) return a.peak_bytes < b.peak_bytes;
    if (at != bt) return at < bt;
    return a.peak_bytes < b.peak_bytes;
  });
  result.fitting = static_cast<int>(
      std::count_if(result.rows.begin(), result.rows.end(), [](const PlanRow& r) { return r.fits; }));
  return result;
}

std::string plan_table(const PlannerInput& in, const PlanResult& result, size_t shown) {
  const TrainOptions& o = in.options;
  std::string text = fmt::format(
      "placement planner: {} ranks ({} per host), model {} blocks x {} dims x {} heads, batch {} "
      "x {} bytes; budget {} per rank ({}); optimize {}; {} candidates fit, {} do not\n",
      in.world_size, in.local_size, o.model.n_layer, o.model.n_embd, o.model.n_head,
      o.global_batch, o.model.seq_len, planner_bytes(in.budget_bytes),
      in.budget_device_only ? "device pool" : "device and host pools", o.optimize,
      result.fitting, result.rows.size() - result.fitting);
  text += fmt::format("  {:>3}  {:<40} {:>3}  {:>11}  {:>10}  {}\n", "#", "placement", "M",
                      "peak/rank", "step time",
                      "(compute, tensor, pipeline, data, optimizer + other)");
  auto line = [&](size_t i, const PlanRow& r, const std::string& tail) {
    const StepTimePrediction& t = r.time;
    return fmt::format("  {:>3}  {:<40} {:>3}  {:>11}  {:>10}  ({}, {}, {}, {}, {}){}\n", i,
                       r.candidate.placement(), r.candidate.microbatches,
                       planner_bytes(r.peak_bytes), seconds_text(t.total()),
                       seconds_text(t.compute_s), seconds_text(t.tensor_s),
                       seconds_text(t.pipeline_s), seconds_text(t.data_s),
                       seconds_text(t.optimizer_s + t.other_s), tail);
  };
  const size_t fitting = static_cast<size_t>(result.fitting);
  for (size_t i = 0; i < std::min(shown, fitting); ++i) {
    text += line(i + 1, result.rows[i], i == 0 ? "  <- chosen" : "");
  }
  if (fitting > shown) {
    text += fmt::format("  ... {} more that fit, each {} (optimize {})\n", fitting - shown,
                        o.optimize == "memory" ? "needing more memory or slower"
                                               : "predicted slower or needing more memory",
                        o.optimize);
  }
  const size_t over = result.rows.size() - fitting;
  for (size_t i = fitting; i < std::min(result.rows.size(), fitting + std::min<size_t>(shown, 3));
       ++i) {
    text += line(i + 1, result.rows[i],
                 fmt::format("  rejected: peak above the budget of {}",
                             planner_bytes(in.budget_bytes)));
  }
  if (over > 3) text += fmt::format("  ... {} more rejected: peak above the budget\n", over - 3);
  for (const auto& [why, n] : result.invalid) {
    text += fmt::format("  left out: {} candidate{}: {}\n", n, n == 1 ? "" : "s", why);
  }
  return text;
}

std::string nothing_fits_message(const PlannerInput& in, const PlanResult& result) {
  if (result.rows.empty()) {
    std::string why;
    for (const auto& [reason, n] : result.invalid) why += (why.empty() ? "" : "; ") + reason;
    return fmt::format("--placement auto: no way to run {} blocks x {} heads, batch {} on {} "
                       "ranks: {}",
                       in.options.model.n_layer, in.options.model.n_head,
                       in.options.global_batch, in.world_size, why.empty() ? "none" : why);
  }
  const PlanRow& least = result.rows.front();  // the non-fitting rows are sorted by peak
  return fmt::format("--placement auto: no plan fits --memory-per-rank {}: the smallest any "
                     "candidate needs is {} per rank ({} --microbatches {}); raise the budget, "
                     "add ranks, or shrink the model or the batch",
                     planner_bytes(in.budget_bytes), planner_bytes(least.peak_bytes),
                     least.candidate.placement(), least.candidate.microbatches);
}

}  // namespace plexus::engine
