// trainer.h - data-parallel (and, through plugins, composed) training of a GPT on a text corpus.
//
// run_training() is what plexus-train runs: it creates the world communicator from the launcher's
// environment, resolves the placement string, checks every option and size before anything is
// allocated (option_checks.h, size_limits.h), splits the D, P, T and embedding groups
// (parallel_groups.h), loads one plugin per parallelism axis and per "+plugin", merges the memory
// plugins' plans (memory_plan.h), builds this rank's model chunks (stage_model.h) and optimizer
// state (training_state.h: replicated, or ZeRO-sharded), locks --checkpoint-dir for the job and
// resumes from its newest sharded checkpoint if there is one (resume.h), then runs the training
// loop (microbatch forward and backward, by the P plugin's schedule when |P| > 1; the state's
// gradient reduction (plugins' after_backward, or ZeRO reduce-scatter) and tied-embedding sum;
// global gradient clipping; AdamW), printing loss, tokens/s and elapsed time per step on rank 0
// and validation loss every val_every steps, saving sharded checkpoints every save_every steps,
// at the end and when a SIGTERM/SIGINT asks it to stop (stop_request.h; during set-up such a
// signal ends the rank at once), and at the end the single-file checkpoint (and --save-params)
// gathered to rank 0 and the memory peaks. Each of these is a named step of training_run.h,
// which trainer.cpp's train() calls in order. See docs/placement.md, docs/memory.md and
// docs/checkpoints.md.
#pragma once

#include <string>

#include "engine/config/options.h"

namespace plexus::engine {

// Returns the process exit code: 0 on success, 1 on a runtime failure (a lost peer, an I/O
// error), 2 on bad input (placement, options, data file). Messages go to stderr, prefixed with
// "plexus-train: rank R:". Never throws.
int run_training(const TrainOptions& options);

}  // namespace plexus::engine
