#include "engine/placement/layer_partition.h"

#include <string>

#include "engine/placement/placement.h"

namespace plexus::engine {

// The closed form below relies on unit costs: a chunk of b blocks costs b, plus 1 for the
// embedding (chunk 0) and 1 for the head (the last chunk).
static_assert(kBlockCost == 1 && kEmbedCost == 1 && kHeadCost == 1,
              "partition_layers' closed form assumes a cost of 1 for a block, the embedding and "
              "the head");

// With unit costs the total cost is T = n_blocks + 2, and the integer costs summing to T with
// the smallest largest cost and the smallest sum of squares are the even split: r = T mod K
// chunks cost q + 1 and the others q = floor(T / K). It is always allowed: q >= 1 because
// n_blocks >= K, and when q == 1 the two end chunks (which need cost 2 for a block) take two
// of the r >= 2 costs q + 1. Among even splits the evenest-cut tie-break (the last chunk as
// small as possible, then the one before, ...) gives the costs q + 1 to the end chunks that
// need them and then to the earliest chunks. O(K): a million blocks cut at once.
std::vector<ChunkLayers> partition_layers(int n_blocks, int num_chunks) {
  if (num_chunks < 1) {
    throw PlacementError("pipeline chunks " + std::to_string(num_chunks) +
                         " < 1 (pipeline degree times virtual stages must be at least 1)");
  }
  if (n_blocks < num_chunks) {
    throw PlacementError("layers fewer than stages: " + std::to_string(n_blocks) +
                         " transformer blocks cannot fill " + std::to_string(num_chunks) +
                         " pipeline chunks (pipeline degree x virtual stages); each chunk needs "
                         "at least one block");
  }
  const int K = num_chunks;
  if (K == 1) return {ChunkLayers{0, n_blocks, true, true}};
  const long long total = static_cast<long long>(n_blocks) + kEmbedCost + kHeadCost;
  const long long q = total / K;
  long long raised = total % K;  // chunks that cost q + 1
  std::vector<long long> cost(K, q);
  for (int end : {K - 1, 0}) {  // an end chunk needs cost 2 (one block and its extra)
    if (cost[end] < 2) cost[end] = 2, --raised;
  }
  for (int k = 0; k < K && raised > 0; ++k) {
    if (cost[k] == q) cost[k] = q + 1, --raised;
  }
  std::vector<ChunkLayers> chunks(K);
  int next = 0;
  for (int k = 0; k < K; ++k) {
    const long long blocks = cost[k] - (k == 0 ? kEmbedCost : 0) - (k == K - 1 ? kHeadCost : 0);
    chunks[k] = ChunkLayers{next, next + static_cast<int>(blocks), k == 0, k == K - 1};
    next = chunks[k].last_block;
  }
  return chunks;
}

}  // namespace plexus::engine
