// layer_partition.h - which transformer blocks each pipeline chunk holds.
//
// The model's blocks are cut into P*v contiguous chunks (P pipeline stages, v virtual stages per
// stage, as in Megatron-LM's interleaved schedule: stage p holds global chunks p, P+p, 2P+p, ...).
// Chunk 0 also does the embedding and the last chunk the final LayerNorm, the tied LM head and
// the loss. The cut balances an estimated cost: a block costs 1 and the embedding and the head
// each cost about one block, so the first and last chunks get fewer blocks when that evens the
// stages out (6 blocks on 4 chunks: 1, 2, 2, 1). Among cuts with the same largest cost, the one
// with the smallest spread between chunks (sum of squared costs) wins, then the one that puts
// blocks earlier. With these unit costs that cut has a closed form, computed in O(K) time and
// memory (a million blocks at once; layer_partition.cpp).
#pragma once

#include <vector>

namespace plexus::engine {

struct ChunkLayers {
  int first_block = 0;  // blocks [first_block, last_block)
  int last_block = 0;
  bool embed = false;   // global chunk 0
  bool head = false;    // the last global chunk
};

// Estimated costs, in blocks.
constexpr int kBlockCost = 1;
constexpr int kEmbedCost = 1;
constexpr int kHeadCost = 1;

// The chunks of a model of n_blocks blocks, in global chunk order. Throws PlacementError when
// num_chunks < 1 or n_blocks < num_chunks ("layers fewer than stages", naming both numbers).
std::vector<ChunkLayers> partition_layers(int n_blocks, int num_chunks);

// Global chunk index of this stage's local chunk c: c * pipeline_degree + stage.
inline int global_chunk(int local_chunk, int stage, int pipeline_degree) {
  return local_chunk * pipeline_degree + stage;
}

}  // namespace plexus::engine
