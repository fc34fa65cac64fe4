// evaluate.cpp - see evaluate.h.
#include "engine/train/evaluate.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "engine/model/gpt_shard.h"

namespace plexus::engine {

double EvaluationResult::perplexity() const { return std::exp(mean_loss()); }

ModelCheckpoint evaluation_checkpoint(TrainOptions* o) {
  if (o->checkpoint_path.empty()) {
    throw std::invalid_argument("--evaluate needs --checkpoint FILE (the single-file checkpoint "
                                "training writes); it is empty");
  }
  if (!o->checkpoint_dir.empty()) {
    throw std::invalid_argument(
        "--evaluate reads the single-file --checkpoint, not --checkpoint-dir '" +
        o->checkpoint_dir + "' (a run with --checkpoint-dir also writes --checkpoint at its end)");
  }
  ModelCheckpoint ck;
  try {
    ck = load_model_checkpoint(o->checkpoint_path);
  } catch (const CheckpointError& e) {
    throw CheckpointError(std::string("--checkpoint: ") + e.what());
  }
  o->model.n_layer = ck.config.n_layer;
  o->model.n_head = ck.config.n_head;
  o->model.n_embd = ck.config.n_embd;
  o->model.seq_len = ck.config.max_seq_len;
  if (ck.config.vocab_size != 256) {
    throw CheckpointError(fmt::format("checkpoint '{}': header field model.vocab_size is {}; "
                                      "valid: 256 (plexus-train's byte-level data)",
                                      o->checkpoint_path, ck.config.vocab_size));
  }
  return ck;
}

void load_full_parameters(const std::vector<float>& full, StageModel& model,
                          TrainingState& state) {
  std::vector<float> values;
  for (int c = 0; c < model.num_chunks(); ++c) {
    const GptShard& shard = model.chunk(c);
    values.assign(shard.num_params(), 0.0f);
    extract_from_full(shard.tensors(), full.data(), values.data());
    state.load_values(StateBuffer::kParams, c, values.data());
  }
}

EvaluationResult evaluate_validation(StageModel& model, const TextDataset& data, World& world,
                                     int data_degree, int data_rank, int global_rows, int seq) {
  const size_t windows = data.validation_windows();
  const int local_rows = global_rows / data_degree;
  const size_t batches = (windows + global_rows - 1) / global_rows;
  const bool owner = model.holds_head() && model.layout().tensor_rank == 0;
  std::vector<int32_t> tokens, targets;
  double sum = 0;
  for (size_t b = 0; b < batches; ++b) {
    const size_t first = b * global_rows + static_cast<size_t>(data_rank) * local_rows;
    const int rows = static_cast<int>(
        std::min<size_t>(local_rows, first < windows ? windows - first : 0));
    // An empty share still runs a forward pass (window 0, weight 0): every data rank runs as
    // many as the others.
    data.validation_windows(rows > 0 ? first : 0, std::max(rows, 1), tokens, targets);
    const double mean =
        model.forward_only(tokens.data(), targets.data(), std::max(rows, 1), seq);
    if (owner && rows > 0) sum += mean * static_cast<double>(rows) * seq;
  }
  EvaluationResult r;
  r.loss_sum = world.sum(owner ? sum : 0.0, "evaluation loss");
  r.windows = static_cast<int64_t>(windows);
  r.tokens = r.windows * seq;
  return r;
}

std::string evaluation_line(const std::string& checkpoint, int64_t step,
                            const EvaluationResult& r, int seq) {
  return fmt::format("evaluate: checkpoint {} step {}: validation loss {:.6f} perplexity {:.4f} "
                     "over {} tokens ({} windows of {})",
                     checkpoint, step, r.mean_loss(), r.perplexity(), r.tokens, r.windows, seq);
}

std::string evaluation_json(const std::string& checkpoint, int64_t step,
                            const std::string& placement, int world_size,
                            const EvaluationResult& r, int seq) {
  const nlohmann::json j = {{"checkpoint", checkpoint}, {"step", step},
                            {"placement", placement},   {"world_size", world_size},
                            {"val_loss", r.mean_loss()}, {"perplexity", r.perplexity()},
                            {"tokens", r.tokens},       {"windows", r.windows},
                            {"seq_len", seq}};
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace plexus::engine
