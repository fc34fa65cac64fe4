// replicated_state.cpp - whole gradients, moments and parameters on every replica (see
// replicated_state.h).
#include "engine/state/replicated_state.h"

#include <cstring>
#include <stdexcept>
#include <string>

#include "engine/state/gradient_sync.h"
#include "engine/state/shard_step.h"
#include "engine/world/world.h"

namespace plexus::engine {

ReplicatedState::ReplicatedState(StageModel& model, const ParallelGroups& groups,
                                 const ActivePlugins& plugins, bool offload_optimizer,
                                 int world_rank, MemoryTracker& tracker)
    : model_(model), groups_(groups), plugins_(plugins), offload_(offload_optimizer),
      world_rank_(world_rank), tracker_(tracker) {
  const MemoryPool pool = offload_ ? MemoryPool::kHost : MemoryPool::kDevice;
  for (int c = 0; c < model.num_chunks(); ++c) {
    const size_t n = model.chunk(c).num_params();
    Chunk chunk;
    chunk.whole = UnitPartition(model.chunk(c).units(), 1, 0);
    chunk.m = TrackedBuffer(n, pool, MemoryCategory::kOptimizer, true, &tracker);
    chunk.v = TrackedBuffer(n, pool, MemoryCategory::kOptimizer, true, &tracker);
    chunks_.push_back(std::move(chunk));
  }
}

void ReplicatedState::zero_grad() { model_.zero_grad(); }

void ReplicatedState::reduce_gradients() {
  allreduce_tied_embedding(model_, groups_.embedding(), world_rank_);
  for (int c = 0; c < model_.num_chunks(); ++c) {
    plx_grad_view_t view = PLX_GRAD_VIEW_INIT;
    view.grads = model_.chunk(c).grads();
    view.count = model_.chunk(c).num_params();
    for (const auto& p : plugins_) {
      if (!p->library.api().after_backward) continue;
      char err[512] = {};
      plx_result_t r = p->library.api().after_backward(p->state, &view, err, sizeof(err));
      if (r != PLX_SUCCESS) throw CommFailure(r, err);
    }
  }
}

double ReplicatedState::grad_sum_squares() {
  return global_grad_sum_squares(model_, groups_, world_rank_);
}

void ReplicatedState::scale_grads(float factor) { engine::scale_grads(model_, factor); }

void ReplicatedState::step(int64_t step, const AdamWConfig& config) {
  for (int c = 0; c < model_.num_chunks(); ++c) {
    GptShard& shard = model_.chunk(c);
    Chunk& chunk = chunks_[c];
    StepBuffers b;
    b.params = shard.params();
    b.grads = shard.grads();
    b.m = chunk.m.data();
    b.v = chunk.v.data();
    adamw_owned(shard.tensors(), chunk.whole, b, step, config, offload_, tracker_);
  }
}

ChunkValues ReplicatedState::full_values(StateBuffer which) {
  ChunkValues out;
  for (int c = 0; c < model_.num_chunks(); ++c) {
    out.chunks.push_back(which == StateBuffer::kParams  ? model_.chunk(c).params()
                         : which == StateBuffer::kAdamM ? chunks_[c].m.data()
                                                        : chunks_[c].v.data());
  }
  return out;
}

float* ReplicatedState::buffer(StateBuffer which, int chunk, const char* what) {
  if (chunk < 0 || chunk >= model_.num_chunks()) {
    throw std::invalid_argument("ReplicatedState::" + std::string(what) + ": rank " +
                                std::to_string(world_rank_) + ": chunk " +
                                std::to_string(chunk) + " not in 0.." +
                                std::to_string(model_.num_chunks() - 1));
  }
  return which == StateBuffer::kParams  ? model_.chunk(chunk).params()
         : which == StateBuffer::kAdamM ? chunks_[chunk].m.data()
                                        : chunks_[chunk].v.data();
}

void ReplicatedState::load_values(StateBuffer which, int chunk, const float* values) {
  float* to = buffer(which, chunk, "load_values");
  std::memcpy(to, values, model_.chunk(chunk).num_params() * sizeof(float));
}

std::vector<OwnedRange> ReplicatedState::owned_ranges(StateBuffer which, int chunk) {
  float* data = buffer(which, chunk, "owned_ranges");
  return {OwnedRange{0, model_.chunk(chunk).num_params(), data}};
}

void ReplicatedState::params_written() {}

}  // namespace plexus::engine
