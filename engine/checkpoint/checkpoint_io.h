// checkpoint_io.h - the trainer's side of universal sharded checkpoints
// (sharded_checkpoint.h): which of this rank's values it writes, and where loaded values go,
// whatever the placement and ZeRO stage.
//
// Saving: for each chunk and each of params, adam_m, adam_v, the state's owned ranges
// (TrainingState::owned_ranges: the whole chunk when replicated, this rank's part of every unit
// under ZeRO) intersected with the chunk's owned full runs (full_runs.h: a tensor held by several
// tensor ranks or pipeline stages is written by one of them). Replicated state is further cut
// evenly over the data ranks (rank d writes local elements [d*n/|D|, (d+1)*n/|D|)), so every
// rank writes a share and the files of one checkpoint tile the model exactly once. Then a
// barrier, rank 0 finalizes (coverage check, manifest, rename), and a second barrier, so when
// save returns on any rank the checkpoint is complete.
//
// Loading: every rank reads, for each of its held ranges, every element it holds (replicas
// included) from whichever rank files have it, then the state rebuilds whole parameters
// (params_written). Elements that map nowhere (vocabulary padding rows) keep their values.
//
// The training state saved with it: "step" (the next step to run: data position and AdamW's
// step count follow from it), "seed" (the data order), the global batch, the last validation
// loss, and "lr_schedule" (lr_schedule.h: what a resumed run's learning rate continues,
// schedule_resume.h). Loading refuses another model or another global batch with a
// CheckpointError naming both values.
//
// One job per folder: rank 0 holds the folder's lock (checkpoint_lock.h) for the whole run, and
// the job id names its temporary folders. The ranks agree on the checkpoint they resume from: a
// rank that sees another newest step than the others stops every rank with an error naming each
// rank's step.
//
// Errors: CheckpointError (bad or mismatched checkpoint, OS errors), CommFailure (a peer failed
// during the barriers). Every rank must call save and load together.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "engine/checkpoint/checkpoint_lock.h"
#include "engine/model/gpt.h"
#include "engine/optim/lr_schedule.h"
#include "engine/state/stage_model.h"
#include "engine/state/training_state.h"
#include "engine/world/world.h"

namespace plexus::engine {

struct CheckpointRun {
  int64_t next_step = 0;  // the first step still to run
  uint64_t seed = 0;
  int global_batch = 0;
  float last_val_loss = 0;  // NaN if none yet
  std::optional<LrSchedule> schedule;  // nullopt: saved before plexus-train recorded it
};

struct ShardedCheckpointContext {
  std::string dir;
  GptConfig config;
  std::string placement;
  int data_degree = 1;
  int data_rank = 0;
  std::string job;  // this job's id (checkpoint_lock.h): names its temporary folders
};

// The training state of a checkpoint's manifest (`training`, as save_sharded_checkpoint writes
// it), every field range-checked, as a forged or damaged manifest must not steer a run: "step"
// an integer equal to the manifest's step, "seed" an integer in 0..2^64-1, "global_batch" in
// 1..INT_MAX, "val_loss" null or a finite number >= 0; "lr_schedule" (optional) an object with
// "lr" a finite number in (0, FLT_MAX], "min_lr_ratio" finite in [0, FLT_MAX], "warmup_steps" an
// integer >= 0 and "decay_steps" an integer >= 1. Throws CheckpointError "checkpoint <path>:
// manifest's training.<field> is <value>; valid: <range>".
CheckpointRun checkpoint_run(const std::string& path, const nlohmann::json& training,
                             int64_t manifest_step);

// Writes <dir>/step-<next_step> from every rank; returns its path (on every rank). Rank 0 first
// starts step-N.tmp afresh (prepare_checkpoint_step), then every rank writes its file.
std::string save_sharded_checkpoint(const ShardedCheckpointContext& context,
                                    const CheckpointRun& run, StageModel& model,
                                    TrainingState& state, World& world);

// Every rank checks that dir can hold checkpoints (check_checkpoint_folder: created if
// missing, a file created and removed in it), so a bad --checkpoint-dir is refused at start, not
// at the first save; then rank 0 takes the folder's lock for context.job. Returns the lock on
// rank 0 (hold it for the run), nullptr elsewhere. Throws CheckpointError on every rank when one
// fails: "checkpoint folder 'DIR' is in use by job J (pid P on host H, ...)" on rank 0.
std::unique_ptr<CheckpointFolderLock> lock_checkpoint_folder(
    const ShardedCheckpointContext& context, World& world);

// If dir holds a complete checkpoint: loads the newest into the state and returns what it
// recorded; nullopt (nothing changed) if there is none. The ranks first agree on its step (an
// allgather): when they differ (ranks that do not see the same folder, or one that changed
// while they looked) every rank throws "ranks disagree on the newest complete checkpoint in
// 'DIR': rank 0 sees step 200, rank 1 step 100 ...". Throws CheckpointError for a damaged one
// (rank 0 adds the newest older checkpoint that verifies, and how to resume from it, or that
// there is none) or for another model or global batch (never falling back to an older one);
// when one rank fails, every rank throws (the others name the failing rank), so none waits in a
// collective.
std::optional<CheckpointRun> load_newest_sharded_checkpoint(
    const ShardedCheckpointContext& context, int global_batch, StageModel& model,
    TrainingState& state, World& world, std::string* path);

}  // namespace plexus::engine
