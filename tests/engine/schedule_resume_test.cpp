// schedule_resume_test.cpp - the learning-rate schedule (engine/optim/lr_schedule.h) and what a
// resumed run does with a changed one (engine/checkpoint/schedule_resume.h): the issue-19 case (a
// finished 200-step run continued with --steps 400) is refused naming --steps and the jump;
// "checkpoint" continues the saved schedule without a jump; "override" switches and says so.
#include "engine/checkpoint/schedule_resume.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <utility>

namespace plexus::engine {
namespace {

using ::testing::HasSubstr;

LrSchedule schedule(int64_t steps, float lr = 3e-3f, int64_t warmup = 50) {
  return LrSchedule{lr, 0.1f, warmup, steps};
}

TEST(LrSchedule, WarmUpThenCosineToTheMinimumThenFlat) {
  const LrSchedule s = schedule(200);
  EXPECT_FLOAT_EQ(learning_rate(s, 0), 3e-3f / 50);
  EXPECT_FLOAT_EQ(learning_rate(s, 49), 3e-3f);
  EXPECT_FLOAT_EQ(learning_rate(s, 50), 3e-3f);  // the decay starts at the peak
  // Half way through the decay: (lr + min_lr) / 2.
  EXPECT_FLOAT_EQ(learning_rate(s, 125), (3e-3f + 3e-4f) / 2);
  EXPECT_FLOAT_EQ(learning_rate(s, 200), 3e-4f);
  EXPECT_FLOAT_EQ(learning_rate(s, 10000), 3e-4f);  // past the end: the minimum
}

// The case: a finished 200-step run, continued with --steps 400.
TEST(ScheduleResume, AChangedStepsIsRefusedNamingItAndTheJump) {
  try {
    resume_schedule("ckpt/step-00000200", schedule(200), schedule(400), ResumeSchedule::kCheck,
                    200, 400);
    FAIL() << "a jump of the learning rate was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("--steps 400 (the checkpoint's: 200) differs from the "
                                    "learning-rate schedule saved in checkpoint "
                                    "ckpt/step-00000200: resumed, the learning rate would jump "
                                    "from 3.00e-04 at step 200 to 1.95e-03 at step 201"));
    EXPECT_THAT(e.what(), HasSubstr("--lr-schedule-on-resume checkpoint"));
    EXPECT_THAT(e.what(), HasSubstr("--lr-schedule-on-resume override"));
  }
}

TEST(ScheduleResume, EveryChangedOptionIsNamed) {
  try {
    resume_schedule("c", schedule(200), schedule(200, 1e-3f, 10), ResumeSchedule::kCheck, 100,
                    200);
    FAIL() << "accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("--lr 0.001 (the checkpoint's: 0.003), --warmup-steps 10 (the "
                                    "checkpoint's: 50) differ from"));
  }
}

TEST(ScheduleResume, TheSameScheduleOrNothingLeftToTrainIsAccepted) {
  const ScheduleChoice same =
      resume_schedule("c", schedule(200), schedule(200), ResumeSchedule::kCheck, 120, 200);
  EXPECT_EQ(same.schedule, schedule(200));
  EXPECT_EQ(same.note, "");
  // --steps 100 after 200 steps: nothing to train, so no jump to refuse.
  EXPECT_NO_THROW(
      resume_schedule("c", schedule(200), schedule(100), ResumeSchedule::kCheck, 200, 100));
}

TEST(ScheduleResume, CheckpointModeContinuesTheSavedScheduleWithoutAJump) {
  const ScheduleChoice c =
      resume_schedule("c", schedule(200), schedule(400), ResumeSchedule::kCheckpoint, 200, 400);
  EXPECT_EQ(c.schedule, schedule(200));
  // No jump: step 201 runs at the minimum, just under step 200's 3.003e-4.
  EXPECT_FLOAT_EQ(learning_rate(c.schedule, 199), 3.00296e-4f);
  EXPECT_FLOAT_EQ(learning_rate(c.schedule, 200), 3e-4f);
  EXPECT_FLOAT_EQ(learning_rate(c.schedule, 399), 3e-4f);
  EXPECT_THAT(c.note, HasSubstr("continuing the learning-rate schedule of checkpoint c"));
  EXPECT_THAT(c.note, HasSubstr("--steps 400 (the checkpoint's: 200) is ignored"));
  // Resumed mid-run with an earlier stop: the uninterrupted run's rate at every step.
  const ScheduleChoice early =
      resume_schedule("c", schedule(20), schedule(11), ResumeSchedule::kCheckpoint, 10, 11);
  EXPECT_EQ(learning_rate(early.schedule, 10), learning_rate(schedule(20), 10));
}

TEST(ScheduleResume, OverrideSwitchesAndSaysSo) {
  const ScheduleChoice c =
      resume_schedule("c", schedule(200), schedule(400), ResumeSchedule::kOverride, 200, 400);
  EXPECT_EQ(c.schedule, schedule(400));
  EXPECT_THAT(c.note, HasSubstr("(--lr-schedule-on-resume override; --steps 400 (the "
                                "checkpoint's: 200)): the learning rate goes from 3.00e-04 at "
                                "step 200 to 1.95e-03 at step 201"));
}

TEST(ScheduleResume, ACheckpointWithoutAScheduleUsesThisRunsOrIsRefusedForCheckpointMode) {
  const ScheduleChoice c =
      resume_schedule("old", std::nullopt, schedule(400), ResumeSchedule::kCheck, 200, 400);
  EXPECT_EQ(c.schedule, schedule(400));
  EXPECT_THAT(c.note, HasSubstr("checkpoint old records no learning-rate schedule"));
  EXPECT_THROW(resume_schedule("old", std::nullopt, schedule(400), ResumeSchedule::kCheckpoint,
                               200, 400),
               std::invalid_argument);
}

TEST(ScheduleResume, OptionValuesParse) {
  const std::pair<const char*, ResumeSchedule> known[] = {
      {"check", ResumeSchedule::kCheck},
      {"checkpoint", ResumeSchedule::kCheckpoint},
      {"override", ResumeSchedule::kOverride}};
  for (const auto& [text, expected] : known) {
    ResumeSchedule parsed = expected == ResumeSchedule::kCheck ? ResumeSchedule::kOverride
                                                               : ResumeSchedule::kCheck;
    EXPECT_TRUE(parse_resume_schedule(text, &parsed)) << text;
    EXPECT_EQ(parsed, expected) << text;
  }
  ResumeSchedule unchanged = ResumeSchedule::kOverride;
  for (const char* bad : {"Checkpoint", "", "check ", "refuse"}) {
    EXPECT_FALSE(parse_resume_schedule(bad, &unchanged)) << bad;
  }
  EXPECT_EQ(unchanged, ResumeSchedule::kOverride);
}

}  // namespace
}  // namespace plexus::engine
