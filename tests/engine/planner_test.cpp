// The placement planner (engine/plan/planner.h, plan_candidate.h, step_time_model.h) without
// processes: the exact candidate set of a small job and what fixed degrees, microbatches, a
// host's size and an unsplittable batch leave out; make_plan's ranking (speed, memory) and its
// fitting split against a budget, on synthetic probe times and a synthetic collective cost
// (alpha + beta * floats); the table and the nothing-fits message; apply_candidate; the
// placement strings; and predict_step_time's relations (M stage times without a pipeline, sum +
// (M - 1) max with one, a forward more per block with checkpointing, ZeRO-2 traffic per
// microbatch, no data traffic on one data rank). tests/e2e/auto_placement_test.cpp runs the planner.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "engine/memory/memory_tracker.h"
#include "engine/plan/plan_candidate.h"
#include "engine/plan/planner.h"
#include "engine/plan/step_time_model.h"
#include "tests/engine/plan_inputs.h"

namespace plexus::engine {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

using Degrees = std::tuple<int, int, int, int>;  // D, P, T, M

// 4 ranks on one host, 4 blocks x 64 dims x 4 heads, context 32, batch 8.
PlannerInput small_job(int world = 4, int batch = 8) {
  PlannerInput in;
  in.options.model.n_layer = 4;
  in.options.model.n_embd = 64;
  in.options.model.n_head = 4;
  in.options.model.seq_len = 32;
  in.options.global_batch = batch;
  in.options.checkpoint_path = "";
  in.world_size = world;
  in.local_size = world;
  in.budget_bytes = 1e15;
  return in;
}

std::set<Degrees> degrees_of(const std::vector<PlanCandidate>& cs) {
  std::set<Degrees> out;
  for (const PlanCandidate& c : cs) out.emplace(c.data, c.pipeline, c.tensor, c.microbatches);
  return out;
}

// The memory plugins' strings of every candidate with these degrees.
std::multiset<std::string> plugins_of(const std::vector<PlanCandidate>& cs, const Degrees& d) {
  std::multiset<std::string> out;
  for (const PlanCandidate& c : cs) {
    if (Degrees(c.data, c.pipeline, c.tensor, c.microbatches) == d) {
      out.insert(c.memory_plugins());
    }
  }
  return out;
}

int invalid_count(const std::vector<std::pair<std::string, int>>& invalid,
                  const std::string& reason) {
  for (const auto& [why, n] : invalid) {
    if (why == reason) return n;
  }
  return 0;
}

// Every memory-plugin combination the planner writes with ZeRO stages `zero_stages`.
std::multiset<std::string> memory_variants(const std::vector<std::string>& zero_stages) {
  std::multiset<std::string> out;
  for (const std::string& zero : zero_stages) {
    const std::string z = zero.empty() ? "" : zero + "+";
    for (const char* tail : {"", "offload(optimizer)", "ckpt", "ckpt+offload(optimizer)",
                             "ckpt+offload(activations)",
                             "ckpt+offload(activations,optimizer)"}) {
      std::string s = z + tail;
      if (!s.empty() && s.back() == '+') s.pop_back();
      out.insert(s);
    }
  }
  return out;
}

TEST(PlannerCandidates, ExactSetOfASmallJob) {
  std::vector<std::pair<std::string, int>> invalid;
  const std::vector<PlanCandidate> cs = planner_candidates(small_job(), &invalid);
  // D x P x T = 4; M divides the 8 / D local rows; with P > 1, M >= P.
  const std::set<Degrees> want = {
      {4, 1, 1, 1}, {4, 1, 1, 2},                             // D4: 2 local rows
      {2, 2, 1, 2}, {2, 2, 1, 4},                             // D2P2: 4 rows, M >= 2
      {1, 4, 1, 4}, {1, 4, 1, 8},                             // P4: 8 rows, M >= 4
      {2, 1, 2, 1}, {2, 1, 2, 2}, {2, 1, 2, 4},               // D2T2
      {1, 2, 2, 2}, {1, 2, 2, 4}, {1, 2, 2, 8},               // P2T2
      {1, 1, 4, 1}, {1, 1, 4, 2}, {1, 1, 4, 4}, {1, 1, 4, 8}  // T4
  };
  EXPECT_EQ(degrees_of(cs), want);
  // Only the unfilled pipelines are left out: D2P2 M1, P4 M1 and M2, P2T2 M1.
  EXPECT_EQ(invalid_count(invalid, "fewer microbatches than pipeline stages (the 1F1B pipeline "
                                   "would not fill)"),
            4);
  EXPECT_EQ(invalid.size(), 1u);
  const auto with_zero = memory_variants({"", "zero1", "zero2", "zero3"});
  const auto without_zero = memory_variants({""});
  ASSERT_EQ(with_zero.size(), 24u);
  ASSERT_EQ(without_zero.size(), 6u);
  for (const Degrees& d : want) {
    const bool data_parallel = std::get<0>(d) > 1;
    EXPECT_EQ(plugins_of(cs, d), data_parallel ? with_zero : without_zero)
        << "D" << std::get<0>(d) << " P" << std::get<1>(d) << " T" << std::get<2>(d) << " M"
        << std::get<3>(d);
  }
  EXPECT_EQ(cs.size(), 7u * 24 + 9u * 6);
  for (const PlanCandidate& c : cs) {
    EXPECT_EQ(c.data * c.pipeline * c.tensor, 4);
    EXPECT_TRUE(!c.offload_activations || c.checkpointing) << c.placement();
    EXPECT_TRUE(c.data > 1 || c.zero_stage == 0) << c.placement();
  }
}

TEST(PlannerCandidates, FixedDegreesAndMicrobatchesRestrictTheSet) {
  PlannerInput in = small_job();
  in.options.pipeline_degree = 2;
  EXPECT_EQ(degrees_of(planner_candidates(in, nullptr)),
            (std::set<Degrees>{{2, 2, 1, 2}, {2, 2, 1, 4}, {1, 2, 2, 2}, {1, 2, 2, 4},
                               {1, 2, 2, 8}}));

  in = small_job();
  in.options.tensor_degree = 2;
  EXPECT_EQ(degrees_of(planner_candidates(in, nullptr)),
            (std::set<Degrees>{{2, 1, 2, 1}, {2, 1, 2, 2}, {2, 1, 2, 4}, {1, 2, 2, 2},
                               {1, 2, 2, 4}, {1, 2, 2, 8}}));

  in = small_job();
  in.options.pipeline_degree = 2;
  in.options.tensor_degree = 2;
  EXPECT_EQ(degrees_of(planner_candidates(in, nullptr)),
            (std::set<Degrees>{{1, 2, 2, 2}, {1, 2, 2, 4}, {1, 2, 2, 8}}));

  // Microbatches the user gave are kept, even below P (the user's choice).
  in = small_job();
  in.microbatches_fixed = true;
  in.options.microbatches = 2;
  EXPECT_EQ(degrees_of(planner_candidates(in, nullptr)),
            (std::set<Degrees>{{4, 1, 1, 2}, {2, 2, 1, 2}, {1, 4, 1, 2}, {2, 1, 2, 2},
                               {1, 2, 2, 2}, {1, 1, 4, 2}}));

  // Microbatches that divide no local batch: nothing, and why.
  in = small_job(1, 6);
  in.microbatches_fixed = true;
  in.options.microbatches = 4;
  std::vector<std::pair<std::string, int>> invalid;
  EXPECT_TRUE(planner_candidates(in, &invalid).empty());
  EXPECT_EQ(invalid_count(invalid, "--microbatches 4 does not divide the local batch"), 1);
}

TEST(PlannerCandidates, TensorDegreeAboveAHostIsLeftOutAndCounted) {
  PlannerInput in = small_job();
  in.local_size = 2;
  std::vector<std::pair<std::string, int>> invalid;
  const std::vector<PlanCandidate> cs = planner_candidates(in, &invalid);
  for (const PlanCandidate& c : cs) EXPECT_LE(c.tensor, 2) << c.placement();
  std::set<Degrees> want = degrees_of(planner_candidates(small_job(), nullptr));
  std::erase_if(want, [](const Degrees& d) { return std::get<2>(d) == 4; });
  EXPECT_EQ(degrees_of(cs), want);
  // One (T, P) combination: T4 P1.
  EXPECT_EQ(invalid_count(invalid, "tensor degree above the 2 ranks of a host"), 1);
  EXPECT_EQ(invalid.size(), 2u);  // and the unfilled pipelines

  // Heads that a degree does not divide: T4 over 2 heads.
  in = small_job();
  in.options.model.n_head = 2;
  invalid.clear();
  for (const PlanCandidate& c : planner_candidates(in, &invalid)) EXPECT_LE(c.tensor, 2);
  EXPECT_EQ(invalid_count(invalid, "tensor degree does not divide the 2 heads"), 1);
}

TEST(PlannerCandidates, ABatchThatDoesNotSplitOverTheDataDegree) {
  // Batch 6 on 4 ranks: D4 cannot take it; D2 has 3 local rows (M 1 or 3; M >= 2 with P2).
  std::vector<std::pair<std::string, int>> invalid;
  const std::vector<PlanCandidate> cs = planner_candidates(small_job(4, 6), &invalid);
  for (const PlanCandidate& c : cs) EXPECT_NE(c.data, 4) << c.placement();
  EXPECT_EQ(degrees_of(cs),
            (std::set<Degrees>{{2, 2, 1, 3}, {1, 4, 1, 6}, {2, 1, 2, 1}, {2, 1, 2, 3},
                               {1, 2, 2, 2}, {1, 2, 2, 3}, {1, 2, 2, 6}, {1, 1, 4, 1},
                               {1, 1, 4, 2}, {1, 1, 4, 3}, {1, 1, 4, 6}}));
  EXPECT_EQ(invalid_count(invalid, "the batch of 6 does not split over the data degree"), 1);
}

// ---- make_plan on synthetic probes and costs ----

constexpr double kAlpha = 20e-6, kBeta = 1e-9;  // seconds, seconds per float

double synthetic_cost(const char* collective, size_t floats, const std::vector<int>& ranks) {
  if (ranks.size() < 2) return 0.0;
  const double hops = std::string(collective) == "allreduce" ? 2.0 : 1.0;
  return kAlpha + hops * kBeta * static_cast<double>(floats);
}

// Compute proportional to the rows and inversely to the tensor degree; allreduces counted as a
// Megatron block has them (2 forward, 2 backward) of rows x seq x embd floats.
ProbeTimes synthetic_probe(const PlannerInput& in, const ProbeShape& s) {
  ProbeTimes t;
  t.block_forward_s = 1e-3 * s.rows / s.tensor;
  t.block_backward_s = 2 * t.block_forward_s;
  t.ends_forward_s = 0.5e-3 * s.rows / s.tensor;
  t.ends_backward_s = t.ends_forward_s;
  if (s.tensor > 1) {
    const double floats = 1.0 * s.rows * in.options.model.seq_len * in.options.model.n_embd;
    t.block_allreduces = 4;
    t.block_allreduce_floats = 4 * floats;
    t.ends_allreduces = 2;
    t.ends_allreduce_floats = 2 * floats;
  }
  return t;
}

PlanResult plan(const PlannerInput& in) {
  std::vector<ProbeTimes> probes;
  for (const ProbeShape& s : planner_probe_shapes(in)) probes.push_back(synthetic_probe(in, s));
  return make_plan(in, probes, 1e-9, synthetic_cost);
}

double min_peak(const PlanResult& r) {
  double least = r.rows.at(0).peak_bytes;
  for (const PlanRow& row : r.rows) least = std::min(least, row.peak_bytes);
  return least;
}

TEST(PlannerProbeShapes, OnePerRowsAndTensorDegreeSorted) {
  const PlannerInput in = small_job();
  const std::vector<ProbeShape> shapes = planner_probe_shapes(in);
  std::set<ProbeShape> want;
  for (const PlanCandidate& c : planner_candidates(in, nullptr)) {
    want.insert({8 / c.data / c.microbatches, c.tensor});
  }
  EXPECT_EQ(std::vector<ProbeShape>(want.begin(), want.end()), shapes);
}

TEST(MakePlan, SpeedRanksTheFittingRowsByStepTime) {
  PlannerInput in = small_job();
  const PlanResult r = plan(in);
  ASSERT_EQ(r.rows.size(), planner_candidates(in, nullptr).size());
  ASSERT_EQ(r.fitting, static_cast<int>(r.rows.size()));
  for (size_t i = 1; i < r.rows.size(); ++i) {
    EXPECT_LE(r.rows[i - 1].time.total(), r.rows[i].time.total()) << "row " << i;
  }
  for (const PlanRow& row : r.rows) {
    EXPECT_GT(row.time.compute_s, 0);
    EXPECT_GT(row.peak_bytes, 0);
    EXPECT_TRUE(row.fits);
    // On --device cpu the budget compares both pools of the most loaded stage.
    double peak = 0;
    for (const RankMemory& m : row.memory.stages) peak = std::max(peak, m.total());
    EXPECT_EQ(row.peak_bytes, peak) << row.candidate.placement();
  }
}

TEST(MakePlan, MemoryRanksTheFittingRowsByPeakThenTime) {
  PlannerInput in = small_job();
  in.options.optimize = "memory";
  const PlanResult r = plan(in);
  ASSERT_FALSE(r.rows.empty());
  EXPECT_EQ(r.rows[0].peak_bytes, min_peak(r));
  for (size_t i = 1; i < r.rows.size(); ++i) {
    EXPECT_LE(r.rows[i - 1].peak_bytes, r.rows[i].peak_bytes) << "row " << i;
    if (r.rows[i - 1].peak_bytes == r.rows[i].peak_bytes) {
      EXPECT_LE(r.rows[i - 1].time.total(), r.rows[i].time.total()) << "row " << i;
    }
  }
}

TEST(MakePlan, OptimizeMemoryChoosesALowerPeakThanSpeed) {
  PlannerInput in = small_job();
  const PlanResult speed = plan(in);
  in.options.optimize = "memory";
  const PlanResult memory = plan(in);
  // The acceptance wording: a plan with a lower peak than speed's choice exists ...
  ASSERT_GT(speed.rows[0].peak_bytes, min_peak(speed));
  // ... so memory's choice has a lower peak, and is no faster.
  EXPECT_LT(memory.rows[0].peak_bytes, speed.rows[0].peak_bytes);
  EXPECT_GE(memory.rows[0].time.total(), speed.rows[0].time.total());
  EXPECT_EQ(memory.rows.size(), speed.rows.size());
}

TEST(MakePlan, ABudgetBetweenTwoPeaksSplitsTheRows) {
  PlannerInput in = small_job();
  const PlanResult all = plan(in);
  std::vector<double> peaks;
  for (const PlanRow& row : all.rows) peaks.push_back(row.peak_bytes);
  std::sort(peaks.begin(), peaks.end());
  peaks.erase(std::unique(peaks.begin(), peaks.end()), peaks.end());
  ASSERT_GE(peaks.size(), 4u);
  // Below the fastest plan's peak, so that the speed ranking has to give it up.
  const double fastest_peak = all.rows[0].peak_bytes;
  const auto at = std::lower_bound(peaks.begin(), peaks.end(), fastest_peak);
  ASSERT_NE(at, peaks.begin()) << "the fastest plan has the smallest peak";
  const double below = *(at - 1);
  in.budget_bytes = (below + fastest_peak) / 2;

  const PlanResult r = plan(in);
  ASSERT_EQ(r.rows.size(), all.rows.size());
  const auto expected_fitting = std::count_if(all.rows.begin(), all.rows.end(),
                                              [&](const PlanRow& row) {
                                                return row.peak_bytes <= in.budget_bytes;
                                              });
  EXPECT_EQ(r.fitting, expected_fitting);
  ASSERT_GT(r.fitting, 0);
  ASSERT_LT(r.fitting, static_cast<int>(r.rows.size()));
  for (size_t i = 0; i < r.rows.size(); ++i) {
    const bool in_budget = r.rows[i].peak_bytes <= in.budget_bytes;
    EXPECT_EQ(r.rows[i].fits, in_budget) << "row " << i;
    EXPECT_EQ(static_cast<int>(i) < r.fitting, in_budget) << "row " << i;
  }
  // The chosen plan is the fastest of those that fit; the others follow by peak.
  double fastest_fitting = r.rows[0].time.total();
  for (const PlanRow& row : all.rows) {
    if (row.peak_bytes <= in.budget_bytes) {
      fastest_fitting = std::min(fastest_fitting, row.time.total());
    }
  }
  EXPECT_EQ(r.rows[0].time.total(), fastest_fitting);
  EXPECT_LE(r.rows[0].peak_bytes, in.budget_bytes);
  EXPECT_GT(r.rows[0].time.total(), all.rows[0].time.total());
  for (size_t i = r.fitting + 1; i < r.rows.size(); ++i) {
    EXPECT_LE(r.rows[i - 1].peak_bytes, r.rows[i].peak_bytes);
  }
}

TEST(MakePlan, TableMarksTheChosenAndTheRejectedRows) {
  PlannerInput in = small_job();
  const PlanResult all = plan(in);
  in.budget_bytes = (min_peak(all) + all.rows[0].peak_bytes) / 2;
  const PlanResult r = plan(in);
  ASSERT_GT(r.fitting, 0);
  const size_t over = r.rows.size() - r.fitting;
  ASSERT_GT(over, 3u);
  const std::string table = plan_table(in, r, 8);
  std::istringstream lines(table);
  std::string line;
  int chosen = 0, rejected = 0;
  std::vector<std::string> numbered;
  while (std::getline(lines, line)) {
    if (line.find("<- chosen") != std::string::npos) {
      ++chosen;
      EXPECT_THAT(line, HasSubstr(" 1  " + r.rows[0].candidate.placement() + " "));
    }
    if (line.find("rejected: peak above the budget of " + planner_bytes(in.budget_bytes)) !=
        std::string::npos) {
      // Each rejected row is one of those that do not fit, with its peak.
      const size_t i = r.fitting + rejected;
      EXPECT_THAT(line, HasSubstr(r.rows[i].candidate.placement()));
      EXPECT_THAT(line, HasSubstr(planner_bytes(r.rows[i].peak_bytes)));
      ++rejected;
    }
  }
  EXPECT_EQ(chosen, 1) << table;
  EXPECT_EQ(rejected, 3) << table;
  EXPECT_THAT(table, HasSubstr(std::to_string(over - 3) + " more rejected: peak above the budget"));
  EXPECT_THAT(table, HasSubstr(std::to_string(r.fitting) + " candidates fit, " +
                               std::to_string(over) + " do not"));
  EXPECT_THAT(table, HasSubstr("budget " + planner_bytes(in.budget_bytes) + " per rank"));
}

TEST(MakePlan, NothingFitsNamesTheBudgetAndTheSmallestPeak) {
  PlannerInput in = small_job();
  in.budget_bytes = 1024;
  const PlanResult r = plan(in);
  ASSERT_EQ(r.fitting, 0);
  ASSERT_FALSE(r.rows.empty());
  const double least = min_peak(r);
  ASSERT_GT(least, in.budget_bytes);
  EXPECT_EQ(r.rows[0].peak_bytes, least);
  const std::string message = nothing_fits_message(in, r);
  EXPECT_THAT(message, HasSubstr("--memory-per-rank " + planner_bytes(1024)));
  EXPECT_THAT(message, HasSubstr("the smallest any candidate needs is " + planner_bytes(least) +
                                 " per rank (" + r.rows[0].candidate.placement() +
                                 " --microbatches " +
                                 std::to_string(r.rows[0].candidate.microbatches) + ")"));
  // The placement named is one with the smallest peak.
  const std::string table = plan_table(in, r, 8);
  EXPECT_THAT(table, Not(HasSubstr("<- chosen")));
  EXPECT_THAT(table, HasSubstr("0 candidates fit"));

  // No candidate at all: the reasons.
  PlannerInput none = small_job(1, 6);
  none.microbatches_fixed = true;
  none.options.microbatches = 4;
  const PlanResult empty = make_plan(none, {}, 1e-9, synthetic_cost);
  EXPECT_TRUE(empty.rows.empty());
  EXPECT_THAT(nothing_fits_message(none, empty),
              HasSubstr("--microbatches 4 does not divide the local batch"));
}

// ---- apply_candidate and the placement strings ----

TEST(ApplyCandidate, SetsThePlacementAndTheScheduleOptions) {
  TrainOptions o;
  o.placement = "auto";
  o.pipeline_degree = 2;
  o.tensor_degree = 2;
  o.microbatches = 1;
  o.pipeline_schedule = "interleaved";
  o.virtual_stages = 2;
  o.global_batch = 24;
  PlanCandidate c;
  c.data = 2, c.pipeline = 2, c.tensor = 1, c.microbatches = 3, c.zero_stage = 1;
  const TrainOptions out = apply_candidate(o, c);
  EXPECT_EQ(out.placement, "D2P2+zero1");
  EXPECT_EQ(out.microbatches, 3);
  EXPECT_EQ(out.pipeline_schedule, "1f1b");
  EXPECT_EQ(out.virtual_stages, 1);
  EXPECT_EQ(out.pipeline_degree, 0);
  EXPECT_EQ(out.tensor_degree, 0);
  EXPECT_EQ(out.global_batch, 24);  // the rest is kept
}

TEST(PlanCandidateText, PlacementAndMemoryPlugins) {
  PlanCandidate c;
  EXPECT_EQ(c.placement(), "D1");
  EXPECT_EQ(c.memory_plugins(), "");
  c.data = 2, c.pipeline = 2, c.tensor = 1;
  EXPECT_EQ(c.placement(), "D2P2");
  c.tensor = 2, c.data = 1;
  EXPECT_EQ(c.placement(), "P2T2");
  c.pipeline = 1, c.tensor = 4;
  EXPECT_EQ(c.placement(), "T4");
  c.checkpointing = true;
  EXPECT_EQ(c.placement(), "T4+ckpt");
  c = PlanCandidate{};
  c.data = 2, c.pipeline = 2, c.tensor = 2;
  c.zero_stage = 2, c.checkpointing = true, c.offload_activations = true,
  c.offload_optimizer = true;
  EXPECT_EQ(c.memory_plugins(), "zero2+ckpt+offload(activations,optimizer)");
  EXPECT_EQ(c.placement(), "D2P2T2+zero2+ckpt+offload(activations,optimizer)");
  c.offload_optimizer = false;
  EXPECT_EQ(c.memory_plugins(), "zero2+ckpt+offload(activations)");
  c.offload_activations = false, c.offload_optimizer = true, c.checkpointing = false;
  EXPECT_EQ(c.memory_plugins(), "zero2+offload(optimizer)");
  c = PlanCandidate{};
  c.offload_optimizer = true;
  EXPECT_EQ(c.placement(), "D1+offload(optimizer)");
}

// ---- predict_step_time ----

// The small model (plan_inputs.h) with context 32.
MemoryModelInput step_input(int data, int pipeline, int tensor, int microbatches) {
  return small_model_input(32, data, pipeline, tensor, microbatches);
}

ProbeTimes unit_probe() {
  ProbeTimes t;
  t.block_forward_s = 1.0;
  t.block_backward_s = 2.0;
  t.ends_forward_s = 0.25;
  t.ends_backward_s = 0.5;
  return t;
}

double no_cost(const char*, size_t, const std::vector<int>&) { return 0.0; }

// One stage's time per microbatch with the unit probe, checkpointing and message seconds.
double stage_seconds(const MemoryModelInput& in, int p, bool ckpt, double message) {
  const ShardSpec spec = stage_sizes(in, p).spec;
  const int blocks = spec.last_block - spec.first_block;
  return blocks * (ckpt ? 4.0 : 3.0) + (spec.head ? 0.75 : 0.0) + 2 * message;
}

TEST(PredictStepTime, WithoutAPipelineAStepIsMStageTimes) {
  for (int M : {1, 2, 4}) {
    const MemoryModelInput in = step_input(1, 1, 1, M);
    const StepTimePrediction t = predict_step_time(in, unit_probe(), 0.0, no_cost);
    EXPECT_DOUBLE_EQ(t.compute_s, M * (4 * 3.0 + 0.75)) << "M " << M;
    EXPECT_DOUBLE_EQ(t.total(), t.compute_s);
    EXPECT_EQ(t.pipeline_s, 0);
    EXPECT_EQ(t.tensor_s, 0);
    EXPECT_EQ(t.data_s, 0);
  }
  // AdamW over every parameter of the one stage.
  const MemoryModelInput in = step_input(1, 1, 1, 1);
  const StepTimePrediction t = predict_step_time(in, unit_probe(), 1e-6, no_cost);
  EXPECT_DOUBLE_EQ(t.optimizer_s, stage_sizes(in, 0).params * 1e-6);
}

TEST(PredictStepTime, APipelineTakesTheSumPlusMMinusOneSlowestStages) {
  constexpr double kMessage = 0.125;
  const CollectiveCost sendrecv_only = [&](const char* c, size_t, const std::vector<int>&) {
    return std::string(c) == "sendrecv" ? kMessage : 0.0;
  };
  for (int P : {2, 4}) {
    for (int M : {P, 2 * P}) {
      const MemoryModelInput in = step_input(1, P, 1, M);
      double sum = 0, slowest = 0;
      for (int p = 0; p < P; ++p) {
        sum += stage_seconds(in, p, false, kMessage);
        slowest = std::max(slowest, stage_seconds(in, p, false, kMessage));
      }
      const StepTimePrediction t = predict_step_time(in, unit_probe(), 0.0, sendrecv_only);
      EXPECT_NEAR(t.compute_s + t.tensor_s + t.pipeline_s, sum + (M - 1) * slowest, 1e-9)
          << "P " << P << " M " << M;
      // The slowest stage (the last, with the head) sets the split.
      EXPECT_NEAR(t.pipeline_s / (t.compute_s + t.pipeline_s), 2 * kMessage / slowest, 1e-9);
      EXPECT_EQ(t.data_s, 0);  // the tied embedding's allreduce costs nothing here
    }
  }
}

TEST(PredictStepTime, APipelineOfZeroTimesTakesZeroNotNaN) {
  // A probe too small to measure (zero seconds) and free collectives: the step is 0 s, which
  // make_plan can still rank (a NaN would break its ordering).
  const StepTimePrediction t =
      predict_step_time(step_input(1, 2, 1, 4), ProbeTimes{}, 0.0, no_cost);
  EXPECT_EQ(t.compute_s, 0);
  EXPECT_EQ(t.pipeline_s, 0);
  EXPECT_EQ(t.total(), 0);
}

TEST(PredictStepTime, CheckpointingAddsAForwardPerBlock) {
  for (int P : {1, 2}) {
    const int M = 2;
    MemoryModelInput in = step_input(1, P, 1, M);
    const double plain = predict_step_time(in, unit_probe(), 0.0, no_cost).compute_s;
    in.plan.checkpoint_every = 1;
    const double ckpt = predict_step_time(in, unit_probe(), 0.0, no_cost).compute_s;
    double sum = 0, slowest = 0;
    for (int p = 0; p < P; ++p) {
      sum += stage_seconds(in, p, true, 0);
      slowest = std::max(slowest, stage_seconds(in, p, true, 0));
    }
    EXPECT_DOUBLE_EQ(ckpt, P == 1 ? M * (4 * 4.0 + 0.75) : sum + (M - 1) * slowest);
    // With one stage: one block forward (1 s) more per block and microbatch.
    if (P == 1) {
      EXPECT_DOUBLE_EQ(ckpt - plain, M * 4 * 1.0);
    }
  }
}

TEST(PredictStepTime, ZeroTwoDataTrafficGrowsWithTheMicrobatches) {
  std::map<int, double> data_s;
  for (int M : {1, 2, 4}) {
    MemoryModelInput in = step_input(2, 1, 1, M);
    in.plan.zero_stage = 2;
    data_s[M] = predict_step_time(in, unit_probe(), 0.0, synthetic_cost).data_s;
  }
  // M reduce-scatters and one all-gather: linear in M.
  const double per_microbatch = data_s[2] - data_s[1];
  EXPECT_GT(per_microbatch, 0);
  EXPECT_NEAR(data_s[4] - data_s[2], 2 * per_microbatch, 1e-12);
  EXPECT_GT(data_s[1], per_microbatch);  // the all-gather on top

  // ZeRO-1 reduces once per step whatever M is.
  MemoryModelInput one = step_input(2, 1, 1, 1), four = step_input(2, 1, 1, 4);
  one.plan.zero_stage = four.plan.zero_stage = 1;
  EXPECT_DOUBLE_EQ(predict_step_time(one, unit_probe(), 0.0, synthetic_cost).data_s,
                   predict_step_time(four, unit_probe(), 0.0, synthetic_cost).data_s);
  EXPECT_DOUBLE_EQ(data_s[1], predict_step_time(one, unit_probe(), 0.0, synthetic_cost).data_s);
}

TEST(PredictStepTime, NoDataTrafficOnOneDataRank) {
  for (int zero : {0, 1, 2, 3}) {
    MemoryModelInput in = step_input(1, 1, 1, 2);
    in.plan.zero_stage = zero;
    EXPECT_EQ(predict_step_time(in, unit_probe(), 0.0, synthetic_cost).data_s, 0)
        << "zero " << zero;
  }
  // With two data ranks plain data parallelism allreduces the gradients.
  EXPECT_GT(predict_step_time(step_input(2, 1, 1, 2), unit_probe(), 0.0, synthetic_cost).data_s,
            0);
}

}  // namespace
}  // namespace plexus::engine
