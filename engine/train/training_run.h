// training_run.h - a plexus-train training run as its named steps, which train() (trainer.cpp)
// calls in order, as llm.c's training loop reads: check, groups, plugins, plan, model, state,
// resume, loop, final save, report. TrainingRun holds what the set-up steps establish and
// RunProgress where the run stands. run_setup.cpp holds the set-up steps (1-6, with
// --estimate-memory and --evaluate), training_loop.cpp the others. Every rank calls every step at
// the same point: several are collective over the world or a group. Errors: UsageError (bad
// input, exit 2), CommFailure, CheckpointError, PluginError, std::runtime_error (I/O).
// Thread safety: the training thread only.
#pragma once

#include <cmath>
#include <cstdint>
#include <fstream>
#include <memory>
#include <optional>
#include <stdexcept>

#include "engine/checkpoint/checkpoint_io.h"
#include "engine/checkpoint/checkpoint_model.h"
#include "engine/config/options.h"
#include "engine/config/size_limits.h"
#include "engine/data/text_dataset.h"
#include "engine/model/gpt.h"
#include "engine/placement/placement.h"
#include "engine/plugin/active_plugins.h"
#include "engine/state/memory_plan.h"
#include "engine/state/stage_model.h"
#include "engine/state/training_state.h"
#include "engine/train/resume.h"
#include "engine/world/parallel_groups.h"
#include "engine/world/world.h"

namespace plexus::engine {

// Bad input (exit code 2) as opposed to a runtime failure (exit code 1).
class UsageError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// What the set-up steps establish, in the order train() runs them; each step reads what the
// steps before it left. The members are destroyed in reverse order: the state (which unhooks
// the model) before the model, the memory plan and the plugins (whose collectives its hooks
// call), and the plugins before their groups, which the caller owns.
struct TrainingRun {
  TrainingRun(const TrainOptions& options, World& w) : o(options), world(w) {}
  bool leader() const { return world.rank() == 0; }

  TrainOptions o;  // as written, or as --placement auto planned them
  World& world;
  // check_run
  std::optional<ModelCheckpoint> evaluated;  // --evaluate: the checkpoint, its model in o.model
  Placement placement;
  int data_degree = 1;  // |D|
  int P = 1;            // |P|
  int d = 0;            // this rank's data-parallel coordinate
  int local_rows = 0;   // this rank's rows of the global batch
  GptConfig config;
  MemoryFloor floor;
  StageLayout layout;
  // set_up_groups, create_run_plugins
  ParallelGroups* groups = nullptr;
  ActivePlugins plugins;
  ActivePlugin* pipeliner = nullptr;  // the plugin with run_pipeline (P > 1)
  ActivePlugin* tensorer = nullptr;   // the plugin with tensor_allreduce (T > 1)
  // plan_memory
  std::optional<MemoryPlan> memory;
  // build_model, build_state
  std::optional<TextDataset> data;
  std::unique_ptr<StageModel> model;
  std::unique_ptr<TrainingState> state;
};

// Where the run stands: what resume_run found, then what the loop has done.
struct RunProgress {
  ShardedCheckpointContext sharded;
  ResumeState resume;  // rank 0 holds --checkpoint-dir's lock in it; the learning-rate schedule
  int64_t step = 0;    // the next step (0-based)
  float last_val = NAN;
  uint64_t data_seed = 0;
  int64_t saved_step = -1;  // the step of the sharded checkpoint on disk that this run has
  std::unique_ptr<std::ofstream> metrics;  // rank 0 with --metrics-file
};

// Step 1, check: the options, the placement, the sizes and memory floor, the compute device and
// every output path, before any group, plugin or model buffer exists (exit 2, naming them).
void check_run(TrainingRun& r);

// Step 2, groups: the D, P, T and embedding communicators, split from the world (collective).
// The caller owns them, so that it can finish or abort them after train() returns or throws.
void set_up_groups(TrainingRun& r, std::unique_ptr<ParallelGroups>& groups_out);

// Step 3, plugins: one per axis and per "+plugin", created on every rank in placement order;
// the one that drives the pipeline and the one the layers call for tensor allreduces.
void create_run_plugins(TrainingRun& r);

// Step 4, plan: the memory plugins' plans merged and checked (memory_plan.h).
void plan_memory(TrainingRun& r);

// --estimate-memory: the memory model's prediction for the plan, printed by rank 0 and, with
// --memory-report, written by every rank for its stage (memory_report.h); nothing is trained.
void report_memory_estimate(const TrainingRun& r);

// Step 5, model: the data read, the BLAS threads set, and this rank's model chunks built,
// holding only what the plan keeps (ZeRO-2/3: no whole gradient, ZeRO-3: no whole parameters),
// even during set-up, so the memory peaks cover the whole run (docs/memory.md).
void build_model(TrainingRun& r);

// Step 6, state: the training state the plan asks for, initialising every shard to the matching
// slice of Gpt::init_parameters(seed), so replicas start equal; then --explain.
void build_state(TrainingRun& r);

// --evaluate: the checkpoint's parameters loaded into the state, the validation loss printed by
// rank 0 and written to --metrics-file; nothing is trained.
void evaluate_run(TrainingRun& r);

// Rank 0's lines before the first step: ranks, placement, model, batch, data, device, memory.
void announce_run(const TrainingRun& r);

// Step 7, resume: with --checkpoint-dir, lock the folder, resume from the newest complete
// sharded checkpoint, if any, and settle the learning-rate schedule (resume.h); then open
// --metrics-file (fresh: truncated; resumed: the earlier runs' lines up to the checkpoint's
// step kept).
RunProgress resume_run(TrainingRun& r);

// Step 8, loop: from the resumed step to --steps, validating every --val-every steps, saving
// every --save-every steps; it stops early, after the step, when the validation loss reaches
// --target-val-loss, --time-limit passes or a signal asked to stop (every rank agrees).
void train_loop(TrainingRun& r, RunProgress& p);

// Step 9, final save: the sharded checkpoint of the last step, then --checkpoint (with AdamW's
// moments) and --save-params (parameters only), gathered to rank 0.
void save_final(TrainingRun& r, RunProgress& p);

// Step 10, report: rank 0 prints its memory peaks; with --memory-report every rank writes its
// own (memory_report.h).
void report_memory(const TrainingRun& r);

}  // namespace plexus::engine
