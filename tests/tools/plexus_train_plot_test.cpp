// plexus_train_plot_test.cpp - plexus-train --plot FILE.png (tools/plexus-train/loss_plot.h).
// First the series read back from a metrics file (metrics_series.h), with closed-form tokens/s.
// Then short real trainings (a 2-layer, 32-wide model on the synthetic corpus, a few steps) that
// draw the run with gnuplot, under plexus-run (D2: only rank 0 draws) and alone, also after a
// SIGTERM's stop; the PNG is checked by its signature and its IHDR size. Then the failures on
// purpose: a bad --plot path refused before training (exit 2, the path named), a run failing
// before its first step (no plot of an earlier run's metrics), gnuplot missing or failing (a
// warning; exit code 0, checkpoint saved, an older FILE.png untouched), and a data file whose
// name would inject gnuplot commands into an unescaped title. Tests that need gnuplot skip,
// saying so, where it is not on PATH.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/e2e/synthetic_corpus.h"
#include "tests/support/subprocess.h"
#include "tests/support/temp_dir.h"
#include "tools/plexus-train/metrics_series.h"

#ifndef PLEXUS_TRAIN_PATH
#error "PLEXUS_TRAIN_PATH must name the plexus-train binary"
#endif

namespace plexus::test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
namespace fs = std::filesystem;

// tools/plexus-train/loss_plot.h: LossPlot::kWidthPixels x kHeightPixels.
constexpr uint32_t kWidth = 1000;
constexpr uint32_t kHeight = 700;

bool gnuplot_on_path() {
  const char* path = std::getenv("PATH");
  std::stringstream folders(path != nullptr ? path : "");
  std::string folder;
  while (std::getline(folders, folder, ':')) {
    if (::access(((folder.empty() ? "." : folder) + "/gnuplot").c_str(), X_OK) == 0) return true;
  }
  return false;
}

#define SKIP_WITHOUT_GNUPLOT()                                                              \
  if (!gnuplot_on_path())                                                                   \
  GTEST_SKIP() << "gnuplot is not on PATH (install gnuplot-nox); --plot cannot be checked"

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

uint32_t big_endian_32(const std::string& bytes, size_t at) {
  uint32_t v = 0;
  for (size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(bytes[at + i]);
  return v;
}

// The file is a PNG (signature, then IHDR first) of kWidth x kHeight pixels.
void expect_png_of_plot_size(const std::string& path) {
  const std::string png = read_bytes(path);
  ASSERT_GE(png.size(), 24u) << path << " is missing or too short for a PNG";
  EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8)) << path;
  EXPECT_EQ(png.substr(12, 4), "IHDR") << path;
  EXPECT_EQ(big_endian_32(png, 16), kWidth) << path << ": IHDR width";
  EXPECT_EQ(big_endian_32(png, 20), kHeight) << path << ": IHDR height";
}

size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

std::vector<int64_t> steps_of(const std::vector<train::SeriesPoint>& points) {
  std::vector<int64_t> steps;
  for (const train::SeriesPoint& p : points) steps.push_back(p.step);
  return steps;
}

// 100 tokens a step. Steps 1-4 of one run (step 2 validated), a cut line, step 5 missing, steps
// 6-7, then a resumed run's steps 8-9 (its clock restarted), and a line that carries its own
// tokens_per_s.
TEST(MetricsSeries, TokensPerSecondFromElapsedTimes) {
  TempDir dir("plexus-metrics-series-test");
  ASSERT_FALSE(dir.path().empty());
  const std::string path = dir.path() + "/metrics.jsonl";
  std::ofstream(path) << R"({"step":1,"loss":5.0,"elapsed_s":0.5}
{"step":2,"loss":4.0,"elapsed_s":1.0,"val_loss":4.5}
{"step":3,"loss":3.5,"elapsed_s":2.0}
{"step":4,"loss":3.0,"elapsed_s":2.25}
{"step":4,"loss":
{"step":6,"loss":2.5,"elapsed_s":4.0}
{"step":7,"loss":2.25,"elapsed_s":4.5}
{"step":8,"loss":2.0,"elapsed_s":0.25}
{"step":9,"loss":1.5,"elapsed_s":0.75,"tokens_per_s":7.0}
not json
{"step":"10","loss":1.0,"elapsed_s":1.0}
)";
  train::StepSeries s;
  std::string why;
  ASSERT_TRUE(train::read_step_series(path, 100, &s, &why)) << why;
  EXPECT_EQ(steps_of(s.loss), (std::vector<int64_t>{1, 2, 3, 4, 6, 7, 8, 9}));
  ASSERT_EQ(steps_of(s.val_loss), (std::vector<int64_t>{2}));
  EXPECT_EQ(s.val_loss[0].value, 4.5);
  // Step 3 follows validation, step 6 a gap: both left out.
  ASSERT_EQ(steps_of(s.tokens_per_s), (std::vector<int64_t>{1, 2, 4, 7, 8, 9}));
  const std::vector<double> expected = {100 / 0.5, 100 / 0.5, 100 / 0.25, 100 / 0.5, 100 / 0.25,
                                        7.0};
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_DOUBLE_EQ(s.tokens_per_s[i].value, expected[i]) << "step " << s.tokens_per_s[i].step;
  }
}

// Validation on every step: leaving out the steps after one would leave one point, so they stay.
TEST(MetricsSeries, ValidationEveryStepKeepsThroughput) {
  TempDir dir("plexus-metrics-series-test");
  ASSERT_FALSE(dir.path().empty());
  const std::string path = dir.path() + "/metrics.jsonl";
  std::ofstream(path) << R"({"step":1,"loss":5.0,"elapsed_s":1.0,"val_loss":5.0}
{"step":2,"loss":4.0,"elapsed_s":3.0,"val_loss":4.0}
{"step":3,"loss":3.0,"elapsed_s":7.0,"val_loss":3.0}
)";
  train::StepSeries s;
  std::string why;
  ASSERT_TRUE(train::read_step_series(path, 8, &s, &why)) << why;
  ASSERT_EQ(steps_of(s.tokens_per_s), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_DOUBLE_EQ(s.tokens_per_s[2].value, 2.0);
  EXPECT_FALSE(train::read_step_series(dir.path() + "/missing.jsonl", 8, &s, &why));
  EXPECT_THAT(why, HasSubstr("cannot read '" + dir.path() + "/missing.jsonl': No such file"));
}

class PlexusTrainPlot : public ::testing::Test {
 protected:
  // A short training: 12 steps, validation every 4, a checkpoint, the plot into `plot`.
  std::vector<std::string> train_args(const std::string& placement, const std::string& plot,
                                      const std::string& steps = "12") const {
    return {PLEXUS_TRAIN_PATH, "--placement", placement, "--data", data_, "--n-layer", "2",
            "--n-head", "2", "--n-embd", "32", "--seq-len", "32", "--batch-size", "8",
            "--steps", steps, "--warmup-steps", "2", "--val-every", "4", "--val-batches", "2",
            "--log-every", "4", "--checkpoint", checkpoint_, "--plot", plot};
  }

  // The child's own temporary folder, so the test sees plexus-train's private folder come and go.
  std::vector<std::string> env() const { return {"TMPDIR=" + corpus_.dir()}; }

  // The private plot folders (plexus-plot-*) left in the test's folder.
  std::vector<std::string> leftover_plot_folders() const {
    std::vector<std::string> left;
    for (const auto& entry : fs::directory_iterator(corpus_.dir())) {
      const std::string name = entry.path().filename().string();
      if (name.rfind("plexus-plot-", 0) == 0 || name.find(".plot-") != std::string::npos) {
        left.push_back(name);
      }
    }
    return left;
  }

  CorpusFolder corpus_{"plexus-train-plot-test"};
  std::string data_ = corpus_.data();  // a test may rename the corpus
  std::string checkpoint_ = corpus_.path("model.ckpt");
};

// D2 under plexus-run with no --metrics-file: rank 0 alone records the steps (privately) and
// draws them. The plot's name holds a quote, a double quote and a space (it never enters the
// gnuplot script), and the data file's name is a gnuplot expression that, pasted unescaped into
// the single-quoted title, would run `cd .. && touch pwned` in the test's folder.
TEST_F(PlexusTrainPlot, RankZeroDrawsLossAndTokensPerSecondUnderPlexusRunD2) {
  SKIP_WITHOUT_GNUPLOT();
  const std::string injected = corpus_.dir() + "/' . system('cd .. && touch pwned') . '.txt";
  fs::rename(data_, injected);
  data_ = injected;
  const std::string plot = corpus_.dir() + "/it's a \"loss\" plot.png";
  std::vector<std::string> argv = {PLEXUS_RUN_PATH, "-n", "2", "--"};
  for (const std::string& a : train_args("D2", plot)) argv.push_back(a);
  const ProcessResult r = run_process(argv, 120, env());
  const std::string all = r.out + r.err;
  ASSERT_TRUE(r.exited && r.exit_code == 0) << all;
  EXPECT_THAT(all, HasSubstr("2 ranks, placement D2"));
  EXPECT_EQ(count(all, "plexus-train: plotted"), 1u) << all;
  EXPECT_THAT(all, HasSubstr("[0] plexus-train: plotted loss and tokens/s against step: " + plot));
  EXPECT_THAT(all, Not(HasSubstr("warning"))) << all;
  expect_png_of_plot_size(plot);
  EXPECT_TRUE(fs::exists(checkpoint_)) << all;
  EXPECT_FALSE(fs::exists(corpus_.path("pwned"))) << "the data file's name ran a gnuplot command";
  EXPECT_THAT(leftover_plot_folders(), ::testing::IsEmpty());
}

// One process stopped by SIGTERM after some steps (the polite stop: finish the step, save, exit
// 0) still draws the steps it ran, from the --metrics-file it was given, which stays.
TEST_F(PlexusTrainPlot, StopBySignalStillDrawsFromTheMetricsFile) {
  SKIP_WITHOUT_GNUPLOT();
  const std::string plot = corpus_.dir() + "/stopped.png";
  const std::string metrics = corpus_.dir() + "/metrics.jsonl";
  std::vector<std::string> argv = train_args("D", plot, "1000000");
  for (const char* a : {"--metrics-file", metrics.c_str()}) argv.push_back(a);
  Subprocess train(argv, env());
  ASSERT_TRUE(train.wait_for_stdout("validation loss", 2, 60)) << train.output_so_far();
  ASSERT_EQ(::kill(train.pid(), SIGTERM), 0);
  const ProcessResult r = train.wait(60);
  const std::string all = r.out + r.err;
  ASSERT_TRUE(r.exited && r.exit_code == 0) << all;
  EXPECT_THAT(all, HasSubstr("stop requested by a signal"));
  EXPECT_THAT(all, HasSubstr("plexus-train: plotted loss and tokens/s against step: " + plot));
  expect_png_of_plot_size(plot);
  EXPECT_TRUE(fs::exists(checkpoint_));
  EXPECT_GE(split_lines(read_bytes(metrics)).size(), 8u);
  EXPECT_THAT(leftover_plot_folders(), ::testing::IsEmpty());
}

// SIGINT while gnuplot draws (a gnuplot that would take 100 s): gnuplot is killed at once, the
// warning names the signal, the private folder is removed and the training's result stands.
TEST_F(PlexusTrainPlot, SignalWhileGnuplotRunsEndsItAndCleansUp) {
  const std::string bin = corpus_.dir() + "/slow-bin";
  const std::string started = corpus_.dir() + "/gnuplot-started";
  fs::create_directory(bin);
  {
    std::ofstream fake(bin + "/gnuplot");
    fake << "#!/bin/sh\necho started > '" << started << "'\nexec sleep 100\n";
  }
  fs::permissions(bin + "/gnuplot", fs::perms::owner_all);
  const std::string plot = corpus_.dir() + "/loss.png";
  std::vector<std::string> environment = env();
  environment.push_back("PATH=" + bin + ":/usr/bin:/bin");
  Subprocess train(train_args("D", plot, "2"), environment);
  for (int i = 0; i < 600 && !fs::exists(started); ++i) {  // up to 60 s
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(fs::exists(started)) << train.output_so_far();
  ASSERT_EQ(::kill(train.pid(), SIGINT), 0);
  const ProcessResult r = train.wait(60);
  const std::string all = r.out + r.err;
  ASSERT_TRUE(r.exited && r.exit_code == 0) << all;
  EXPECT_THAT(r.err, HasSubstr("warning: --plot '" + plot + "' was not drawn: stopped by SIGINT "
                               "while gnuplot ran"));
  EXPECT_TRUE(fs::exists(checkpoint_));
  EXPECT_FALSE(fs::exists(plot));
  EXPECT_THAT(leftover_plot_folders(), ::testing::IsEmpty());
}

// A run that fails before its first step draws nothing, not even the lines an earlier run left
// in its --metrics-file; the failure's exit code stays.
TEST_F(PlexusTrainPlot, FailedStartDrawsNoEarlierRun) {
  const std::string plot = corpus_.dir() + "/loss.png";
  const std::string metrics = corpus_.dir() + "/metrics.jsonl";
  std::ofstream(metrics) << R"({"step":1,"loss":5.0,"elapsed_s":0.5})" << "\n";
  std::vector<std::string> argv = train_args("D3", plot);  // 3 data-parallel ranks in a world of 1
  for (const char* a : {"--metrics-file", metrics.c_str()}) argv.push_back(a);
  const ProcessResult r = run_process(argv, 60, env());
  ASSERT_TRUE(r.exited) << r.out + r.err;
  EXPECT_EQ(r.exit_code, 2) << r.out + r.err;
  // Refused as bad input before training: the refusal is the message, no plot is attempted.
  EXPECT_THAT(r.err, HasSubstr("placement"));
  EXPECT_THAT(r.err, Not(HasSubstr("was not drawn")));
  EXPECT_FALSE(fs::exists(plot));
  EXPECT_THAT(leftover_plot_folders(), ::testing::IsEmpty());
}

// A --plot path that cannot take the plot is refused at once: exit 2, nothing trained, the
// message names the option, the path and the reason.
TEST_F(PlexusTrainPlot, BadPathIsRefusedBeforeTraining) {
  struct Case {
    std::string plot;
    std::string reason;
  };
  const std::vector<Case> cases = {
      {corpus_.dir() + "/no-such-folder/loss.png",
       "folder '" + corpus_.dir() + "/no-such-folder' cannot be used: No such file or directory"},
      {corpus_.dir() + "/loss.jpg", "the name must end in .png"},
      {corpus_.dir() + "/loss", "the name must end in .png"},
      {corpus_.dir(), "the name must end in .png"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.plot);
    const ProcessResult r = run_process(train_args("D", c.plot), 60, env());
    ASSERT_TRUE(r.exited) << r.out + r.err;
    EXPECT_EQ(r.exit_code, 2) << r.out + r.err;
    EXPECT_THAT(r.err, HasSubstr("--plot '" + c.plot + "': " + c.reason));
    EXPECT_THAT(r.out, Not(HasSubstr("building the model")));
    EXPECT_FALSE(fs::exists(checkpoint_));
  }
  // A folder named like a PNG is not a file to replace.
  const std::string folder = corpus_.dir() + "/folder.png";
  fs::create_directory(folder);
  const ProcessResult r = run_process(train_args("D", folder), 60, env());
  EXPECT_EQ(r.exit_code, 2) << r.out + r.err;
  EXPECT_THAT(r.err, HasSubstr("--plot '" + folder + "' exists and is a folder"));
  EXPECT_THAT(leftover_plot_folders(), ::testing::IsEmpty());
}

// Under plexus-run, rank 0's refusal of the folder (made once the communicator exists) ends
// rank 1 too, through the communicator: it names rank 0 rather than being stopped by a signal.
TEST_F(PlexusTrainPlot, BadFolderOnRankZeroEndsEveryRank) {
  const std::string plot = corpus_.dir() + "/no-such-folder/loss.png";
  std::vector<std::string> argv = {PLEXUS_RUN_PATH, "-n", "2", "--"};
  for (const std::string& a : train_args("D2", plot)) argv.push_back(a);
  const ProcessResult r = run_process(argv, 120, env());
  const std::string all = r.out + r.err;
  ASSERT_TRUE(r.exited) << all;
  EXPECT_NE(r.exit_code, 0) << all;
  EXPECT_THAT(all, HasSubstr("[0] plexus-train: rank 0: --plot '" + plot + "': folder"));
  EXPECT_THAT(all, ::testing::ContainsRegex("\\[1\\] plexus-train: rank 1: .*rank 0"));
  EXPECT_THAT(all, Not(HasSubstr("building the model")));
  EXPECT_FALSE(fs::exists(checkpoint_));
}

// No gnuplot: a warning before training and one at the end naming the file and the cause; the
// training's exit code and checkpoint stand.
TEST_F(PlexusTrainPlot, MissingGnuplotIsAWarning) {
  const std::string plot = corpus_.dir() + "/loss.png";
  std::vector<std::string> environment = env();
  environment.push_back("PATH=" + corpus_.dir() + "/empty-bin");
  const ProcessResult r = run_process(train_args("D", plot, "2"), 60, environment);
  ASSERT_TRUE(r.exited && r.exit_code == 0) << r.out + r.err;
  EXPECT_THAT(r.err, HasSubstr("warning: --plot '" + plot + "': gnuplot is not on PATH"));
  EXPECT_THAT(r.err, HasSubstr("warning: --plot '" + plot + "' was not drawn: gnuplot was not "
                               "found on PATH"));
  EXPECT_TRUE(fs::exists(checkpoint_));
  EXPECT_FALSE(fs::exists(plot));
  EXPECT_THAT(leftover_plot_folders(), ::testing::IsEmpty());
}

// A gnuplot that fails: the warning quotes its status and what it printed; an image already at
// the path is left as it was.
TEST_F(PlexusTrainPlot, FailingGnuplotIsAWarningAndKeepsTheOldImage) {
  const std::string bin = corpus_.dir() + "/bin";
  fs::create_directory(bin);
  {
    std::ofstream fake(bin + "/gnuplot");
    fake << "#!/bin/sh\necho 'line 3: fake gnuplot cannot draw' >&2\nexit 3\n";
  }
  fs::permissions(bin + "/gnuplot", fs::perms::owner_all);
  const std::string plot = corpus_.dir() + "/loss.png";
  { std::ofstream(plot) << "an older plot"; }
  std::vector<std::string> environment = env();
  environment.push_back("PATH=" + bin + ":/usr/bin:/bin");
  const ProcessResult r = run_process(train_args("D", plot, "2"), 60, environment);
  ASSERT_TRUE(r.exited && r.exit_code == 0) << r.out + r.err;
  EXPECT_THAT(r.err, HasSubstr("warning: --plot '" + plot + "' was not drawn: gnuplot exited "
                               "with status 3: line 3: fake gnuplot cannot draw; the training's "
                               "result stands (exit code 0)"));
  EXPECT_TRUE(fs::exists(checkpoint_));
  EXPECT_EQ(read_bytes(plot), "an older plot");
  EXPECT_THAT(leftover_plot_folders(), ::testing::IsEmpty());
}

}  // namespace
}  // namespace plexus::test
