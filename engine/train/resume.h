// resume.h - where a plexus-train run starts with --checkpoint-dir DIR: rank 0 takes the
// folder's lock for the whole run (checkpoint_lock.h: a second job sharing DIR is refused
// naming the first), rank 0 reports what other jobs left there (a lock of a killed job, saves
// they did not finish), the ranks agree on and load the newest complete checkpoint
// (checkpoint_io.h), and the learning-rate schedule is settled against the one it recorded
// (schedule_resume.h: a changed --steps, --lr or --warmup-steps is refused unless
// --lr-schedule-on-resume says what to do). Rank 0 prints "resumed from ..." or "no checkpoint
// in DIR: starting fresh". Without --checkpoint-dir: a fresh start with this run's schedule.
//
// Every rank calls it together. Errors: CheckpointError (the folder, its lock, a damaged or
// mismatched checkpoint), std::invalid_argument (a refused schedule), CommFailure.
#pragma once

#include <memory>
#include <optional>

#include "engine/checkpoint/checkpoint_io.h"
#include "engine/checkpoint/checkpoint_lock.h"
#include "engine/config/options.h"
#include "engine/optim/lr_schedule.h"

namespace plexus::engine {

struct ResumeState {
  std::unique_ptr<CheckpointFolderLock> lock;  // rank 0 with --checkpoint-dir: hold it
  std::optional<CheckpointRun> run;            // what the checkpoint recorded; nullopt: fresh
  LrSchedule schedule;                          // the learning rate from the next step on
};

ResumeState resume_training(const TrainOptions& o, const ShardedCheckpointContext& context,
                            StageModel& model, TrainingState& state, World& world);

}  // namespace plexus::engine
