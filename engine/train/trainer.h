// trainer.h - data-parallel (and, through plugins, composed) training of a GPT on a text corpus.
//
// run_training() is what plexus-train runs: it creates the world communicator from the launcher's
// environment, resolves the placement string, loads one plugin per parallelism axis and per
// "+plugin", then runs the training loop (forward, backward, plugins' after_backward, gradient
// clipping, AdamW), printing loss, tokens/s and elapsed time per step on rank 0, validation loss
// every val_every steps, and saving a checkpoint at the end.
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
