// End-to-end: sharded checkpoints survive preemption and reshape to another placement. Real
// plexus-run launching real plexus-train ranks (as placement_matrix_test.cpp):
//  (a) D2, 20 steps, uninterrupted: the reference;
//  (b) the same command with --checkpoint-dir: SIGTERM to plexus-run once the metrics show a
//      step k drawn from [3, 15] (the seed is printed; PLEXUS_TEST_RESUME_SEED=S repeats it;
//      the model is large enough that a step takes tens of ms); plexus-run exits 0 with a complete
//      checkpoint; the same command again resumes and ends bit-identical to (a): every loss after
//      the resume and the --save-params file;
//  (c) D4+zero1 saved at step 10, loaded as D2, as P2T2 and as one process with --steps 11:
//      step 11's loss equals the uninterrupted D4+zero1 run's within 1e-4 relative;
//  (d) truncated, corrupted and mismatched (other --n-embd) checkpoints: plexus-train exits 2
//      naming the path and the problem, and the folder is byte-for-byte unchanged;
//  (e) a SIGTERM during communicator creation ends the rank (no PSM handler calling exit());
//      bad --checkpoint-dir / --memory-report folders and an unreadable step folder are refused
//      before training; the leftovers of interrupted saves are replaced by the next save; the
//      --metrics-file of a resumed run is appended to (every step once).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "engine/checkpoint/checkpoint.h"
#include "engine/checkpoint/sharded_checkpoint.h"
#include "tests/e2e/folder_snapshot.h"
#include "tests/e2e/synthetic_corpus.h"
#include "tests/support/subprocess.h"

namespace plexus::test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
namespace fs = std::filesystem;

// A fixed cost model: the same collective algorithms in every run, whatever the machine does.
const std::vector<std::string> kEnv = {"PLEXUS_COST_MODEL=2.5,0.1,0.05"};

class Resume : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { corpus_.make("plexus_resume"); }
  static void TearDownTestSuite() { corpus_.remove(); }

  static std::string path(const std::string& name) { return corpus_.path(name); }

  // placement_matrix_test's model: 6 blocks x 32 dims x 2 heads, context 16, global batch 8.
  static std::vector<std::string> small_model(const std::string& n_embd = "32") {
    return {"--n-layer", "6", "--n-head", "2", "--n-embd", n_embd, "--seq-len", "16",
            "--batch-size", "8"};
  }
  // Slow enough (tens of ms a step on two cores) for a SIGTERM to land mid-run.
  static std::vector<std::string> slow_model() {
    return {"--n-layer", "4", "--n-head", "4", "--n-embd", "128", "--seq-len", "64",
            "--batch-size", "32"};
  }

  static std::vector<std::string> train_args(int ranks, const std::vector<std::string>& model,
                                             const std::vector<std::string>& extra) {
    std::vector<std::string> args;
    if (ranks > 1) args = {PLEXUS_RUN_PATH, "-n", std::to_string(ranks), "--"};
    for (const std::string a : {PLEXUS_TRAIN_PATH, "--data", corpus_.data().c_str(), "--lr",
                                "1e-3", "--warmup-steps", "5", "--val-every", "0", "--log-every",
                                "5", "--checkpoint", ""}) {
      args.push_back(a);
    }
    args.insert(args.end(), model.begin(), model.end());
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }

  static ProcessResult train(int ranks, const std::vector<std::string>& model,
                             const std::vector<std::string>& extra) {
    ProcessResult r = run_process(train_args(ranks, model, extra), 300, kEnv);
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    return r;
  }

  // step -> loss, from a --metrics-file.
  static std::map<int, double> losses(const std::string& metrics) {
    std::map<int, double> out;
    std::ifstream in(metrics);
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty()) continue;
      const nlohmann::json row = nlohmann::json::parse(line, nullptr, false);
      if (row.is_discarded() || !row.contains("step")) continue;  // a line still being written
      out[row.at("step").get<int>()] = row.at("loss").get<double>();
    }
    return out;
  }

  static std::vector<float> saved_params(const std::string& file) {
    engine::Checkpoint ck = engine::load_checkpoint(file);
    const std::vector<float>* p = ck.find("params");
    return p ? *p : std::vector<float>{};
  }

  static inline CorpusFolder corpus_;
};

std::string read_text(const std::string& file) {
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// argv run as user nobody when the test runs as root (root ignores permissions).
std::vector<std::string> unprivileged(std::vector<std::string> argv) {
  if (geteuid() != 0) return argv;
  argv.insert(argv.begin(), {"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"});
  return argv;
}

// A checkpoint folder holding only a copy of `step_dir`.
std::string copy_checkpoint(const std::string& step_dir, const std::string& into) {
  fs::remove_all(into);
  fs::create_directories(into);
  const std::string target = into + "/" + fs::path(step_dir).filename().string();
  fs::copy(step_dir, target, fs::copy_options::recursive);
  return target;
}

// (b): interrupted by SIGTERM at a random step, resumed, bit-identical to (a).
TEST_F(Resume, SigtermThenResumeIsBitIdentical) {
  const std::vector<std::string> common = {"--placement", "D2", "--steps", "20"};
  std::vector<std::string> a = common;
  a.insert(a.end(), {"--metrics-file", path("a.jsonl"), "--save-params", path("a.params")});
  train(2, slow_model(), a);
  const std::map<int, double> reference = losses(path("a.jsonl"));
  ASSERT_EQ(reference.size(), 20u);

  // A new step each run; PLEXUS_TEST_RESUME_SEED=S repeats the run that printed seed S.
  const char* seed_env = std::getenv("PLEXUS_TEST_RESUME_SEED");
  const uint32_t seed = seed_env != nullptr
                            ? static_cast<uint32_t>(std::strtoul(seed_env, nullptr, 10))
                            : std::random_device{}();
  std::mt19937 gen(seed);
  const int k = std::uniform_int_distribution<int>(3, 15)(gen);
  std::printf("resume_test: seed %u: SIGTERM once the metrics show step %d\n", seed, k);
  RecordProperty("sigterm_step", k);
  const std::string ckpt = path("b_ckpt");
  std::vector<std::string> b = common;
  b.insert(b.end(), {"--checkpoint-dir", ckpt, "--save-every", "4", "--metrics-file",
                     path("b.jsonl"), "--save-params", path("b.params")});
  {
    Subprocess run(train_args(2, slow_model(), b), kEnv);
    bool sent = false;
    for (int polls = 0; polls < 6000 && !sent; ++polls) {  // at most 2 minutes
      const std::map<int, double> seen = losses(path("b.jsonl"));
      if (!seen.empty() && seen.rbegin()->first >= k) {
        ASSERT_EQ(kill(run.pid(), SIGTERM), 0);
        sent = true;
      } else if (!process_alive(run.pid())) {
        break;
      } else {
        run.wait_for_stdout("\x01never printed", 1, 0.02);  // reads its output for 20 ms
      }
    }
    ASSERT_TRUE(sent) << "the metrics never showed step " << k << ":\n" << run.output_so_far();
    ProcessResult r = run.wait(180);
    ASSERT_FALSE(r.timed_out) << r.out << r.err;
    EXPECT_EQ(r.exit_code, 0) << "plexus-run after SIGTERM:\n" << r.out << r.err;
  }
  const std::optional<std::string> saved = engine::newest_complete_checkpoint(ckpt);
  ASSERT_TRUE(saved.has_value()) << "no complete checkpoint in " << ckpt;
  const int64_t stopped = engine::CheckpointReader(*saved).step();
  std::printf("resume_test: stopped and saved after step %lld\n",
              static_cast<long long>(stopped));
  EXPECT_GE(stopped, k);
  ASSERT_LT(stopped, 20) << "the run finished before SIGTERM reached it";
  for (const auto& [step, loss] : losses(path("b.jsonl"))) {
    EXPECT_EQ(loss, reference.at(step)) << "step " << step << " before the stop";
  }

  // The same command again: resumes after `stopped` and finishes, appending to the metrics
  // file, which ends with every step once, in order, as the uninterrupted run's.
  const ProcessResult again = train(2, slow_model(), b);
  EXPECT_THAT(again.out, HasSubstr("resumed from " + *saved + ": next step " +
                                   std::to_string(stopped + 1)))
      << "did not resume from the checkpoint";
  std::vector<int> steps;
  for (const std::string& line : split_lines(read_text(path("b.jsonl")))) {
    steps.push_back(nlohmann::json::parse(line).at("step").get<int>());
  }
  std::vector<int> one_to_twenty(20);
  for (int i = 0; i < 20; ++i) one_to_twenty[i] = i + 1;
  EXPECT_EQ(steps, one_to_twenty) << "the metrics file after the resume";
  for (const auto& [step, loss] : losses(path("b.jsonl"))) {
    EXPECT_EQ(loss, reference.at(step)) << "step " << step << " after resuming";
  }
  const std::vector<float> p = saved_params(path("a.params")), q = saved_params(path("b.params"));
  ASSERT_EQ(p.size(), q.size());
  ASSERT_GT(p.size(), 80000u);
  EXPECT_EQ(std::memcmp(p.data(), q.data(), p.size() * sizeof(float)), 0)
      << "parameters differ from the uninterrupted run";
}

// A SIGTERM while the communicator is being created ends the rank at once (nothing to save
// yet). libfabric links libinfinipath (PSM), whose constructor catches SIGTERM and calls exit()
// from the handler (exit code 1, or a hang with the communicator's threads running); libplexus
// resets that handler when it loads (libfabric's shm provider may still catch SIGTERM: it
// cleans up, restores the handler before its own and raises again). Rank 1 never joins, so
// rank 0 waits in the rendezvous when the SIGTERM comes; rank 0 runs without plexus-run's
// IPATH_NO_BACKTRACE=1, as under mpirun or srun.
TEST_F(Resume, SigtermDuringCommunicatorCreationEndsTheRank) {
  std::string train;
  for (const std::string& a : train_args(1, small_model(), {"--steps", "1"})) {
    train += " '" + a + "'";
  }
  Subprocess launcher({PLEXUS_RUN_PATH, "-n", "2", "--term-grace-seconds", "30", "--",
                       "/bin/sh", "-c",
                       "if [ \"$PLEXUS_RANK\" = 1 ]; then exec sleep 120; fi; exec env -u "
                       "IPATH_NO_BACKTRACE -u HFI_NO_BACKTRACE PLEXUS_DEBUG=INFO" +
                           train + " 2>&1"},
                      kEnv);
  ASSERT_TRUE(launcher.wait_for_stdout("rendezvous server listening", 1, 60))
      << launcher.output_so_far();
  ASSERT_EQ(kill(launcher.pid(), SIGTERM), 0);
  ProcessResult r = launcher.wait(60);
  ASSERT_FALSE(r.timed_out) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("rank 0 killed by signal SIGTERM")) << r.out;
  EXPECT_EQ(r.exit_code, 128 + SIGTERM) << r.out << r.err;
}

// A --checkpoint-dir that cannot be created, a --memory-report folder that does not exist and a
// step folder that cannot be read are refused before any training step (exit 2, the path and
// the reason named); nothing is written.
TEST_F(Resume, BadFoldersAreRefusedBeforeTraining) {
  std::ofstream(path("plain")) << "a file, not a folder";
  ProcessResult r = run_process(
      train_args(1, small_model(), {"--steps", "2", "--checkpoint-dir", path("plain/ckpt")}), 120,
      kEnv);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("checkpoint folder '" + path("plain/ckpt") +
                               "': cannot create it: Not a directory"));
  EXPECT_THAT(r.out, Not(HasSubstr("step     1/2"))) << "it trained";

  r = run_process(train_args(1, small_model(),
                             {"--steps", "2", "--memory-report", path("missing/memory.json")}),
                  120, kEnv);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("--memory-report '" + path("missing/memory.json") + "': folder '" +
                               path("missing") + "' cannot be used: No such file or directory"));
  EXPECT_THAT(r.out, Not(HasSubstr("step     1/2"))) << "it trained";

  const std::string ckpt = path("locked_ckpt");
  train(1, small_model(), {"--steps", "2", "--checkpoint-dir", ckpt});
  fs::permissions(ckpt, fs::perms::all);  // writable for the unprivileged run below
  fs::permissions(ckpt + "/step-00000002", fs::perms::none);
  r = run_process(
      unprivileged(train_args(1, small_model(), {"--steps", "4", "--checkpoint-dir", ckpt})), 120,
      kEnv);
  fs::permissions(ckpt + "/step-00000002", fs::perms::owner_all);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("checkpoint '" + ckpt + "/step-00000002': look for manifest.json: "
                               "Permission denied (fix its permissions or move it away)"));
  EXPECT_EQ(listing(ckpt), std::vector<std::string>{"step-00000002"}) << "it saved";
}

// What a crash left: step-2.tmp with rank files of a 2-rank run (another job's temporary
// folder: never removed, reported at start) and step-4 without its manifest (damage in the way
// of the final rename: replaced). This run's saves of those steps complete with its files only.
TEST_F(Resume, LeftoversOfInterruptedSavesNeverEnterACheckpoint) {
  const std::string ckpt = path("leftover_ckpt");
  fs::create_directories(ckpt + "/step-00000002.tmp");
  fs::create_directories(ckpt + "/step-00000004");
  for (const std::string stale : {"/step-00000002.tmp/rank-0.bin",
                                  "/step-00000002.tmp/rank-1.bin", "/step-00000004/rank-0.bin"}) {
    std::ofstream(ckpt + stale) << "stale";
  }
  const ProcessResult r =
      train(1, small_model(), {"--steps", "4", "--save-every", "2", "--checkpoint-dir", ckpt});
  EXPECT_THAT(r.out, HasSubstr("plexus-train: no checkpoint in " + ckpt + ": starting fresh"));
  EXPECT_THAT(r.out, HasSubstr("plexus-train: " + ckpt + " holds saves that other jobs did not "
                               "finish: step-00000002.tmp (never loaded; remove them to free "
                               "their space)"));
  EXPECT_EQ(listing(ckpt), (std::vector<std::string>{"step-00000002", "step-00000002.tmp",
                                                     "step-00000004"}));
  EXPECT_EQ(listing(ckpt + "/step-00000002.tmp"),
            (std::vector<std::string>{"rank-0.bin", "rank-1.bin"}))
      << "another job's temporary folder was changed";
  for (int step : {2, 4}) {
    const std::string saved = engine::checkpoint_path(ckpt, step);
    EXPECT_EQ(listing(saved), (std::vector<std::string>{"manifest.json", "rank-0.bin"})) << saved;
    const engine::CheckpointReader reader(saved);
    EXPECT_EQ(reader.step(), step);
    EXPECT_EQ(reader.world_size(), 1);
  }
}

// (c) and (d): a D4+zero1 checkpoint loads under other placements; damaged ones are refused.
TEST_F(Resume, CheckpointReshapesAndDamageIsRefused) {
  const std::string ckpt = path("c_ckpt");
  train(4, small_model(),
        {"--placement", "D4+zero1", "--steps", "20", "--checkpoint-dir", ckpt, "--save-every", "10",
         "--metrics-file", path("c.jsonl")});
  const std::map<int, double> reference = losses(path("c.jsonl"));
  ASSERT_EQ(reference.size(), 20u);
  const std::string step10 = ckpt + "/step-00000010";
  ASSERT_TRUE(fs::exists(step10 + "/manifest.json"));
  EXPECT_EQ(engine::CheckpointReader(step10).world_size(), 4);

  struct Load {
    std::string name;
    int ranks;
    std::vector<std::string> args;
  };
  for (const Load& l : {Load{"D2", 2, {"--placement", "D2"}},
                        Load{"P2T2", 4, {"--placement", "P2T2", "--microbatches", "2"}},
                        Load{"one", 1, {"--placement", "D"}}}) {
    SCOPED_TRACE("loaded as " + l.name);
    const std::string into = path("load_" + l.name);
    copy_checkpoint(step10, into);
    std::vector<std::string> args = l.args;
    // Step 11 of the 20-step run: the checkpoint's schedule continues (--steps only stops it).
    args.insert(args.end(), {"--steps", "11", "--lr-schedule-on-resume", "checkpoint",
                             "--checkpoint-dir", into, "--metrics-file",
                             path("load_" + l.name + ".jsonl")});
    train(l.ranks, small_model(), args);
    const std::map<int, double> got = losses(path("load_" + l.name + ".jsonl"));
    ASSERT_EQ(got.size(), 1u) << "expected step 11 only";
    ASSERT_EQ(got.begin()->first, 11);
    EXPECT_LE(std::fabs(got.begin()->second - reference.at(11)) / std::fabs(reference.at(11)),
              1e-4)
        << "step 11: uninterrupted D4+zero1 " << reference.at(11) << ", loaded as " << l.name
        << " " << got.begin()->second;
  }

  struct Damage {
    std::string name;
    std::function<void(const std::string& step_dir)> apply;
    std::string n_embd;
    std::vector<std::string> problem;
  };
  const std::vector<Damage> damages = {
      {"truncated",
       [](const std::string& d) {
         fs::resize_file(d + "/rank-1.bin", fs::file_size(d + "/rank-1.bin") - 100);
       },
       "32",
       {"rank-1.bin has", "truncated"}},
      {"corrupted",
       [](const std::string& d) {
         std::fstream f(d + "/rank-2.bin", std::ios::in | std::ios::out | std::ios::binary);
         const auto at = static_cast<std::streamoff>(fs::file_size(d + "/rank-2.bin") / 2);
         f.seekg(at);
         char c = 0;
         f.get(c);
         f.seekp(at);
         f.put(static_cast<char>(c ^ 0x01));
       },
       "32",
       {"rank-2.bin fails its checksum", "corrupt"}},
      {"mismatched", [](const std::string&) {}, "64",
       {"was saved for n_embd 32; this run has n_embd 64"}},
  };
  for (const Damage& d : damages) {
    SCOPED_TRACE(d.name);
    const std::string into = path("damaged_" + d.name);
    const std::string step_dir = copy_checkpoint(step10, into);
    d.apply(step_dir);
    const auto before = snapshot(into);
    std::vector<std::string> args = {"--placement", "D", "--steps", "11", "--checkpoint-dir",
                                     into};
    ProcessResult r = run_process(train_args(1, small_model(d.n_embd), args), 300, kEnv);
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_THAT(r.err, HasSubstr(step_dir)) << "the message names the checkpoint";
    for (const std::string& problem : d.problem) EXPECT_THAT(r.err, HasSubstr(problem));
    EXPECT_EQ(snapshot(into), before) << "the refused checkpoint folder changed";
  }
}

}  // namespace
}  // namespace plexus::test
