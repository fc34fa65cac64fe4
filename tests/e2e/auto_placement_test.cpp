// End-to-end: plexus-train --placement auto (engine/plan/auto_placement.h) under plexus-run
// with 4 real ranks on a tiny model (4 blocks x 32 dims x 4 heads, batch 8, 2 steps).
//
// The planner prints its table and the `planned:` line, the run trains with the chosen plan,
// and every rank's --memory-report measures a peak (device and host pools together: on --device
// cpu the budget compares both) within 15% of the predicted one and within the budget; a budget
// between the fastest plan's peak and the smallest makes it give the fastest up for one that
// fits; --optimize memory picks a lower predicted peak than --optimize speed; a budget nothing
// fits, a malformed budget, an unknown --optimize and a budget without --placement auto exit 2
// naming the option. tests/engine/planner_test.cpp checks the planner's figures without
// processes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "engine/memory/memory_tracker.h"
#include "engine/plan/planner.h"
#include "tests/e2e/synthetic_corpus.h"
#include "tests/support/subprocess.h"

namespace plexus::test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
namespace fs = std::filesystem;

constexpr int kRanks = 4;
constexpr double kRelative = 0.15;  // the memory model's bound (docs/memory.md)

struct Planned {
  bool found = false;
  std::string placement;
  int microbatches = 0;
  double peak = 0;    // predicted_peak_bytes
  double step_s = 0;  // predicted_step_s
  double measured = 0;  // max over ranks of the reports' device + host peak_total
};

class Planner : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { corpus_.make("plexus_planner"); }
  static void TearDownTestSuite() { corpus_.remove(); }

  static std::vector<std::string> train_args(const std::vector<std::string>& extra) {
    std::vector<std::string> argv = {PLEXUS_TRAIN_PATH, "--data", corpus_.data(), "--n-layer", "4",
                                     "--n-embd", "32", "--n-head", "4", "--seq-len", "32",
                                     "--batch-size", "8", "--steps", "2", "--val-every", "0",
                                     "--log-every", "1", "--checkpoint", ""};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return argv;
  }

  // plexus-train (under plexus-run with `ranks` > 1).
  static ProcessResult run(int ranks, const std::vector<std::string>& extra) {
    std::vector<std::string> argv = train_args(extra);
    if (ranks > 1) {
      argv.insert(argv.begin(), {PLEXUS_RUN_PATH, "-n", std::to_string(ranks), "--"});
    }
    return run_process(argv, 120);
  }

  // A 4-rank --placement auto run named `name` with --memory-report; its planned line and
  // measured peak.
  static Planned plan_and_train(const std::string& name, const std::vector<std::string>& extra,
                                ProcessResult* result) {
    std::vector<std::string> args = {"--placement", "auto", "--memory-report",
                                     corpus_.path(name + ".{rank}.json")};
    args.insert(args.end(), extra.begin(), extra.end());
    *result = run(kRanks, args);
    Planned p;
    static const std::regex line(
        R"(plexus-train: planned: placement (\S+) microbatches (\d+) predicted_peak_bytes (\d+) )"
        R"(predicted_step_s ([0-9.]+))");
    std::smatch m;
    if (std::regex_search(result->out, m, line)) {
      p.found = true;
      p.placement = m[1];
      p.microbatches = std::stoi(m[2]);
      p.peak = std::stod(m[3]);
      p.step_s = std::stod(m[4]);
    }
    if (result->exit_code != 0) return p;
    for (int rank = 0; rank < kRanks; ++rank) {
      const fs::path path = corpus_.path(name + "." + std::to_string(rank) + ".json");
      std::ifstream in(path);
      if (!in.good()) {
        ADD_FAILURE() << "no memory report " << path;
        continue;
      }
      const nlohmann::json report = nlohmann::json::parse(in);
      EXPECT_EQ(report.at("placement"), p.placement) << path;
      const double total = report.at("memory").at("device").at("peak_total").get<double>() +
                           report.at("memory").at("host").at("peak_total").get<double>();
      p.measured = std::max(p.measured, total);
    }
    return p;
  }

  // The default job planned for speed and for memory, once for the suite (budget 1G).
  static const Planned& speed() {
    static Planned p = checked_run("speed", {"--memory-per-rank", "1G"});
    return p;
  }
  static const Planned& memory() {
    static Planned p = checked_run("memory", {"--memory-per-rank", "1G", "--optimize", "memory"});
    return p;
  }

  // A run that must plan, print the table, train and measure what it predicted.
  static Planned checked_run(const std::string& name, const std::vector<std::string>& extra,
                             std::string* out = nullptr) {
    ProcessResult r;
    const Planned p = plan_and_train(name, extra, &r);
    const std::string all = r.out + r.err;
    EXPECT_FALSE(r.timed_out) << all;
    EXPECT_EQ(r.exit_code, 0) << all;
    EXPECT_TRUE(p.found) << "no planned: line\n" << all;
    EXPECT_THAT(r.out, HasSubstr("plexus-train: placement planner: 4 ranks (4 per host)"));
    EXPECT_THAT(r.out, HasSubstr("<- chosen"));
    // The chosen row is the planned one, and the run uses it.
    EXPECT_THAT(r.out, HasSubstr("    1  " + p.placement + " "));
    EXPECT_THAT(r.out, HasSubstr("4 ranks, placement " + p.placement + " "));
    EXPECT_THAT(r.out, HasSubstr("step     2/2 | loss "));
    EXPECT_GT(p.peak, 0);
    EXPECT_GT(p.step_s, 0);
    EXPECT_GE(p.microbatches, 1);
    std::printf("%s: planned %s --microbatches %d, predicted peak %.0f B, measured %.0f B\n",
                name.c_str(), p.placement.c_str(), p.microbatches, p.peak, p.measured);
    EXPECT_LE(std::fabs(p.measured - p.peak), kRelative * p.peak)
        << name << ": predicted " << p.peak << " B, measured " << p.measured << " B";
    if (out != nullptr) *out = r.out;
    return p;
  }

  static inline CorpusFolder corpus_;
};

TEST_F(Planner, AutoPlansTrainsAndMeasuresWhatItPredicted) {
  const Planned& p = speed();
  ASSERT_TRUE(p.found);
  EXPECT_LE(p.measured, 1024.0 * 1024 * 1024);
  EXPECT_LE(p.peak, 1024.0 * 1024 * 1024);
}

TEST_F(Planner, OptimizeMemoryPicksALowerPeakThanSpeed) {
  ASSERT_TRUE(speed().found);
  ASSERT_TRUE(memory().found);
  EXPECT_LT(memory().peak, speed().peak)
      << "speed: " << speed().placement << ", memory: " << memory().placement;
  EXPECT_LT(memory().measured, speed().measured);
}

TEST_F(Planner, ATightBudgetGivesUpTheFastestPlanForOneThatFits) {
  ASSERT_TRUE(speed().found);
  ASSERT_TRUE(memory().found);
  ASSERT_LT(memory().peak, speed().peak);
  // Between the smallest peak (memory's choice) and the fastest plan's: the fastest does not
  // fit, some do.
  const auto budget = static_cast<uint64_t>((memory().peak + speed().peak) / 2);
  const std::string budget_text = engine::planner_bytes(static_cast<double>(budget));
  std::string out;
  const Planned p = checked_run("tight", {"--memory-per-rank", std::to_string(budget)}, &out);
  ASSERT_TRUE(p.found);
  EXPECT_LE(p.peak, budget);
  EXPECT_LE(p.measured, budget);
  EXPECT_GE(p.peak, memory().peak);
  EXPECT_NE(p.placement + " M" + std::to_string(p.microbatches),
            speed().placement + " M" + std::to_string(speed().microbatches));
  EXPECT_THAT(out, HasSubstr("budget " + budget_text + " per rank (device and host pools)"));
  EXPECT_THAT(out, HasSubstr("rejected: peak above the budget of " + budget_text));
}

TEST_F(Planner, NothingFitsExitsTwoNamingTheSmallestPeakOnEveryRank) {
  ASSERT_TRUE(memory().found);
  const ProcessResult r = run(kRanks, {"--placement", "auto", "--memory-per-rank", "1K"});
  const std::string all = r.out + r.err;
  EXPECT_FALSE(r.timed_out) << all;
  EXPECT_EQ(r.exit_code, 2) << all;
  EXPECT_THAT(r.out, Not(HasSubstr("planned:")));
  EXPECT_THAT(r.out, Not(HasSubstr("| loss ")));
  // The smallest peak over every candidate is the one --optimize memory chose with room to
  // spare.
  for (int rank = 0; rank < kRanks; ++rank) {
    EXPECT_THAT(r.err, HasSubstr("plexus-train: rank " + std::to_string(rank) +
                                 ": --placement auto: no plan fits --memory-per-rank 1.0 KiB: "
                                 "the smallest any candidate needs is " +
                                 engine::planner_bytes(memory().peak) + " per rank ("))
        << all;
  }
}

TEST_F(Planner, BadOptionsExitTwoNamingThem) {
  ProcessResult r = run(1, {"--placement", "auto", "--memory-per-rank", "12X"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("--memory-per-rank"));
  EXPECT_THAT(r.err, HasSubstr("12X"));

  r = run(1, {"--placement", "auto", "--optimize", "fast"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("--optimize 'fast' is not one of speed, memory"));

  r = run(1, {"--placement", "D4", "--memory-per-rank", "1G"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("--memory-per-rank and --optimize apply to --placement auto"));
  EXPECT_THAT(r.out, Not(HasSubstr("| loss ")));

  // The planner writes 1F1B with one chunk per stage: another schedule is refused, not dropped.
  r = run(1, {"--placement", "auto", "--pipeline-schedule", "interleaved", "--virtual-stages", "2"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("--pipeline-schedule interleaved --virtual-stages 2 cannot apply"));

  // A fixed degree that does not divide the world, or below 1.
  r = run(1, {"--placement", "auto", "--pipeline-degree", "3"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("--pipeline-degree 3 does not divide the world size 1"));
  r = run(1, {"--placement", "auto", "--tensor-degree", "0"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("--tensor-degree 0 must be at least 1"));

  // A mode that trains nothing has nothing to plan.
  r = run(1, {"--placement", "auto", "--sample"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("--placement auto is for a training run; --sample trains nothing"));
}

}  // namespace
}  // namespace plexus::test
