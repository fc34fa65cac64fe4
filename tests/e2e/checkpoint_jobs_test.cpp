// End-to-end: jobs and their checkpoint folder (issue 19). Real plexus-train processes, under
// the real plexus-run where ranks matter:
//  (a) a second job given a running job's --checkpoint-dir is refused on every rank, naming the
//      first job's id and pid, and changes nothing; the first job (stopped with SIGSTOP while
//      the second tries, then continued) finishes and leaves only its checkpoints;
//  (b) a job killed with SIGKILL leaves its lock file: the next job takes the lock over, says
//      whose it was, and resumes;
//  (c) ranks that see different newest checkpoints (rank 1 given another folder) stop with an
//      error naming each rank's step, on every rank;
//  (d) a damaged newest checkpoint names the newest valid one and the command that moves the
//      damaged one away; after it, the run resumes from the valid one;
//  (e) a finished 20-step run continued with --steps 40 is refused naming --steps and the jump
//      of the learning rate; --lr-schedule-on-resume checkpoint continues the saved schedule
//      (step 21 at the minimum rate, no jump) and override switches to the new one, announced.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/optim/lr_schedule.h"
#include "tests/e2e/folder_snapshot.h"
#include "tests/e2e/synthetic_corpus.h"
#include "tests/support/subprocess.h"

namespace plexus::test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
namespace fs = std::filesystem;

class CheckpointJobs : public ::testing::Test {
 protected:
  std::string path(const std::string& name) const { return corpus_.path(name); }

  // plexus-train (under plexus-run -n ranks when ranks > 1) on a small model: 4 blocks x 32
  // dims x 2 heads, context 16, global batch 8, --lr 1e-3 with 5 warm-up steps.
  std::vector<std::string> command(int ranks, const std::vector<std::string>& extra) const {
    std::vector<std::string> args;
    if (ranks > 1) args = {PLEXUS_RUN_PATH, "-n", std::to_string(ranks), "--"};
    for (const std::string a :
         {PLEXUS_TRAIN_PATH, "--data", corpus_.data().c_str(), "--n-layer", "4", "--n-head", "2",
          "--n-embd", "32", "--seq-len", "16", "--batch-size", "8", "--lr", "1e-3",
          "--warmup-steps", "5", "--val-every", "0", "--log-every", "1", "--checkpoint", ""}) {
      args.push_back(a);
    }
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }

  ProcessResult run(int ranks, const std::vector<std::string>& extra, int expected_code) const {
    ProcessResult r = run_process(command(ranks, extra), 300);
    EXPECT_FALSE(r.timed_out) << r.out << r.err;
    EXPECT_EQ(r.exit_code, expected_code) << r.out << r.err;
    EXPECT_THAT(r.err, Not(HasSubstr("bad_alloc")));
    EXPECT_THAT(r.err, Not(HasSubstr("json.exception")));
    return r;
  }

  // Two ranks training to `steps`, rank 0 with --checkpoint-dir `dir0`, rank 1 with `dir1`.
  ProcessResult run_with_rank_one_in(const std::string& dir0, const std::string& dir1,
                                     int steps) const {
    std::string train;
    for (const std::string& a :
         command(1, {"--steps", std::to_string(steps), "--checkpoint-dir"})) {
      train += " '" + a + "'";
    }
    return run_process(
        {PLEXUS_RUN_PATH, "-n", "2", "--", "/bin/sh", "-c",
         "if [ \"$PLEXUS_RANK\" = 1 ]; then d='" + dir1 + "'; else d='" + dir0 + "'; fi; exec" +
             train + " \"$d\""},
        300);
  }

  CorpusFolder corpus_{"plexus-ckpt-jobs"};
};

// step -> the learning rate of that step, from a --metrics-file.
std::map<int, double> learning_rates(const std::string& metrics) {
  std::map<int, double> out;
  std::ifstream in(metrics);
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json row = nlohmann::json::parse(line, nullptr, false);
    if (!row.is_discarded()) out[row.at("step").get<int>()] = row.at("lr").get<double>();
  }
  return out;
}

// (a) Two jobs, one folder: the second is refused while the first holds it.
TEST_F(CheckpointJobs, ASecondJobOnTheFolderIsRefusedNamingTheFirst) {
  const std::string ckpt = path("shared");
  Subprocess first(command(1, {"--steps", "12", "--save-every", "4", "--checkpoint-dir", ckpt}));
  ASSERT_TRUE(first.wait_for_stdout("no checkpoint in " + ckpt + ": starting fresh", 1, 120))
      << first.output_so_far();
  ASSERT_EQ(kill(first.pid(), SIGSTOP), 0);  // holds the lock, does nothing until SIGCONT
  const auto before = snapshot(ckpt);
  const ProcessResult second = run(2, {"--steps", "12", "--checkpoint-dir", ckpt}, 2);
  EXPECT_THAT(second.err, HasSubstr("plexus-train: rank 0: checkpoint folder '" + ckpt +
                                    "' is in use by job "));
  EXPECT_THAT(second.err, HasSubstr("(pid " + std::to_string(first.pid()) + " on host "));
  EXPECT_THAT(second.err, HasSubstr("two jobs must not share a --checkpoint-dir"));
  EXPECT_THAT(second.err, HasSubstr("plexus-train: rank 1: another rank could not use the "
                                    "checkpoint folder '" + ckpt + "'"));
  EXPECT_THAT(second.out, Not(HasSubstr("step     1/12")));
  EXPECT_EQ(snapshot(ckpt), before) << "the refused job changed the folder";
  ASSERT_EQ(kill(first.pid(), SIGCONT), 0);
  const ProcessResult done = first.wait(300);
  EXPECT_EQ(done.exit_code, 0) << done.out << done.err;
  EXPECT_EQ(listing(ckpt),
            (std::vector<std::string>{"step-00000004", "step-00000008", "step-00000012"}))
      << "the lock file or a temporary folder was left";
}

// (b) A killed job's lock is taken over and reported.
TEST_F(CheckpointJobs, AKilledJobsLockIsTakenOverAndReported) {
  const std::string ckpt = path("killed");
  std::vector<std::string> args = {"--steps", "1000", "--save-every", "2", "--checkpoint-dir",
                                   ckpt};
  pid_t killed = 0;
  {
    Subprocess job(command(1, args));
    ASSERT_TRUE(job.wait_for_stdout("saved sharded checkpoint", 1, 120)) << job.output_so_far();
    killed = job.pid();
    ASSERT_EQ(kill(killed, SIGKILL), 0);
    job.wait(60);
  }
  ASSERT_TRUE(fs::exists(ckpt + "/plexus.lock")) << "SIGKILL leaves the lock file";
  args.insert(args.end(), {"--time-limit", "0.001"});  // one step, then stop and save
  const ProcessResult next = run(1, args, 0);
  EXPECT_THAT(next.out, HasSubstr("plexus-train: " + ckpt + "/plexus.lock: taking the lock over "
                                  "from job "));
  EXPECT_THAT(next.out, HasSubstr("(pid " + std::to_string(killed) + " on host "));
  EXPECT_THAT(next.out, HasSubstr("which ended without releasing it"));
  EXPECT_THAT(next.out, HasSubstr("plexus-train: resumed from " + ckpt + "/step-0000000"));
  EXPECT_FALSE(fs::exists(ckpt + "/plexus.lock"));
}

// (c) Ranks that see different folders never resume from different steps, and (c2) ranks that
// see copies of two runs at one step never resume from different states.
TEST_F(CheckpointJobs, RanksThatSeeDifferentCheckpointsStopNamingEachRanksStep) {
  const std::string two = path("two"), four = path("four");
  run(1, {"--steps", "2", "--checkpoint-dir", two}, 0);
  run(1, {"--steps", "4", "--checkpoint-dir", four}, 0);
  const ProcessResult r = run_with_rank_one_in(two, four, 6);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  for (const std::string& dir : {two, four}) {
    EXPECT_THAT(r.err, HasSubstr("ranks disagree on the newest complete checkpoint in '" + dir +
                                 "': rank 0 sees step 2; rank 1 sees step 4"));
  }
  EXPECT_THAT(r.out, Not(HasSubstr("resumed from")));
  EXPECT_THAT(r.out, Not(HasSubstr("step     3/6")));
}

TEST_F(CheckpointJobs, RanksThatSeeOtherRunsAtOneStepStopNamingTheirManifests) {
  const std::string first = path("first"), second = path("second");
  run(1, {"--steps", "2", "--seed", "1", "--checkpoint-dir", first}, 0);
  run(1, {"--steps", "2", "--seed", "99", "--checkpoint-dir", second}, 0);
  const ProcessResult r = run_with_rank_one_in(first, second, 4);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  for (const std::string& dir : {first, second}) {
    EXPECT_THAT(r.err, HasSubstr("ranks see different checkpoints as step 2 in '" + dir +
                                 "': rank 0 reads a manifest.json of checksum 0x"));
  }
  EXPECT_THAT(r.err, HasSubstr("; rank 1 reads a manifest.json of checksum 0x"));
  EXPECT_THAT(r.out, Not(HasSubstr("resumed from")));
  EXPECT_THAT(r.out, Not(HasSubstr("step     3/4")));
}

// (d) A damaged newest checkpoint: the message names the newest valid one and what to do.
TEST_F(CheckpointJobs, ADamagedNewestCheckpointNamesTheNewestValidOne) {
  const std::string ckpt = path("damaged");
  run(1, {"--steps", "6", "--save-every", "2", "--checkpoint-dir", ckpt}, 0);
  const std::string newest = ckpt + "/step-00000006";
  {
    std::fstream f(newest + "/rank-0.bin", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(100);
    f.put('\x7f');
  }
  ProcessResult r = run(1, {"--steps", "6", "--checkpoint-dir", ckpt}, 2);
  EXPECT_THAT(r.err, HasSubstr("checkpoint '" + newest + "': rank-0.bin fails its checksum"));
  EXPECT_THAT(r.err, HasSubstr(". The newest valid checkpoint is " + ckpt +
                               "/step-00000004 (step 4): move the damaged one away (mv " + newest +
                               " " + ckpt + "/damaged-step-00000006) to resume from it"));
  fs::rename(newest, ckpt + "/damaged-step-00000006");
  r = run(1, {"--steps", "6", "--checkpoint-dir", ckpt}, 0);
  EXPECT_THAT(r.out, HasSubstr("resumed from " + ckpt + "/step-00000004: next step 5"));

  // Every checkpoint damaged: nothing older to name; start afresh after moving them away.
  const std::string alone = path("alone");
  run(1, {"--steps", "2", "--checkpoint-dir", alone}, 0);
  fs::resize_file(alone + "/step-00000002/rank-0.bin", 100);
  r = run(1, {"--steps", "2", "--checkpoint-dir", alone}, 2);
  EXPECT_THAT(r.err, HasSubstr(". No older checkpoint in '" + alone + "' is valid: move the "
                               "damaged one away (mv " + alone + "/step-00000002 " + alone +
                               "/damaged-step-00000002) to start afresh"));
}

// (e) The issue-19 case: a finished run continued with another --steps.
TEST_F(CheckpointJobs, AChangedStepsOnResumeIsRefusedOrFollowsTheChosenSchedule) {
  const std::string ckpt = path("schedule");
  run(1, {"--steps", "20", "--checkpoint-dir", ckpt, "--metrics-file", path("first.jsonl")}, 0);
  const std::map<int, double> first = learning_rates(path("first.jsonl"));
  ASSERT_EQ(first.size(), 20u);
  const engine::LrSchedule saved{1e-3f, 0.1f, 5, 20}, longer{1e-3f, 0.1f, 5, 40};
  EXPECT_EQ(first.at(20), static_cast<double>(engine::learning_rate(saved, 19)));
  std::printf("checkpoint_jobs_test: learning rate at step 20: %.3e\n", first.at(20));
  for (const std::string copy : {"checkpoint", "override"}) {
    fs::copy(ckpt, path(copy), fs::copy_options::recursive);
  }

  const auto before = snapshot(ckpt);
  ProcessResult r = run(1, {"--steps", "40", "--checkpoint-dir", ckpt}, 2);
  char jump[256];
  std::snprintf(jump, sizeof(jump),
                "the learning rate would jump from %.2e at step 20 to %.2e at step 21",
                engine::learning_rate(saved, 19), engine::learning_rate(longer, 20));
  EXPECT_THAT(r.err, HasSubstr("--steps 40 (the checkpoint's: 20) differs from the learning-rate "
                               "schedule saved in checkpoint " + ckpt + "/step-00000020: resumed, " +
                               jump));
  EXPECT_THAT(r.err, HasSubstr("--lr-schedule-on-resume checkpoint"));
  EXPECT_EQ(snapshot(ckpt), before);

  // checkpoint: the saved schedule goes on; its decay ended at step 20, so steps 21..40 run at
  // the minimum, 1e-4, never above step 20's rate.
  r = run(1, {"--steps", "40", "--lr-schedule-on-resume", "checkpoint", "--checkpoint-dir",
              path("checkpoint"), "--metrics-file", path("checkpoint.jsonl")},
          0);
  EXPECT_THAT(r.out, HasSubstr("continuing the learning-rate schedule of checkpoint " +
                               path("checkpoint") + "/step-00000020"));
  const std::map<int, double> continued = learning_rates(path("checkpoint.jsonl"));
  ASSERT_EQ(continued.size(), 20u);
  for (const auto& [step, lr] : continued) {
    EXPECT_EQ(lr, static_cast<double>(1e-3f * 0.1f)) << "step " << step;
  }
  EXPECT_LE(continued.at(21), first.at(20));
  std::printf("checkpoint_jobs_test: checkpoint schedule: step 21 at %.3e\n", continued.at(21));

  // override: this run's schedule from step 21 on, the jump announced.
  r = run(1, {"--steps", "40", "--lr-schedule-on-resume", "override", "--checkpoint-dir",
              path("override"), "--metrics-file", path("override.jsonl")},
          0);
  EXPECT_THAT(r.out, HasSubstr("(--lr-schedule-on-resume override; --steps 40 (the "
                               "checkpoint's: 20)): the learning rate goes from"));
  const std::map<int, double> switched = learning_rates(path("override.jsonl"));
  for (int step : {21, 30, 40}) {
    EXPECT_EQ(switched.at(step), static_cast<double>(engine::learning_rate(longer, step - 1)))
        << "step " << step;
  }
  std::printf("checkpoint_jobs_test: override schedule: step 21 at %.3e\n", switched.at(21));
}

}  // namespace
}  // namespace plexus::test
