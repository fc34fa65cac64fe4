#include "engine/state/gradient_sync.h"

#include <string>

#include "engine/optim/grad_clip.h"
#include "engine/world/world.h"

namespace plexus::engine {

namespace {

void check(plx_result_t r, plx_comm_t comm, int rank, const std::string& what) {
  if (r != PLX_SUCCESS) {
    throw CommFailure(r, "rank " + std::to_string(rank) + ": " + what + ": " +
                             plx_get_error_string(r) + ": " + plx_get_last_error(comm));
  }
}

bool is_wte(const ShardTensor& t) { return t.name == "wte"; }

}  // namespace

void allreduce_tied_embedding(StageModel& model, plx_comm_t embedding, int world_rank) {
  if (embedding == nullptr) return;
  // The first stage's wte is in its first chunk (embed), the last stage's in its last (head).
  for (int c = 0; c < model.num_chunks(); ++c) {
    const ChunkLayers& l = model.layers(c);
    if (!l.embed && !l.head) continue;
    GptShard& shard = model.chunk(c);
    for (const ShardTensor& t : shard.tensors()) {
      if (!is_wte(t)) continue;
      size_t n = 1;
      for (int s : t.shape) n *= static_cast<size_t>(s);
      float* g = shard.grads() + t.offset;
      check(plx_allreduce(g, g, n, PLX_FLOAT32, PLX_SUM, embedding, nullptr), embedding,
            world_rank, "summing the tied embedding's gradient over the first and last stage");
    }
    return;  // one copy of wte per stage
  }
}

bool counts_toward_norm(const ShardTensor& t, const ChunkLayers& l, const StageLayout& layout) {
  if (t.replicated_in_tp && layout.tensor_rank != 0) return false;
  const bool duplicate_wte = l.head && !l.embed;  // the first stage counts it
  return !(duplicate_wte && is_wte(t));
}

double sum_norm_over_groups(double local, bool with_data, const StageLayout& layout,
                            const ParallelGroups& groups, int world_rank) {
  double sum = local;
  if (with_data) {
    int data_size = 1;
    check(plx_comm_size(groups.data(), &data_size), groups.data(), world_rank,
          "the data group's size");
    if (data_size > 1) {
      check(plx_allreduce(&sum, &sum, 1, PLX_FLOAT64, PLX_SUM, groups.data(), nullptr),
            groups.data(), world_rank, "summing the gradient norm over the data group");
    }
  }
  if (layout.tensor_degree > 1) {
    check(plx_allreduce(&sum, &sum, 1, PLX_FLOAT64, PLX_SUM, groups.tensor(), nullptr),
          groups.tensor(), world_rank, "summing the gradient norm over the tensor group");
  }
  if (layout.pipeline_degree > 1) {
    check(plx_allreduce(&sum, &sum, 1, PLX_FLOAT64, PLX_SUM, groups.pipeline(), nullptr),
          groups.pipeline(), world_rank, "summing the gradient norm over the pipeline group");
  }
  return sum;
}

double global_grad_sum_squares(const StageModel& model, const ParallelGroups& groups,
                               int world_rank) {
  double sum = 0.0;
  for (int c = 0; c < model.num_chunks(); ++c) {
    const GptShard& shard = model.chunk(c);
    for (const ShardTensor& t : shard.tensors()) {
      if (!counts_toward_norm(t, model.layers(c), model.layout())) continue;
      sum += grad_sum_squares(shard.grads() + t.offset, t.numel());
    }
  }
  return sum_norm_over_groups(sum, false, model.layout(), groups, world_rank);
}

void scale_grads(StageModel& model, float factor) {
  if (factor == 1.0f) return;
  for (int c = 0; c < model.num_chunks(); ++c) {
    GptShard& shard = model.chunk(c);
    scale_gradients(shard.grads(), shard.num_params(), factor);
  }
}

}  // namespace plexus::engine
