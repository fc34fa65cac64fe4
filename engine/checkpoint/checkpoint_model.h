// checkpoint_model.h - a single-file checkpoint (checkpoint.h) read as a model: its header's
// `model` and other fields range-checked, and its params section matched against that model,
// before anything is sized by them. Used by --sample, --evaluate and --predict, which take the
// model's sizes from the file rather than from options.
#pragma once

#include <string>
#include <vector>

#include "engine/checkpoint/checkpoint.h"
#include "engine/model/gpt.h"

namespace plexus::engine {

struct ModelCheckpoint {
  Checkpoint file;
  GptConfig config;                    // the header's model
  // The file's params section, full_num_params(config) floats (checked on loading).
  const std::vector<float>& params() const { return *file.find("params"); }
};

// Loads `path` (load_checkpoint), checks its header's model (each size an integer in
// 1..GptConfig::kMaxDim, a valid config), that the params section holds exactly the model's
// parameters (before any model is allocated), and the header's other fields as make_checkpoint
// (trainer.cpp) writes them (format, step, seed, global_batch, placement, val_loss, the tensor
// table). Throws CheckpointError naming the path and the field: "checkpoint 'P': header field
// model.n_layer is 0; valid: an integer in 1..1048576", or "checkpoint 'P' has N parameters in
// its params section; its header's model (...) has M".
ModelCheckpoint load_model_checkpoint(const std::string& path);

}  // namespace plexus::engine
