// trainer.h - data-parallel (and, through plugins, composed) training of a GPT on a text corpus.
//
// run_training() is what plexus-train runs: it creates the world communicator from the launcher's
// environment, resolves the placement string, splits the D, P, T and embedding groups
// (parallel_groups.h), loads one plugin per parallelism axis and per "+plugin", builds this
// rank's model chunks (stage_model.h), then runs the training loop (microbatch forward and
// backward, by the P plugin's schedule when |P| > 1; tied-embedding gradient sum; plugins'
// after_backward; global gradient clipping; AdamW), printing loss, tokens/s and elapsed time per
// step on rank 0, validation loss every val_every steps, and saving a checkpoint (and
// --save-params) gathered to rank 0 at the end. See docs/placement.md.
#pragma once

#include <string>

#include "engine/train/options.h"

namespace plexus::engine {

// Returns the process exit code: 0 on success, 1 on a runtime failure (a lost peer, an I/O
// error), 2 on bad input (placement, options, data file). Messages go to stderr, prefixed with
// "plexus-train: rank R:". Never throws.
int run_training(const TrainOptions& options);

// Loads a checkpoint and prints generated text to stdout. Same exit codes as run_training.
int run_sampling(const SampleOptions& options);

}  // namespace plexus::engine
