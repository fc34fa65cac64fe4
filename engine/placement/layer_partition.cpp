#include "engine/placement/layer_partition.h"

#include <algorithm>
#include <climits>
#include <string>

#include "engine/placement/placement.h"

namespace plexus::engine {

namespace {

// Cost of global chunk k (of num_chunks) holding `blocks` blocks.
long long chunk_cost(int k, int num_chunks, int blocks) {
  return static_cast<long long>(blocks) * kBlockCost + (k == 0 ? kEmbedCost : 0) +
         (k == num_chunks - 1 ? kHeadCost : 0);
}

constexpr long long kNone = LLONG_MAX;

}  // namespace

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
  const int K = num_chunks, N = n_blocks;
  // Pass 1: the smallest possible largest chunk cost. worst[k][i]: first i blocks in k chunks.
  std::vector<std::vector<long long>> worst(K + 1, std::vector<long long>(N + 1, kNone));
  worst[0][0] = 0;
  for (int k = 1; k <= K; ++k) {
    for (int i = k; i <= N - (K - k); ++i) {
      for (int j = k - 1; j < i; ++j) {
        if (worst[k - 1][j] == kNone) continue;
        worst[k][i] = std::min(worst[k][i], std::max(worst[k - 1][j], chunk_cost(k - 1, K, i - j)));
      }
    }
  }
  const long long cap = worst[K][N];
  // Pass 2: under that cap, the smallest sum of squared costs (the evenest cut).
  std::vector<std::vector<long long>> squares(K + 1, std::vector<long long>(N + 1, kNone));
  std::vector<std::vector<int>> from(K + 1, std::vector<int>(N + 1, -1));
  squares[0][0] = 0;
  for (int k = 1; k <= K; ++k) {
    for (int i = k; i <= N - (K - k); ++i) {
      // Larger j first: on a tie the later chunk stays smaller, so blocks go earlier.
      for (int j = i - 1; j >= k - 1; --j) {
        const long long c = chunk_cost(k - 1, K, i - j);
        if (squares[k - 1][j] == kNone || c > cap) continue;
        const long long s = squares[k - 1][j] + c * c;
        if (s < squares[k][i]) {
          squares[k][i] = s;
          from[k][i] = j;
        }
      }
    }
  }
  std::vector<ChunkLayers> chunks(K);
  for (int k = K, i = N; k >= 1; --k) {
    const int j = from[k][i];
    chunks[k - 1] = ChunkLayers{j, i, k == 1, k == K};
    i = j;
  }
  return chunks;
}

}  // namespace plexus::engine
