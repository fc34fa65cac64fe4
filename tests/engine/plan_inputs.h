// plan_inputs.h - the small model the memory model's and the planner's unit tests predict for
// (engine/plan/memory_model.h's MemoryModelInput): 4 blocks x 64 dims x 4 heads over the 256
// byte tokens, global batch 16, no gathering save at the end; every unit under 100000 elements.
// memory_prediction_test.cpp takes it with context 64, planner_test.cpp's step times with 32.
#pragma once

#include "engine/plan/memory_model.h"

namespace plexus::engine {

// The small model with context seq_len on data x pipeline x tensor ranks, M = microbatches.
inline MemoryModelInput small_model_input(int seq_len, int data, int pipeline = 1, int tensor = 1,
                                          int microbatches = 1) {
  MemoryModelInput in;
  in.config.vocab_size = 256;
  in.config.max_seq_len = seq_len;
  in.config.n_layer = 4;
  in.config.n_head = 4;
  in.config.n_embd = 64;
  in.data = data, in.pipeline = pipeline, in.tensor = tensor;
  in.global_batch = 16;
  in.microbatches = microbatches;
  in.saves_whole = false;
  return in;
}

}  // namespace plexus::engine
