// End-to-end: plexus-run launches plexus-train ranks that average gradients with Plexus's own
// allreduce over libfabric; the D plugin is dlopen-ed because the placement string names it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "tests/e2e/metrics_losses.h"
#include "tests/e2e/synthetic_corpus.h"
#include "tests/support/subprocess.h"

namespace plexus::test {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

class TrainE2E : public ::testing::Test {
 protected:
  // Common small-model arguments so that 20 steps take seconds on 2 cores.
  std::vector<std::string> train_args(const std::string& placement, const std::string& metrics) {
    return {PLEXUS_TRAIN_PATH, "--placement", placement, "--data", corpus_.data(),
            "--n-layer", "2", "--n-head", "2", "--n-embd", "32", "--seq-len", "32",
            "--batch-size", "8", "--steps", "20", "--lr", "1e-3", "--warmup-steps", "5",
            "--val-every", "0", "--log-every", "1", "--checkpoint", "",
            "--metrics-file", metrics, "--microbatches", "1", "--pipeline-schedule", "1f1b",
            "--virtual-stages", "1"};
  }

  // Replaces the value that follows `option` in args.
  static void set_arg(std::vector<std::string>& args, const std::string& option,
                      const std::string& value) {
    auto it = std::find(args.begin(), args.end(), option);
    ASSERT_NE(it, args.end()) << option;
    ASSERT_NE(it + 1, args.end()) << option;
    *(it + 1) = value;
  }

  std::vector<std::string> launch(int n, std::vector<std::string> program) {
    std::vector<std::string> argv = {PLEXUS_RUN_PATH, "-n", std::to_string(n), "--"};
    argv.insert(argv.end(), program.begin(), program.end());
    return argv;
  }

  // A deterministic English-like corpus (the property under test holds for any text).
  CorpusFolder corpus_{"plexus_e2e"};
};

TEST_F(TrainE2E, DataParallelD4MatchesOneProcessForTwentySteps) {
  const std::string single = corpus_.path("d1.jsonl");
  ProcessResult r1 = run_process(train_args("D", single), 300);
  ASSERT_EQ(r1.exit_code, 0) << (r1.out + r1.err);
  std::vector<double> a = metrics_losses(single);
  ASSERT_EQ(a.size(), 20u);
  EXPECT_LT(a.back(), a.front() - 0.5) << "the model did not learn";
  // The automatic provider choice (shm on one host where it works), then tcp explicitly.
  for (const std::string provider : {"", "tcp"}) {
    SCOPED_TRACE("PLEXUS_FI_PROVIDER=" + provider);
    const std::string four = corpus_.path("d4" + provider + ".jsonl");
    std::vector<std::string> env;
    if (!provider.empty()) env.push_back("PLEXUS_FI_PROVIDER=" + provider);
    ProcessResult r4 = run_process(launch(4, train_args("D4", four)), 300, env);
    ASSERT_EQ(r4.exit_code, 0) << (r4.out + r4.err);
    EXPECT_THAT((r4.out + r4.err), HasSubstr("4 ranks, placement D4 (D4)"));
    if (!provider.empty()) {
      EXPECT_THAT((r4.out + r4.err), HasSubstr("transport tcp"));
    }
    std::vector<double> b = metrics_losses(four);
    ASSERT_EQ(b.size(), 20u);
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_LE(std::fabs(a[i] - b[i]) / std::fabs(a[i]), 1e-4)
          << "step " << i + 1 << ": one process " << a[i] << ", D4 " << b[i];
    }
  }
}

TEST_F(TrainE2E, InferredDataDegreeAndExplain) {
  const std::string metrics = corpus_.path("d.jsonl");
  std::vector<std::string> args = train_args("D", metrics);
  args.push_back("--explain");
  set_arg(args, "--steps", "2");
  ProcessResult r = run_process(launch(2, args), 300);
  ASSERT_EQ(r.exit_code, 0) << (r.out + r.err);
  EXPECT_THAT((r.out + r.err), HasSubstr("2 ranks, placement D (D2)"));
  EXPECT_THAT((r.out + r.err), HasSubstr("explain: rank 1 of 2: (d=1, p=0, t=0)"));
  EXPECT_THAT((r.out + r.err), HasSubstr("plugin D 0.1.0"));
}

struct BadInput {
  std::string name;
  int ranks;
  std::vector<std::string> replace;  // pairs: option, new value
  std::string message;
  friend void PrintTo(const BadInput& c, std::ostream* os) { *os << c.name; }
};

class TrainBadInput : public TrainE2E, public ::testing::WithParamInterface<BadInput> {};

TEST_P(TrainBadInput, ClearErrorAndNonZeroExit) {
  const BadInput& c = GetParam();
  std::vector<std::string> args = train_args("D", corpus_.path("m.jsonl"));
  for (size_t i = 0; i + 1 < c.replace.size(); i += 2) set_arg(args, c.replace[i], c.replace[i + 1]);
  ProcessResult r = run_process(launch(c.ranks, args), 120);
  EXPECT_FALSE(r.timed_out) << (r.out + r.err);
  EXPECT_NE(r.exit_code, 0) << (r.out + r.err);
  EXPECT_THAT((r.out + r.err), HasSubstr(c.message));
  EXPECT_THAT((r.out + r.err), HasSubstr("plexus-train: rank 0:"));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, TrainBadInput,
    ::testing::Values(
        BadInput{"UnknownLetter", 2, {"--placement", "D2X"},
                 "placement 'D2X': unexpected 'X' at position 3"},
        BadInput{"UnknownPlugin", 2, {"--placement", "D2+zeroX"},
                 "unknown plugin 'zeroX'"},
        BadInput{"LayersFewerThanStages", 2, {"--placement", "P2", "--n-layer", "1"},
                 "layers fewer than stages: 1 transformer blocks cannot fill 2 pipeline chunks"},
        BadInput{"UnknownSchedule", 2, {"--pipeline-schedule", "zigzag"},
                 "--pipeline-schedule 'zigzag' is not one of simple, 1f1b, interleaved"},
        BadInput{"MicrobatchesNotDividingRows", 2, {"--microbatches", "3"},
                 "--batch-size 8 gives 4 rows per data-parallel rank, which do not split into "
                 "--microbatches 3"},
        BadInput{"VirtualStagesWithoutInterleaved", 2, {"--placement", "P2", "--virtual-stages", "2"},
                 "--virtual-stages 2 needs --pipeline-schedule interleaved, got 1f1b"},
        BadInput{"InterleavedMicrobatchesNotMultipleOfStages", 2,
                 {"--placement", "P2", "--pipeline-schedule", "interleaved", "--microbatches", "3",
                  "--batch-size", "3"},
                 "--microbatches 3 is not a multiple of the pipeline degree 2"},
        BadInput{"HeadsNotDivisibleByTensorDegree", 4, {"--placement", "T4"}, "n_head"},
        BadInput{"DegreeNotDividingWorld", 4, {"--placement", "D3"},
                 "do not multiply to the world size 4"},
        BadInput{"BatchNotDivisible", 4, {"--batch-size", "6"},
                 "--batch-size 6 is not divisible by the data-parallel degree 4"},
        BadInput{"MissingDataFile", 2, {"--data", "/nonexistent/moby_dick.txt"},
                 "cannot read data file '/nonexistent/moby_dick.txt'"},
        BadInput{"DataIsADirectory", 2, {"--data", "/tmp"},
                 "data file '/tmp' is not a regular file"},
        BadInput{"LogEveryZero", 2, {"--log-every", "0"}, "--log-every must be at least 1"},
        BadInput{"InfiniteLearningRate", 2, {"--lr", "inf"},
                 "--lr must be a finite positive number"}),
    [](const auto& info) { return info.param.name; });

TEST_F(TrainE2E, KilledRankIsReportedByTheOthers) {
  std::vector<std::string> args = train_args("D3", corpus_.path("k.jsonl"));
  set_arg(args, "--steps", "100000");  // run until killed
  set_arg(args, "--batch-size", "6");   // divisible by 3
  Subprocess run(launch(3, args));
  ASSERT_TRUE(run.wait_for_stdout("step     3/", 1, 120)) << run.output_so_far();
  std::vector<pid_t> victims;
  for (int i = 0; i < 50 && victims.empty(); ++i) {
    victims = children_with_env(run.pid(), "PLEXUS_RANK=1");
    if (victims.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_EQ(victims.size(), 1u) << "rank 1's process not found under plexus-run";
  ASSERT_EQ(kill(victims[0], SIGKILL), 0);
  const auto killed_at = std::chrono::steady_clock::now();
  ProcessResult r = run.wait(90);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - killed_at).count();
  EXPECT_FALSE(r.timed_out) << (r.out + r.err);
  EXPECT_NE(r.exit_code, 0) << (r.out + r.err);
  EXPECT_LT(seconds, 60.0) << (r.out + r.err);
  EXPECT_THAT((r.out + r.err), HasSubstr("rank 1 killed by signal"));
  // Ranks 0 and 2 each say, themselves, which rank was lost.
  EXPECT_THAT((r.out + r.err), HasSubstr("[0] plexus-train: rank 0:"));
  EXPECT_THAT((r.out + r.err), HasSubstr("[2] plexus-train: rank 2:"));
  EXPECT_THAT((r.out + r.err), HasSubstr("rank 1 lost"));
}

TEST_F(TrainE2E, SampleFromSavedCheckpoint) {
  const std::string ckpt = corpus_.path("model.ckpt");
  std::vector<std::string> args = train_args("D", corpus_.path("s.jsonl"));
  set_arg(args, "--checkpoint", ckpt);
  ProcessResult t = run_process(args, 300);
  ASSERT_EQ(t.exit_code, 0) << (t.out + t.err);
  ASSERT_TRUE(fs::exists(ckpt));
  ProcessResult s = run_process({PLEXUS_TRAIN_PATH, "--sample", "--checkpoint", ckpt, "--prompt",
                                 "the whale", "--tokens", "50", "--sample-seed", "3"},
                                60);
  ASSERT_EQ(s.exit_code, 0) << (s.out + s.err);
  ASSERT_GE((s.out + s.err).size(), std::string("the whale").size() + 50);
  EXPECT_EQ((s.out + s.err).rfind("the whale", 0), 0u) << (s.out + s.err);
  ProcessResult again = run_process({PLEXUS_TRAIN_PATH, "--sample", "--checkpoint", ckpt,
                                     "--prompt", "the whale", "--tokens", "50", "--sample-seed",
                                     "3"},
                                    60);
  EXPECT_EQ((again.out + again.err), (s.out + s.err)) << "same seed, different text";
  // A corrupt checkpoint is refused with a clear message.
  fs::resize_file(ckpt, fs::file_size(ckpt) - 5);
  ProcessResult bad = run_process({PLEXUS_TRAIN_PATH, "--sample", "--checkpoint", ckpt}, 60);
  EXPECT_EQ(bad.exit_code, 2) << (bad.out + bad.err);
  EXPECT_THAT((bad.out + bad.err), HasSubstr("is corrupt or incomplete"));
}

}  // namespace
}  // namespace plexus::test
