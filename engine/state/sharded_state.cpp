// sharded_state.cpp - ZeRO stages 1-3 (see sharded_state.h).
#include "engine/state/sharded_state.h"

#include <cstring>
#include <stdexcept>
#include <string>

#include "engine/optim/grad_clip.h"
#include "engine/state/gradient_sync.h"
#include "engine/state/shard_step.h"
#include "engine/world/world.h"

namespace plexus::engine {

namespace {

void commit_whole(TrackedBuffer& buffer) {
  if (buffer.committed() != buffer.size()) buffer.commit_all();
}

}  // namespace

ShardedState::ShardedState(const plx_memory_plan_t& plan, const ShardingHooks& hooks,
                           StageModel& model, const ParallelGroups& groups, int world_rank,
                           int data_degree, int data_rank, uint64_t seed, MemoryTracker& tracker)
    : plan_(plan), model_(model), groups_(groups), world_rank_(world_rank), tracker_(tracker),
      collectives_(hooks, data_degree, data_rank, world_rank, tracker) {
  const int stage = plan_.zero_stage;
  if (stage < 1 || stage > 3) {
    throw std::logic_error("ShardedState: rank " + std::to_string(world_rank) + ": zero_stage " +
                           std::to_string(stage) + " not in 1..3");
  }
  const MemoryPool moments = plan_.offload_optimizer ? MemoryPool::kHost : MemoryPool::kDevice;
  chunks_.resize(model.num_chunks());
  for (int c = 0; c < model.num_chunks(); ++c) {
    GptShard& shard = model.chunk(c);
    Chunk& chunk = chunks_[c];
    chunk.partition = UnitPartition(shard.units(), data_degree, data_rank);
    const size_t n = chunk.partition.shard_elements();
    chunk.m = TrackedBuffer(n, moments, MemoryCategory::kOptimizer, true, &tracker);
    chunk.v = TrackedBuffer(n, moments, MemoryCategory::kOptimizer, true, &tracker);
    if (stage < 3) {  // the parameters stay whole
      commit_whole(shard.param_storage());
      shard.init_parameters(seed);
    }
    if (stage == 1) {  // and the gradient too
      commit_whole(shard.grad_storage());
      continue;
    }
    shard.grad_storage().release_all();  // nothing unless the model was built with it committed
    chunk.grad_shard = TrackedBuffer(n, MemoryPool::kDevice, MemoryCategory::kGradients, true,
                                     &tracker);
    if (stage == 3) {
      chunk.param_shard = TrackedBuffer(n, MemoryPool::kDevice, MemoryCategory::kParameters,
                                        false, &tracker);
    }
    ZeroHookSettings settings;
    settings.stage = stage;
    settings.param_persistence_threshold = plan_.param_persistence_threshold;
    settings.prefetch_units = plan_.prefetch_units;
    chunk.hooks = std::make_unique<ZeroUnitHooks>(shard, chunk.partition, collectives_, settings,
                                                  chunk.grad_shard.data(),
                                                  chunk.param_shard.data());
    if (stage == 3) init_sharded_params(c, seed);
    model.set_unit_hooks(c, chunk.hooks.get());
  }
}

// DeepSpeed's zero.Init: unit by unit, commit the unit's range, write its initial values, keep
// this rank's part in the shard and release the range, unless the unit is persistent (it stays
// whole, with no shard copy). The parameters never exceed the shard, the persistent units and
// one unit, and every replica computes the same values, so no communication is needed.
void ShardedState::init_sharded_params(int c, uint64_t seed) {
  GptShard& shard = model_.chunk(c);
  Chunk& chunk = chunks_[c];
  TrackedBuffer& params = shard.param_storage();
  for (int u = 0; u < chunk.partition.num_units(); ++u) {
    const UnitSlice& s = chunk.partition.slice(u);
    params.commit(s.unit_offset, s.unit_count);
    shard.init_unit_parameters(seed, u);
    if (chunk.hooks->persistent(u)) continue;
    chunk.param_shard.commit(s.shard_offset, s.part);  // zero-filled: the padding stays 0
    std::memcpy(chunk.param_shard.data() + s.shard_offset, shard.params() + s.full_begin(),
                s.owned * sizeof(float));
    params.release(s.unit_offset, s.unit_count);
  }
}

ShardedState::~ShardedState() {
  for (int c = 0; c < model_.num_chunks(); ++c) model_.set_unit_hooks(c, nullptr);
}

void ShardedState::check_chunk(int chunk, const char* what) const {
  if (chunk < 0 || chunk >= static_cast<int>(chunks_.size())) {
    throw std::invalid_argument("ShardedState::" + std::string(what) + ": rank " +
                                std::to_string(world_rank_) + ": chunk " +
                                std::to_string(chunk) + " not in 0.." +
                                std::to_string(chunks_.size() - 1));
  }
}

void ShardedState::drain() {
  for (Chunk& chunk : chunks_) {
    if (chunk.hooks) chunk.hooks->drain();
  }
}

float* ShardedState::owned_grads(int c, size_t full_index, size_t shard_index) {
  return plan_.zero_stage == 1 ? model_.chunk(c).grads() + full_index
                               : chunks_[c].grad_shard.data() + shard_index;
}

void ShardedState::zero_grad() {
  drain();
  for (int c = 0; c < model_.num_chunks(); ++c) {
    if (plan_.zero_stage == 1) {
      model_.chunk(c).zero_grad();
    } else {
      chunks_[c].grad_shard.fill(0.0f);
    }
  }
}

void ShardedState::reduce_gradients() {
  drain();
  if (plan_.zero_stage == 1) {
    for (int c = 0; c < model_.num_chunks(); ++c) {
      for (const UnitSlice& s : chunks_[c].partition.slices()) {
        collectives_.reduce_scatter_in_place(model_.chunk(c).grads() + s.unit_offset, s);
      }
    }
  }
  sum_tied_embedding();
}

// The wte unit's part, summed over the first and the last stage (Megatron-LM's embedding group).
void ShardedState::sum_tied_embedding() {
  plx_comm_t embedding = groups_.embedding();
  if (embedding == nullptr) return;
  for (int c = 0; c < model_.num_chunks(); ++c) {
    const ChunkLayers& l = model_.layers(c);
    if (!l.embed && !l.head) continue;
    const std::vector<ParamUnit>& units = model_.chunk(c).units();
    const int wte = l.embed ? 0 : static_cast<int>(units.size()) - 1;
    if (units.at(wte).name != "wte") {
      throw std::logic_error("ShardedState: rank " + std::to_string(world_rank_) + ": unit " +
                             std::to_string(wte) + " of chunk " + std::to_string(c) + " is '" +
                             units[wte].name + "', expected 'wte'");
    }
    const UnitSlice& s = chunks_[c].partition.slice(wte);
    float* g = owned_grads(c, s.full_begin(), s.shard_offset);
    const plx_result_t r = plx_allreduce(g, g, s.owned, PLX_FLOAT32, PLX_SUM, embedding, nullptr);
    if (r != PLX_SUCCESS) {
      throw CommFailure(r, "rank " + std::to_string(world_rank_) +
                               ": summing the tied embedding's gradient part over the first "
                               "and last stage: " +
                               plx_get_error_string(r) + ": " + plx_get_last_error(embedding));
    }
    return;  // one copy of wte per stage
  }
}

double ShardedState::grad_sum_squares() {
  double sum = 0.0;
  for (int c = 0; c < model_.num_chunks(); ++c) {
    const ChunkLayers& l = model_.layers(c);
    for_each_owned_piece(model_.chunk(c).tensors(), chunks_[c].partition,
                         [&](int, const ShardTensor& t, size_t full, size_t shard, size_t n) {
                           if (!counts_toward_norm(t, l, model_.layout())) return;
                           sum += engine::grad_sum_squares(owned_grads(c, full, shard), n);
                         });
  }
  return sum_norm_over_groups(sum, true, model_.layout(), groups_, world_rank_);
}

void ShardedState::scale_grads(float factor) {
  if (factor == 1.0f) return;
  for (int c = 0; c < model_.num_chunks(); ++c) {
    for (const UnitSlice& s : chunks_[c].partition.slices()) {
      scale_gradients(owned_grads(c, s.full_begin(), s.shard_offset), s.owned, factor);
    }
  }
}

void ShardedState::step(int64_t step, const AdamWConfig& config) {
  drain();
  const bool stage3 = plan_.zero_stage == 3;
  for (int c = 0; c < model_.num_chunks(); ++c) {
    GptShard& shard = model_.chunk(c);
    Chunk& chunk = chunks_[c];
    StepBuffers b;
    b.params = stage3 ? chunk.param_shard.data() : shard.params();
    b.params_in_shard = stage3;
    if (stage3) {
      b.whole_params = shard.params();
      b.whole_units = &chunk.hooks->persistent_units();
    }
    b.grads = plan_.zero_stage == 1 ? shard.grads() : chunk.grad_shard.data();
    b.grads_in_shard = plan_.zero_stage > 1;
    b.m = chunk.m.data();
    b.v = chunk.v.data();
    adamw_owned(shard.tensors(), chunk.partition, b, step, config, plan_.offload_optimizer != 0,
                tracker_);
    rebuild_params(c);
  }
}

// Stages 1, 2: every unit all-gathered in place; stage 3: the persistent units.
void ShardedState::rebuild_params(int c) {
  if (plan_.zero_stage == 3) {
    chunks_[c].hooks->refresh_persistent();
    return;
  }
  GptShard& shard = model_.chunk(c);
  for (const UnitSlice& s : chunks_[c].partition.slices()) {
    collectives_.all_gather(shard.params() + s.full_begin(), s, shard.params() + s.unit_offset);
  }
}

ChunkValues ShardedState::full_values(StateBuffer which) {
  drain();
  ChunkValues out;
  const bool stage3 = plan_.zero_stage == 3;
  for (int c = 0; c < model_.num_chunks(); ++c) {
    GptShard& shard = model_.chunk(c);
    Chunk& chunk = chunks_[c];
    if (which == StateBuffer::kParams && !stage3) {
      out.chunks.push_back(shard.params());  // whole already
      continue;
    }
    TrackedBuffer whole(shard.num_params(), MemoryPool::kDevice, MemoryCategory::kCommunication,
                        true, &tracker_);
    const float* parts = which == StateBuffer::kParams  ? chunk.param_shard.data()
                         : which == StateBuffer::kAdamM ? chunk.m.data()
                                                        : chunk.v.data();
    for (int u = 0; u < chunk.partition.num_units(); ++u) {
      const UnitSlice& s = chunk.partition.slice(u);
      if (which == StateBuffer::kParams && chunk.hooks->persistent(u)) {
        std::memcpy(whole.data() + s.unit_offset, shard.params() + s.unit_offset,
                    s.unit_count * sizeof(float));
      } else {
        collectives_.all_gather(parts + s.shard_offset, s, whole.data() + s.unit_offset);
      }
    }
    out.chunks.push_back(whole.data());
    out.owned.push_back(std::move(whole));
  }
  return out;
}

std::vector<OwnedRange> ShardedState::owned_ranges(StateBuffer which, int c) {
  check_chunk(c, "owned_ranges");
  GptShard& shard = model_.chunk(c);
  Chunk& chunk = chunks_[c];
  float* parts = which == StateBuffer::kParams  ? chunk.param_shard.data()
                 : which == StateBuffer::kAdamM ? chunk.m.data()
                                                : chunk.v.data();
  std::vector<OwnedRange> out;
  for (int u = 0; u < chunk.partition.num_units(); ++u) {
    const UnitSlice& s = chunk.partition.slice(u);
    if (s.owned == 0) continue;
    const bool in_model = which == StateBuffer::kParams &&
                          (plan_.zero_stage < 3 || chunk.hooks->persistent(u));
    out.push_back({s.full_begin(), s.owned,
                   in_model ? shard.params() + s.full_begin() : parts + s.shard_offset});
  }
  return out;
}

void ShardedState::params_written() {
  drain();
  for (int c = 0; c < model_.num_chunks(); ++c) rebuild_params(c);
}

void ShardedState::load_values(StateBuffer which, int c, const float* values) {
  check_chunk(c, "load_values");
  drain();
  GptShard& shard = model_.chunk(c);
  Chunk& chunk = chunks_[c];
  if (which == StateBuffer::kParams && plan_.zero_stage < 3) {
    std::memcpy(shard.params(), values, shard.num_params() * sizeof(float));
    return;
  }
  float* parts = which == StateBuffer::kParams  ? chunk.param_shard.data()
                 : which == StateBuffer::kAdamM ? chunk.m.data()
                                                : chunk.v.data();
  for (int u = 0; u < chunk.partition.num_units(); ++u) {
    const UnitSlice& s = chunk.partition.slice(u);
    if (which == StateBuffer::kParams && chunk.hooks->persistent(u)) {
      std::memcpy(shard.params() + s.unit_offset, values + s.unit_offset,
                  s.unit_count * sizeof(float));
    } else {
      std::memcpy(parts + s.shard_offset, values + s.full_begin(), s.owned * sizeof(float));
    }
  }
}

}  // namespace plexus::engine
