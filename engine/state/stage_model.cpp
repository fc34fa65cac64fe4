#include "engine/state/stage_model.h"

#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <string>

#include "engine/world/world.h"

namespace plexus::engine {

StageLayout stage_layout(const Placement& placement, int rank, int virtual_stages) {
  StageLayout l;
  l.pipeline_degree = placement.degree('P');
  l.stage = placement.coordinate(rank, 'P');
  l.tensor_degree = placement.degree('T');
  l.tensor_rank = placement.coordinate(rank, 'T');
  l.virtual_stages = virtual_stages;
  return l;
}

ShardSpec chunk_spec(const GptConfig& config, const StageLayout& layout, int chunk) {
  const int P = layout.pipeline_degree;
  const std::vector<ChunkLayers> all = partition_layers(config.n_layer, P * layout.virtual_stages);
  const ChunkLayers& l = all.at(global_chunk(chunk, layout.stage, P));
  ShardSpec spec;
  spec.first_block = l.first_block;
  spec.last_block = l.last_block;
  spec.embed = l.embed;
  spec.head = l.head;
  spec.tp_degree = layout.tensor_degree;
  spec.tp_rank = layout.tensor_rank;
  return spec;
}

StageModel::StageModel(const GptConfig& config, const StageLayout& layout, TensorParallelOps ops,
                       plx_comm_t pipeline_group, StorageOptions storage, MemoryTracker* tracker)
    : config_(config), layout_(layout), pipeline_group_(pipeline_group) {
  for (int c = 0; c < layout.virtual_stages; ++c) {
    const ShardSpec spec = chunk_spec(config, layout, c);
    const ChunkLayers l{spec.first_block, spec.last_block, spec.embed, spec.head};
    chunks_.push_back(
        Chunk{l, std::make_unique<GptShard>(config, spec, ops, tracker, storage), {}, {}});
  }
  ops_.struct_size = sizeof(plx_stage_ops_t);
  ops_.abi_version = PLX_PLUGIN_ABI_VERSION;
  ops_.engine = this;
  ops_.num_chunks = layout.virtual_stages;
  ops_.forward = &StageModel::forward_stage;
  ops_.backward = &StageModel::backward_stage;
}

void StageModel::set_batch(const int32_t* tokens, const int32_t* targets, int rows, int seq,
                           int microbatches) {
  if (microbatches < 1 || rows % microbatches != 0) {
    throw std::invalid_argument("StageModel::set_batch: " + std::to_string(rows) +
                                " rows do not split into " + std::to_string(microbatches) +
                                " equal microbatches");
  }
  tokens_ = tokens, targets_ = targets;
  rows_ = rows, seq_ = seq, microbatches_ = microbatches;
  losses_.assign(microbatches, 0.0);
  for (Chunk& c : chunks_) {
    c.slot_of.assign(microbatches, -1);
    std::fill(c.slot_busy.begin(), c.slot_busy.end(), false);
  }
}

int StageModel::Chunk::take_slot(int microbatch) {
  if (slot_of[microbatch] >= 0) {
    throw std::logic_error("StageModel: forward of microbatch " + std::to_string(microbatch) +
                           " again before its backward");
  }
  size_t s = 0;
  while (s < slot_busy.size() && slot_busy[s]) ++s;
  if (s == slot_busy.size()) slot_busy.push_back(false);
  slot_busy[s] = true;
  slot_of[microbatch] = static_cast<int>(s);
  return static_cast<int>(s);
}

int StageModel::Chunk::slot(int microbatch) const {
  if (slot_of[microbatch] < 0) {
    throw std::logic_error("StageModel: backward of microbatch " + std::to_string(microbatch) +
                           " before its forward");
  }
  return slot_of[microbatch];
}

void StageModel::Chunk::give_slot(int microbatch) {
  slot_busy[slot_of[microbatch]] = false;
  slot_of[microbatch] = -1;
}

size_t StageModel::activation_count() const {
  return static_cast<size_t>(rows_ / microbatches_) * seq_ * config_.n_embd;
}

void StageModel::zero_grad() {
  for (Chunk& c : chunks_) c.shard->zero_grad();
}

void StageModel::set_activation_policy(const ActivationPolicy& policy) {
  for (Chunk& c : chunks_) c.shard->set_activation_policy(policy);
}

void StageModel::set_unit_hooks(int chunk, UnitHooks* hooks) {
  if (chunk < 0 || chunk >= num_chunks()) {
    throw std::invalid_argument("StageModel::set_unit_hooks: rank (p=" +
                                std::to_string(layout_.stage) + ", t=" +
                                std::to_string(layout_.tensor_rank) + "): chunk " +
                                std::to_string(chunk) + " not in 0.." +
                                std::to_string(num_chunks() - 1));
  }
  chunks_[chunk].shard->set_unit_hooks(hooks);
}

void StageModel::check_call(int chunk, int microbatch, const char* what) const {
  if (chunk < 0 || chunk >= num_chunks() || microbatch < 0 || microbatch >= microbatches_) {
    throw std::invalid_argument(std::string(what) + ": rank (p=" + std::to_string(layout_.stage) +
                                ", t=" + std::to_string(layout_.tensor_rank) + "): chunk " +
                                std::to_string(chunk) + " not in 0.." +
                                std::to_string(num_chunks() - 1) + " or microbatch " +
                                std::to_string(microbatch) + " not in 0.." +
                                std::to_string(microbatches_ - 1));
  }
}

void StageModel::run_local() {
  const int mb_rows = rows_ / microbatches_;
  const size_t mb_tokens = static_cast<size_t>(mb_rows) * seq_;
  const float scale = 1.0f / static_cast<float>(microbatches_);
  GptShard& model = *chunks_.front().shard;  // P = 1 and v = 1: one chunk, embed and head
  for (int m = 0; m < microbatches_; ++m) {
    losses_[m] = model.forward(0, tokens_ + m * mb_tokens, nullptr, targets_ + m * mb_tokens,
                               mb_rows, seq_, nullptr);
    model.backward(0, nullptr, nullptr, scale);
  }
}

const plx_stage_ops_t* StageModel::stage_ops() {
  ops_.num_microbatches = microbatches_;
  ops_.activation_count = activation_count();
  return &ops_;
}

double StageModel::mean_loss() const {
  if (!holds_head()) return 0.0;
  double sum = 0.0;
  for (double l : losses_) sum += l;
  return sum / microbatches_;
}

plx_result_t StageModel::forward_stage(void* engine, int chunk, int microbatch,
                                       const float* input, float* output, char* err,
                                       size_t err_len) {
  auto* self = static_cast<StageModel*>(engine);
  try {
    self->check_call(chunk, microbatch, "forward");
    Chunk& c = self->chunks_[chunk];
    const size_t mb_tokens = static_cast<size_t>(self->rows_ / self->microbatches_) * self->seq_;
    const size_t first = microbatch * mb_tokens;
    float loss = c.shard->forward(c.take_slot(microbatch), self->tokens_ + first, c.layers.embed ? nullptr : input,
                                  self->targets_ + first, self->rows_ / self->microbatches_,
                                  self->seq_, c.layers.head ? nullptr : output);
    if (c.layers.head) self->losses_[microbatch] = loss;
    return PLX_SUCCESS;
  } catch (const CommFailure& e) {
    std::snprintf(err, err_len, "forward of chunk %d, microbatch %d: %s", chunk, microbatch, e.what());
    return e.result();
  } catch (const std::invalid_argument& e) {
    std::snprintf(err, err_len, "forward of chunk %d, microbatch %d: %s", chunk, microbatch, e.what());
    return PLX_ERROR_INVALID_ARGUMENT;
  } catch (const std::exception& e) {
    std::snprintf(err, err_len, "forward of chunk %d, microbatch %d: %s", chunk, microbatch, e.what());
    return PLX_ERROR_INTERNAL;
  }
}

plx_result_t StageModel::backward_stage(void* engine, int chunk, int microbatch,
                                        const float* grad_output, float* grad_input, char* err,
                                        size_t err_len) {
  auto* self = static_cast<StageModel*>(engine);
  try {
    self->check_call(chunk, microbatch, "backward");
    Chunk& c = self->chunks_[chunk];
    c.shard->backward(c.slot(microbatch), c.layers.head ? nullptr : grad_output,
                      c.layers.embed ? nullptr : grad_input,
                      1.0f / static_cast<float>(self->microbatches_));
    c.give_slot(microbatch);
    return PLX_SUCCESS;
  } catch (const CommFailure& e) {
    std::snprintf(err, err_len, "backward of chunk %d, microbatch %d: %s", chunk, microbatch, e.what());
    return e.result();
  } catch (const std::invalid_argument& e) {
    std::snprintf(err, err_len, "backward of chunk %d, microbatch %d: %s", chunk, microbatch, e.what());
    return PLX_ERROR_INVALID_ARGUMENT;
  } catch (const std::exception& e) {
    std::snprintf(err, err_len, "backward of chunk %d, microbatch %d: %s", chunk, microbatch, e.what());
    return PLX_ERROR_INTERNAL;
  }
}

// One batch through global chunks 0, 1, ..., P*v-1: chunk g runs on stage g % P, takes its
// input from stage (g-1) % P and hands its output to stage (g+1) % P.
double StageModel::forward_only(const int32_t* tokens, const int32_t* targets, int rows, int seq) {
  const int P = layout_.pipeline_degree, p = layout_.stage;
  const size_t count = static_cast<size_t>(rows) * seq * config_.n_embd;
  std::vector<float> input(chunks_.front().layers.embed ? 0 : count), output(count);
  double loss = 0.0;
  auto check = [&](plx_result_t r, const char* what, int peer) {
    if (r != PLX_SUCCESS) {
      throw CommFailure(r, "validation: stage " + std::to_string(p) + ": " + what + " stage " +
                               std::to_string(peer) + ": " + plx_get_error_string(r) + ": " +
                               plx_get_last_error(pipeline_group_));
    }
  };
  for (int c = 0; c < num_chunks(); ++c) {
    const Chunk& chunk = chunks_[c];
    const int prev = (p + P - 1) % P, next = (p + 1) % P;
    if (!chunk.layers.embed) {
      input.resize(count);
      check(plx_recv(input.data(), count, PLX_FLOAT32, prev, pipeline_group_, nullptr),
            "receiving activations from", prev);
    }
    float l = chunk.shard->forward(0, tokens, chunk.layers.embed ? nullptr : input.data(), targets,
                                   rows, seq, chunk.layers.head ? nullptr : output.data());
    if (chunk.layers.head) {
      loss = l;
    } else {
      check(plx_send(output.data(), count, PLX_FLOAT32, next, pipeline_group_, nullptr),
            "sending activations to", next);
    }
  }
  return loss;
}

}  // namespace plexus::engine
