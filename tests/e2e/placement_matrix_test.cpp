// End-to-end: every mix of data (D), pipeline (P) and tensor (T) parallelism trains the same
// model as one process. plexus-run launches real plexus-train ranks over the real transport; for
// a fixed seed, model and global batch, the 20 per-step losses of each placement equal the
// single-process run's within 1e-4 relative, and so do the parameters after training, gathered
// to one file with --save-params. The three pipeline schedules give identical losses, and
// --explain prints the rank mapping the placement's rule gives (tables written out by hand).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "engine/checkpoint/checkpoint.h"
#include "tests/e2e/metrics_losses.h"
#include "tests/e2e/synthetic_corpus.h"
#include "tests/support/subprocess.h"

namespace plexus::test {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

class PlacementMatrix : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { corpus_.make("plexus_matrix"); }
  static void TearDownTestSuite() { corpus_.remove(); }

  // 6 blocks x 32 dims x 2 heads, context 16, global batch 8: every placement below divides it.
  static std::vector<std::string> train_args(const std::string& name,
                                             const std::vector<std::string>& extra) {
    std::vector<std::string> args = {
        PLEXUS_TRAIN_PATH, "--data", corpus_.data(), "--n-layer", "6", "--n-head", "2",
        "--n-embd", "32", "--seq-len", "16", "--batch-size", "8", "--steps", "20", "--lr",
        "1e-3", "--warmup-steps", "5", "--val-every", "0", "--log-every", "5", "--checkpoint", "",
        "--metrics-file", metrics(name), "--save-params", params(name)};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }
  static std::string metrics(const std::string& name) { return corpus_.path(name + ".jsonl"); }
  static std::string params(const std::string& name) { return corpus_.path(name + ".params"); }

  // Runs plexus-train (under plexus-run when ranks > 1) and returns its output.
  static std::string train(const std::string& name, int ranks,
                           const std::vector<std::string>& extra) {
    std::vector<std::string> argv = train_args(name, extra);
    if (ranks > 1) {
      argv.insert(argv.begin(), {PLEXUS_RUN_PATH, "-n", std::to_string(ranks), "--"});
    }
    ProcessResult r = run_process(argv, 300);
    EXPECT_EQ(r.exit_code, 0) << name << ":\n" << r.out << r.err;
    return r.out + r.err;
  }

  static std::vector<double> losses(const std::string& name) {
    return metrics_losses(metrics(name));
  }

  static std::vector<float> saved_params(const std::string& name) {
    engine::Checkpoint ck = engine::load_checkpoint(params(name));
    const std::vector<float>* p = ck.find("params");
    return p ? *p : std::vector<float>{};
  }

  // The single-process reference, trained once for the whole suite.
  static void reference() {
    if (!fs::exists(metrics("one"))) train("one", 1, {"--placement", "D"});
  }

  static inline CorpusFolder corpus_;
};

struct Case {
  std::string name;
  int ranks;
  std::vector<std::string> args;
  friend void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }
};

class PlacementEquivalence : public PlacementMatrix, public ::testing::WithParamInterface<Case> {};

TEST_P(PlacementEquivalence, LossesAndParametersEqualOneProcess) {
  reference();
  const Case& c = GetParam();
  train(c.name, c.ranks, c.args);
  const std::vector<double> a = losses("one"), b = losses(c.name);
  ASSERT_EQ(a.size(), 20u);
  ASSERT_EQ(b.size(), 20u);
  EXPECT_LT(a.back(), a.front() - 0.5) << "the model did not learn";
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_LE(std::fabs(a[i] - b[i]) / std::fabs(a[i]), 1e-4)
        << "step " << i + 1 << ": one process " << a[i] << ", " << c.name << " " << b[i];
  }
  const std::vector<float> p = saved_params("one"), q = saved_params(c.name);
  ASSERT_EQ(p.size(), q.size());
  ASSERT_GT(p.size(), 80000u);
  // AdamW divides by the root of the second moment, so a parameter whose gradients are tiny
  // moves by about lr per step whatever their rounding: next to the 1e-4 relative bound, allow an
  // absolute 1e-5 (1% of one step at lr 1e-3).
  size_t bad = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    if (std::fabs(p[i] - q[i]) > 1e-4 * std::fabs(p[i]) + 1e-5) {
      if (++bad <= 5) {
        ADD_FAILURE() << c.name << ": parameter " << i << ": one process " << p[i] << ", "
                      << q[i];
      }
    }
  }
  EXPECT_EQ(bad, 0u) << c.name << ": parameters that differ";
}

INSTANTIATE_TEST_SUITE_P(
    Placements, PlacementEquivalence,
    ::testing::Values(
        Case{"OneProcessFourMicrobatches", 1, {"--placement", "D", "--microbatches", "4"}},
        Case{"D2", 2, {"--placement", "D2"}},
        Case{"P2", 2, {"--placement", "P2", "--microbatches", "2"}},
        Case{"T2", 2, {"--placement", "T2"}},
        Case{"D2P2", 4, {"--placement", "D2P2", "--microbatches", "2"}},
        Case{"D2T2", 4, {"--placement", "D2T2"}},
        Case{"P2T2", 4, {"--placement", "P2T2", "--microbatches", "4"}},
        Case{"P4", 4, {"--placement", "P4", "--microbatches", "4"}},
        Case{"P2Interleaved", 2,
             {"--placement", "P2", "--microbatches", "4", "--pipeline-schedule", "interleaved",
              "--virtual-stages", "2"}},
        Case{"D2P2T2", 8, {"--placement", "D2P2T2", "--microbatches", "2"}}),
    [](const auto& info) { return info.param.name; });

TEST_F(PlacementMatrix, ThreeSchedulesGiveIdenticalLosses) {
  const std::vector<std::string> base = {"--placement", "P2", "--microbatches", "4"};
  for (const std::string s : {"simple", "1f1b", "interleaved"}) {
    std::vector<std::string> args = base;
    args.insert(args.end(), {"--pipeline-schedule", s});
    std::string out = train("schedule_" + s, 2, args);
    EXPECT_THAT(out, HasSubstr("2 ranks, placement P2 (D1P2)"));
  }
  const std::vector<double> simple = losses("schedule_simple");
  ASSERT_EQ(simple.size(), 20u);
  EXPECT_EQ(losses("schedule_1f1b"), simple);
  EXPECT_EQ(losses("schedule_interleaved"), simple);
}

// One rank's --explain line up to its plugins (their order follows the placement string).
struct Row {
  int d, p, t;
  const char *data, *pipeline, *tensor, *layers;
};

std::string expected_line(int rank, const Row& r) {
  return "explain: rank " + std::to_string(rank) + " of 8: (d=" + std::to_string(r.d) +
         ", p=" + std::to_string(r.p) + ", t=" + std::to_string(r.t) + "); D group " + r.data +
         "; P group " + r.pipeline + "; T group " + r.tensor + "; embedding group " +
         r.pipeline + "; layers " + r.layers + "; plugin ";
}

TEST_F(PlacementMatrix, ExplainFollowsTheRankRule) {
  const char* first = "blocks 0-2 +embed";
  const char* last = "blocks 3-5 +head";
  // cluster = DPT: rank = 4d + 2p + t.
  const Row cluster[8] = {
      {0, 0, 0, "[0,4]", "[0,2]", "[0,1]", first}, {0, 0, 1, "[1,5]", "[1,3]", "[0,1]", first},
      {0, 1, 0, "[2,6]", "[0,2]", "[2,3]", last},  {0, 1, 1, "[3,7]", "[1,3]", "[2,3]", last},
      {1, 0, 0, "[0,4]", "[4,6]", "[4,5]", first}, {1, 0, 1, "[1,5]", "[5,7]", "[4,5]", first},
      {1, 1, 0, "[2,6]", "[4,6]", "[6,7]", last},  {1, 1, 1, "[3,7]", "[5,7]", "[6,7]", last}};
  // spread = TPD: rank = 4t + 2p + d.
  const Row spread[8] = {
      {0, 0, 0, "[0,1]", "[0,2]", "[0,4]", first}, {1, 0, 0, "[0,1]", "[1,3]", "[1,5]", first},
      {0, 1, 0, "[2,3]", "[0,2]", "[2,6]", last},  {1, 1, 0, "[2,3]", "[1,3]", "[3,7]", last},
      {0, 0, 1, "[4,5]", "[4,6]", "[0,4]", first}, {1, 0, 1, "[4,5]", "[5,7]", "[1,5]", first},
      {0, 1, 1, "[6,7]", "[4,6]", "[2,6]", last},  {1, 1, 1, "[6,7]", "[5,7]", "[3,7]", last}};
  struct Layout {
    std::string placement;
    const Row* rows;
    std::string plugins;
  };
  for (const Layout& l : {Layout{"cluster", cluster, "D 0.1.0; plugin P 0.1.0; plugin T 0.1.0"},
                          Layout{"spread", spread, "T 0.1.0; plugin P 0.1.0; plugin D 0.1.0"},
                          Layout{"TPD", spread, "T 0.1.0; plugin P 0.1.0; plugin D 0.1.0"}}) {
    SCOPED_TRACE(l.placement);
    std::vector<std::string> args = train_args("explain_" + l.placement, {});
    *(std::find(args.begin(), args.end(), "--steps") + 1) = "1";
    args.insert(args.end(), {"--placement", l.placement, "--pipeline-degree", "2",
                             "--tensor-degree", "2", "--explain"});
    std::vector<std::string> argv = {PLEXUS_RUN_PATH, "-n", "8", "--"};
    argv.insert(argv.end(), args.begin(), args.end());
    ProcessResult run = run_process(argv, 300);
    ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
    std::vector<std::string> printed;
    for (const std::string& line : split_lines(run.out)) {
      size_t at = line.find("explain: ");
      if (at == std::string::npos) continue;
      EXPECT_EQ(line.rfind("[0] ", 0), 0u) << "only rank 0 prints: " << line;
      printed.push_back(line.substr(at));
    }
    ASSERT_EQ(printed.size(), 8u) << run.out;
    for (int rank = 0; rank < 8; ++rank) {
      EXPECT_EQ(printed[rank], expected_line(rank, l.rows[rank]) + l.plugins) << "rank " << rank;
    }
  }
}

}  // namespace
}  // namespace plexus::test
