#include "engine/state/param_gather.h"

#include <algorithm>
#include <string>

#include "engine/world/world.h"

namespace plexus::engine {

namespace {

size_t shard_size(const std::vector<ShardTensor>& tensors) {
  size_t n = 0;
  for (const ShardTensor& t : tensors) n = std::max(n, t.offset + t.numel());
  return n;
}

}  // namespace

std::vector<float> gather_full_model(const GptConfig& config, const Placement& placement,
                                     const StageModel& model,
                                     const std::vector<const float*>& values, plx_comm_t world,
                                     int world_rank) {
  const int world_size = placement.degree('D') * placement.degree('P') * placement.degree('T');
  const int v = model.num_chunks();
  if (world_rank != 0) {
    if (placement.coordinate(world_rank, 'D') != 0) return {};
    for (int c = 0; c < v; ++c) {
      plx_result_t r = plx_send(values[c], model.chunk(c).num_params(), PLX_FLOAT32, 0, world,
                                nullptr);
      if (r != PLX_SUCCESS) {
        throw CommFailure(r, "rank " + std::to_string(world_rank) + ": sending chunk " +
                                 std::to_string(c) + " of the parameters to rank 0: " +
                                 plx_get_error_string(r) + ": " + plx_get_last_error(world));
      }
    }
    return {};
  }
  std::vector<float> full(full_num_params(config), 0.0f);
  for (int c = 0; c < v; ++c) scatter_into_full(model.chunk(c).tensors(), values[c], full.data());
  std::vector<float> incoming;
  for (int rank = 1; rank < world_size; ++rank) {
    if (placement.coordinate(rank, 'D') != 0) continue;
    const StageLayout layout = stage_layout(placement, rank, v);
    for (int c = 0; c < v; ++c) {
      const std::vector<ShardTensor> tensors = shard_tensors(config, chunk_spec(config, layout, c));
      incoming.resize(shard_size(tensors));
      plx_result_t r = plx_recv(incoming.data(), incoming.size(), PLX_FLOAT32, rank, world,
                                nullptr);
      if (r != PLX_SUCCESS) {
        throw CommFailure(r, "rank 0: receiving chunk " + std::to_string(c) + " of rank " +
                                 std::to_string(rank) + "'s parameters: " +
                                 plx_get_error_string(r) + ": " + plx_get_last_error(world));
      }
      scatter_into_full(tensors, incoming.data(), full.data());
    }
  }
  return full;
}

}  // namespace plexus::engine
