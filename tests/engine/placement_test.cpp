#include "engine/placement/placement.h"

#include <algorithm>

#include "engine/placement/layer_partition.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace plexus::engine {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string parse_error(const std::string& text) {
  try {
    parse_placement(text);
  } catch (const PlacementError& e) {
    return e.what();
  }
  return "no error";
}

std::string resolve_error(const std::string& text, int world, int p = 0, int t = 0) {
  try {
    Placement pl = parse_placement(text);
    resolve_placement(pl, world, p, t);
  } catch (const PlacementError& e) {
    return e.what();
  }
  return "no error";
}

TEST(Placement, ParsesAxesDegreesAndPlugins) {
  Placement p = parse_placement("D2P2T2+zero1+offload(activations,host)");
  ASSERT_EQ(p.axes.size(), 3u);
  EXPECT_EQ(p.axes[0].letter, 'D');
  EXPECT_EQ(p.axes[0].degree, 2);
  EXPECT_EQ(p.axes[1].letter, 'P');
  EXPECT_EQ(p.axes[2].letter, 'T');
  ASSERT_EQ(p.plugins.size(), 2u);
  EXPECT_EQ(p.plugins[0].name, "zero1");
  EXPECT_TRUE(p.plugins[0].args.empty());
  EXPECT_EQ(p.plugins[1].name, "offload");
  EXPECT_THAT(p.plugins[1].args, ElementsAre("activations", "host"));
}

TEST(Placement, ClusterAndSpreadExpand) {
  Placement c = parse_placement("cluster");
  ASSERT_EQ(c.axes.size(), 3u);
  EXPECT_EQ(std::string({c.axes[0].letter, c.axes[1].letter, c.axes[2].letter}), "DPT");
  EXPECT_FALSE(c.axes[0].written);
  Placement s = parse_placement("spread");
  EXPECT_EQ(std::string({s.axes[0].letter, s.axes[1].letter, s.axes[2].letter}), "TPD");
}

TEST(Placement, DegreeOfDInferredFromWorldSize) {
  Placement p = parse_placement("D");
  resolve_placement(p, 4, 0, 0);
  EXPECT_EQ(p.degree('D'), 4);
  EXPECT_EQ(p.degree('P'), 1);
  Placement c = parse_placement("cluster");
  resolve_placement(c, 8, 2, 2);
  EXPECT_EQ(c.degree('D'), 2);
  EXPECT_EQ(c.degree('P'), 2);
  EXPECT_EQ(c.degree('T'), 2);
}

TEST(Placement, MissingDAxisIsAdded) {
  Placement p = parse_placement("T2");
  resolve_placement(p, 2, 0, 0);
  EXPECT_EQ(p.degree('D'), 1);
  EXPECT_EQ(p.degree('T'), 2);
}

TEST(Placement, RightmostLetterVariesFastest) {
  Placement p = parse_placement("D2P2T2");
  resolve_placement(p, 8, 0, 0);
  // rank = d*4 + p*2 + t
  for (int rank = 0; rank < 8; ++rank) {
    EXPECT_EQ(p.coordinate(rank, 'D'), rank / 4) << "rank " << rank;
    EXPECT_EQ(p.coordinate(rank, 'P'), (rank / 2) % 2) << "rank " << rank;
    EXPECT_EQ(p.coordinate(rank, 'T'), rank % 2) << "rank " << rank;
  }
  EXPECT_THAT(p.group_ranks(5, 'D'), ElementsAre(1, 5));
  EXPECT_THAT(p.group_ranks(5, 'P'), ElementsAre(5, 7));
  EXPECT_THAT(p.group_ranks(5, 'T'), ElementsAre(4, 5));
  Placement s = parse_placement("spread");  // TPD: D fastest
  resolve_placement(s, 8, 2, 2);
  EXPECT_EQ(s.coordinate(1, 'D'), 1);
  EXPECT_EQ(s.coordinate(1, 'T'), 0);
  EXPECT_EQ(s.coordinate(4, 'T'), 1);
}

TEST(Placement, UnknownLetterNamesCharacterAndPosition) {
  std::string e = parse_error("D2X2");
  EXPECT_THAT(e, HasSubstr("unexpected 'X' at position 3"));
  EXPECT_THAT(e, HasSubstr("D, P or T"));
  EXPECT_THAT(parse_error("Q4"), HasSubstr("unexpected 'Q' at position 1"));
  EXPECT_THAT(parse_error(""), HasSubstr("unexpected end of string"));
}

TEST(Placement, RepeatedAxisZeroDegreeAndBadPluginSyntax) {
  EXPECT_THAT(parse_error("D2D2"), HasSubstr("D is repeated"));
  EXPECT_THAT(parse_error("D0"), HasSubstr("a degree of at least 1"));
  EXPECT_THAT(parse_error("D2+"), HasSubstr("a plugin name"));
  EXPECT_THAT(parse_error("D2+zero1("), HasSubstr("an argument for plugin 'zero1'"));
  EXPECT_THAT(parse_error("D2+offload(a,b"), HasSubstr("closing the arguments"));
  EXPECT_THAT(parse_error("D2 "), HasSubstr("unexpected ' ' at position 3"));
}

TEST(Placement, RepeatedPluginsAreRefusedNamingBoth) {
  EXPECT_EQ(parse_error("D4+ckpt+ckpt"),
            "placement 'D4+ckpt+ckpt': plugin 'ckpt' at position 9 is given twice (also at "
            "position 4); give it once");
  EXPECT_THAT(parse_error("D+ckpt(every=2)+ckpt(every=3)"),
              HasSubstr("plugin 'ckpt' at position 17 is given twice"));
  EXPECT_EQ(parse_error("D4+zero1+zero2"),
            "placement 'D4+zero1+zero2': plugin 'zero2' at position 10 repeats 'zero1' (position "
            "4): both are 'zero'; give one of them");
  EXPECT_THAT(parse_error("D2+zero3(persist=0)+ckpt+offload(activations)+zero1"),
              HasSubstr("plugin 'zero1' at position 47 repeats 'zero3'"));
  // Different plugins, and a name that is only digits, are fine.
  EXPECT_EQ(parse_error("D2+zero3(persist=0)+ckpt+offload(activations,optimizer)"), "no error");
  EXPECT_EQ(parse_error("D+1+2"), "no error");
}

TEST(Placement, DegreesThatDoNotMultiplyToWorldSize) {
  EXPECT_THAT(resolve_error("D3", 4), HasSubstr("do not multiply to the world size 4"));
  EXPECT_THAT(resolve_error("D2P2", 6), HasSubstr("D2*P2 = 4"));
  EXPECT_THAT(resolve_error("DP", 6, 4), HasSubstr("not divisible by |P|*|T| = 4"));
  EXPECT_EQ(resolve_error("DP", 6, 3), "no error");
  // P is absent from the string, so --pipeline-degree does not apply and D takes the world.
  EXPECT_EQ(resolve_error("D", 6, 4), "no error");
}

}  // namespace
}  // namespace plexus::engine

namespace plexus::engine {
namespace {

std::vector<std::vector<int>> cut(int blocks, int chunks) {
  std::vector<std::vector<int>> out;
  for (const ChunkLayers& c : partition_layers(blocks, chunks)) {
    out.push_back({c.first_block, c.last_block, c.embed ? 1 : 0, c.head ? 1 : 0});
  }
  return out;
}

TEST(LayerPartition, OneChunkHoldsEverything) {
  EXPECT_EQ(cut(4, 1), (std::vector<std::vector<int>>{{0, 4, 1, 1}}));
}

TEST(LayerPartition, EndsGetFewerBlocksWhenThatBalancesTheCost) {
  // 6 blocks on 4 chunks: costs (1+1, 2, 2, 1+1) = 2 each.
  EXPECT_EQ(cut(6, 4), (std::vector<std::vector<int>>{
                           {0, 1, 1, 0}, {1, 3, 0, 0}, {3, 5, 0, 0}, {5, 6, 0, 1}}));
  // 6 blocks on 2 chunks: 3 + 3 (costs 4, 4).
  EXPECT_EQ(cut(6, 2), (std::vector<std::vector<int>>{{0, 3, 1, 0}, {3, 6, 0, 1}}));
  // 8 blocks on 3 chunks: 2, 4, 2 -> costs 3, 4, 3 (max 4; 3,3,2 would cost 4,3,3 too, but
  // the sum of squares picks the evenest and the tie puts blocks early).
  auto c = cut(8, 3);
  int total = 0;
  for (const auto& chunk : c) total += chunk[1] - chunk[0];
  EXPECT_EQ(total, 8);
  EXPECT_EQ(c.front()[0], 0);
  EXPECT_EQ(c.back()[1], 8);
}

// The smallest largest chunk cost over every cut, by brute force (block 1, embed 1, head 1).
int best_largest_cost(int blocks, int chunks, int k = 0, int used = 0) {
  if (k == chunks - 1) return blocks - used + (k == 0) + 1;
  int best = 1 << 30;
  for (int n = 1; used + n <= blocks - (chunks - 1 - k); ++n) {
    best = std::min(best, std::max(n + (k == 0), best_largest_cost(blocks, chunks, k + 1, used + n)));
  }
  return best;
}

TEST(LayerPartition, ChunksAreContiguousAndNonEmpty) {
  for (int blocks = 1; blocks <= 12; ++blocks) {
    for (int chunks = 1; chunks <= blocks; ++chunks) {
      std::vector<ChunkLayers> c = partition_layers(blocks, chunks);
      ASSERT_EQ(static_cast<int>(c.size()), chunks);
      int next = 0, worst = 0;
      for (int k = 0; k < chunks; ++k) {
        EXPECT_EQ(c[k].first_block, next) << blocks << " blocks, chunk " << k;
        EXPECT_GT(c[k].last_block, c[k].first_block) << blocks << " blocks, chunk " << k;
        EXPECT_EQ(c[k].embed, k == 0);
        EXPECT_EQ(c[k].head, k == chunks - 1);
        next = c[k].last_block;
        worst = std::max(worst, c[k].last_block - c[k].first_block + (k == 0) + (k == chunks - 1));
      }
      EXPECT_EQ(next, blocks);
      EXPECT_EQ(worst, best_largest_cost(blocks, chunks)) << blocks << " blocks, " << chunks;
    }
  }
}

// The cut by exhaustive dynamic programming (O(K*N^2), the partition's earlier code): the
// smallest largest cost, then under it the smallest sum of squared costs, ties to the cut whose
// last chunk is smallest (then the one before, ...).
std::vector<std::vector<int>> reference_cut(int N, int K) {
  const long long none = 1LL << 60;
  auto cost = [&](int k, int blocks) { return blocks + (k == 0) + (k == K - 1); };
  std::vector<std::vector<long long>> worst(K + 1, std::vector<long long>(N + 1, none));
  worst[0][0] = 0;
  for (int k = 1; k <= K; ++k) {
    for (int i = k; i <= N - (K - k); ++i) {
      for (int j = k - 1; j < i; ++j) {
        if (worst[k - 1][j] == none) continue;
        worst[k][i] = std::min(worst[k][i], std::max<long long>(worst[k - 1][j], cost(k - 1, i - j)));
      }
    }
  }
  std::vector<std::vector<long long>> squares(K + 1, std::vector<long long>(N + 1, none));
  std::vector<std::vector<int>> from(K + 1, std::vector<int>(N + 1, -1));
  squares[0][0] = 0;
  for (int k = 1; k <= K; ++k) {
    for (int i = k; i <= N - (K - k); ++i) {
      for (int j = i - 1; j >= k - 1; --j) {
        const long long c = cost(k - 1, i - j);
        if (squares[k - 1][j] == none || c > worst[K][N]) continue;
        if (squares[k - 1][j] + c * c < squares[k][i]) {
          squares[k][i] = squares[k - 1][j] + c * c;
          from[k][i] = j;
        }
      }
    }
  }
  std::vector<std::vector<int>> out(K);
  for (int k = K, i = N; k >= 1; i = from[k][i], --k) {
    out[k - 1] = {from[k][i], i, k == 1 ? 1 : 0, k == K ? 1 : 0};
  }
  return out;
}

TEST(LayerPartition, ClosedFormEqualsTheExhaustiveSearch) {
  for (int blocks = 1; blocks <= 40; ++blocks) {
    for (int chunks = 1; chunks <= blocks; ++chunks) {
      EXPECT_EQ(cut(blocks, chunks), reference_cut(blocks, chunks))
          << blocks << " blocks on " << chunks << " chunks";
    }
  }
}

// The issue-19 case: a million blocks (O(K*N^2) took 20 minutes) are cut at once, evenly.
TEST(LayerPartition, AMillionBlocksAreCutEvenly) {
  // Costs 1000002 over 8 chunks: 125001 x 2 (the first two), 125000 x 6.
  EXPECT_EQ(cut(1000000, 8),
            (std::vector<std::vector<int>>{{0, 125000, 1, 0},
                                           {125000, 250001, 0, 0},
                                           {250001, 375001, 0, 0},
                                           {375001, 500001, 0, 0},
                                           {500001, 625001, 0, 0},
                                           {625001, 750001, 0, 0},
                                           {750001, 875001, 0, 0},
                                           {875001, 1000000, 0, 1}}));
  const std::vector<ChunkLayers> many = partition_layers(1000000, 1000000);
  ASSERT_EQ(many.size(), 1000000u);
  EXPECT_EQ(many[0].last_block, 1);
  EXPECT_EQ(many[999999].first_block, 999999);
}

TEST(LayerPartition, FewerLayersThanStagesNamesBothNumbers) {
  try {
    partition_layers(3, 4);
    FAIL() << "no error";
  } catch (const PlacementError& e) {
    EXPECT_THAT(e.what(), HasSubstr("layers fewer than stages"));
    EXPECT_THAT(e.what(), HasSubstr("3 transformer blocks"));
    EXPECT_THAT(e.what(), HasSubstr("4 pipeline chunks"));
  }
  EXPECT_THROW(partition_layers(3, 0), PlacementError);
}

TEST(LayerPartition, GlobalChunkOfInterleavedStages) {
  // P = 2, v = 2: stage 0 holds global chunks 0 and 2, stage 1 holds 1 and 3.
  EXPECT_EQ(global_chunk(0, 0, 2), 0);
  EXPECT_EQ(global_chunk(1, 0, 2), 2);
  EXPECT_EQ(global_chunk(0, 1, 2), 1);
  EXPECT_EQ(global_chunk(1, 1, 2), 3);
}

TEST(Placement, HugeDegreesDoNotOverflow) {
  EXPECT_THAT(resolve_error("D2147483647P2147483647T2147483647", 8),
              HasSubstr("= more than 2147483647 do not multiply to the world size 8"));
  EXPECT_THAT(resolve_error("DP2147483647T2147483647", 8), HasSubstr("not divisible"));
}

}  // namespace
}  // namespace plexus::engine
