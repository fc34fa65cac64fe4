// evaluate.h - plexus-train --evaluate: the validation loss and perplexity of a single-file
// checkpoint over the whole validation split, under any placement.
//
// The trainer builds the placement's model chunks and state as for training (trainer.cpp), with
// the model's sizes taken from the checkpoint (evaluation_model), then:
//  - load_full_parameters puts the checkpoint's parameters (Gpt's flat layout) into every chunk
//    of this rank: each chunk's slice (extract_from_full, the reverse of gather_full_model's
//    scatter) through TrainingState::load_values, so replicated and ZeRO states alike keep
//    their part;
//  - evaluate_validation runs every window of TextDataset::validation_windows() forward once:
//    the windows are taken in global batches of `global_rows` (--batch-size), rank d of |D|
//    taking rows [d*B/|D|, (d+1)*B/|D|) of each; a rank whose share of the last batch is empty
//    runs one window with weight 0, so every data rank runs the same number of forward passes
//    (ZeRO-3 gathers parameters over the data group in each). The rank holding the head (tensor
//    rank 0) adds mean loss x tokens of each batch in double; the sum over the world, divided by
//    the tokens, is the token-weighted mean loss, the same on every rank.
// See docs/evaluate-predict.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/checkpoint/checkpoint_model.h"
#include "engine/config/options.h"
#include "engine/data/text_dataset.h"
#include "engine/model/gpt.h"
#include "engine/state/stage_model.h"
#include "engine/state/training_state.h"
#include "engine/world/world.h"

namespace plexus::engine {

struct EvaluationResult {
  double loss_sum = 0;  // sum over every target token of its cross-entropy (nats)
  int64_t tokens = 0;   // target tokens: windows x seq_len
  int64_t windows = 0;
  double mean_loss() const { return tokens > 0 ? loss_sum / static_cast<double>(tokens) : 0; }
  double perplexity() const;  // exp(mean_loss())
};

// The checkpoint --evaluate reads (--checkpoint, the single file), checked as --sample checks it
// (checkpoint_model.h), and the options with --n-layer, --n-head, --n-embd and --seq-len set
// from its model. Throws CheckpointError (a missing, damaged or crafted file), or
// std::invalid_argument naming --checkpoint when it is empty or --checkpoint-dir is given.
ModelCheckpoint evaluation_checkpoint(TrainOptions* options);

// Sets every chunk of `model` to its part of `full` (Gpt's flat layout, full_num_params
// floats) through state.load_values. Every data rank calls it with the same values.
void load_full_parameters(const std::vector<float>& full, StageModel& model,
                          TrainingState& state);

// The whole validation split through the model (see above). Collective over the world: every
// rank calls it. Throws CommFailure and what the model throws.
EvaluationResult evaluate_validation(StageModel& model, const TextDataset& data, World& world,
                                     int data_degree, int data_rank, int global_rows, int seq);

// Rank 0's line: "evaluate: checkpoint PATH step N: validation loss L perplexity X over T tokens
// (W windows of S)".
std::string evaluation_line(const std::string& checkpoint, int64_t step,
                            const EvaluationResult& result, int seq);
// The --metrics-file object of an evaluation: checkpoint, step, placement, world_size,
// val_loss, perplexity, tokens, windows, seq_len.
std::string evaluation_json(const std::string& checkpoint, int64_t step,
                            const std::string& placement, int world_size,
                            const EvaluationResult& result, int seq);

}  // namespace plexus::engine
