// cost_model_test.cpp - unit tests of comm/tuning/: the algorithm table, the alpha-beta-gamma
// formulas against hand-computed values, the choice and its reason, PLEXUS_ALGO overrides,
// PLEXUS_COST_MODEL, the JSON cache, and the measurement protocol on the in-process thread
// transport (tests/support/thread_transport.h), where every rank must end with identical params.
//
// The formula tests use abstract units (alpha 10, beta 1, gamma 0.5 per byte) so each expected
// value is small integer arithmetic, worked out in the comment beside it.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "comm/algorithms/host_layout.h"
#include "comm/base/error.h"
#include "comm/transport/tag.h"
#include "comm/tuning/algo_override.h"
#include "comm/tuning/algorithm_id.h"
#include "comm/tuning/cost_cache.h"
#include "comm/tuning/cost_model.h"
#include "comm/tuning/cost_shape.h"
#include "comm/tuning/measure.h"
#include "tests/support/temp_dir.h"
#include "tests/support/thread_transport.h"
#include "tests/topology/scoped_env.h"

namespace plexus::comm {
namespace {

using A = AlgorithmId;
using C = Collective;
using test::ScopedEnv;

constexpr CostParams kUnits{10, 1, 0.5};  // alpha, beta, gamma in abstract units

double predict(A id, size_t bytes, int n, size_t chunk = 0) {
  return predict_seconds(id, bytes, n, kUnits, chunk);
}

// ---- the table ----------------------------------------------------------------------------

TEST(AlgorithmIdTest, EveryAlgorithmIsFoundByNameBothWays) {
  ASSERT_EQ(algorithm_table().size(), kAlgorithmCount);
  for (const AlgorithmInfo& info : algorithm_table()) {
    EXPECT_EQ(algorithm_info(info.id).name, info.name);
    EXPECT_EQ(find_algorithm(info.collective, info.name), info.id) << info.name;
    EXPECT_EQ(find_collective(collective_name(info.collective)), info.collective);
  }
  EXPECT_EQ(find_algorithm(C::Allreduce, "bruck"), std::nullopt);
  EXPECT_EQ(find_algorithm(C::Alltoall, "bruck"), A::AlltoallBruck);
  EXPECT_EQ(find_collective("reduce_scatter"), C::ReduceScatter);
  EXPECT_EQ(find_collective("Allreduce"), std::nullopt);
  EXPECT_EQ(collective_name(C::kCount), "?");
}

TEST(AlgorithmIdTest, EachCollectiveListsItsAlgorithmsInOrder) {
  EXPECT_EQ(algorithm_names(C::Allreduce), "ring, rabenseifner, recursive_doubling, "
                                           "double_binary_tree, hierarchical, shm, shm_oneshot");
  EXPECT_EQ(algorithm_names(C::Reduce), "binomial, ring, hierarchical, shm");
  EXPECT_EQ(algorithm_names(C::Broadcast), "binomial, chain, scatter_allgather, hierarchical, shm");
  EXPECT_EQ(algorithm_names(C::ReduceScatter), "ring, recursive_halving, hierarchical, shm");
  EXPECT_EQ(algorithm_names(C::Allgather), "ring, bruck, hierarchical, shm");
  EXPECT_EQ(algorithm_names(C::Alltoall), "pairwise, bruck, shm");
  EXPECT_EQ(algorithm_names(C::Alltoallv), "pairwise");
  EXPECT_EQ(algorithm_names(C::Gather), "linear, binomial");
  EXPECT_EQ(algorithm_names(C::Scatter), "linear, binomial");
  EXPECT_EQ(algorithm_names(C::Barrier), "dissemination");
  EXPECT_EQ(collective_names(), "allreduce, reduce, broadcast, reduce_scatter, allgather, "
                                "alltoall, alltoallv, gather, scatter, barrier");
}

// ---- formulas -----------------------------------------------------------------------------

TEST(CostModelTest, AllreducePowerOfTwoMatchesHandValues) {
  // p = 4, m = 1000, chunk 100: segment 250 -> 3 slices.
  // ring:  2*3*3 slices * 10 + 2*3/4*1000*1 + 3/4*1000*0.5 = 180 + 1500 + 375
  EXPECT_DOUBLE_EQ(predict(A::AllreduceRing, 1000, 4, 100), 2055);
  // rabenseifner: 2*log2(4)*10 + 1500 + 375, no fold
  EXPECT_DOUBLE_EQ(predict(A::AllreduceRabenseifner, 1000, 4, 100), 1915);
  // recursive doubling: 2 * (10 slices * 10 + 1000 + 500)
  EXPECT_DOUBLE_EQ(predict(A::AllreduceRecursiveDoubling, 1000, 4, 100), 3200);
  // double binary tree: height H = 2 (0 <- 2 <- {1, 3}), half 500 in S = 5 slices of 100;
  // rank 2 has degree 4 (3 in tree 0, 1 in tree 1) and 2 children:
  //   2H (10 + 100 + 50) + (S - 1)(4*10 + 4*100 + 2*100*0.5) = 640 + 4*540
  EXPECT_DOUBLE_EQ(predict(A::AllreduceDoubleBinaryTree, 1000, 4, 100), 2800);
}

TEST(CostModelTest, FlatAlgorithmsAcrossHostsSliceAtTheNetworkStep) {
  // One host (or one-level parameters): the chunk. Across hosts:
  // min(chunk, max(16 KiB, max(1 ms, 8 alpha_e) / beta_e)).
  const std::vector<std::string> ids = {"host-a", "host-b"};
  const CostShape across = cost_shape(host_layout(ids));
  const CostParams slow{10e-6, 1e-10, 1e-10, 15e-6, 8e-9};     // 1 Gbit/s: 1 ms = 125000 B
  const CostParams fast{10e-6, 1e-10, 1e-10, 10e-6, 0.02e-9};  // 400 Gbit/s: 1 ms = 50 MB
  const CostParams far{10e-6, 1e-10, 1e-10, 200e-6, 8e-9};     // 8 a_e = 1.6 ms: 200000 B
  const CostParams crawl{10e-6, 1e-10, 1e-10, 15e-6, 800e-9};  // 10 Mbit/s: 1250 B -> 16 KiB
  EXPECT_EQ(flat_slice_bytes(flat_cost_shape(2), slow, 1 << 20), size_t{1} << 20);
  EXPECT_EQ(flat_slice_bytes(across, CostParams{10e-6, 1e-10, 1e-10}, 1 << 20), size_t{1} << 20);
  EXPECT_EQ(flat_slice_bytes(across, slow, 1 << 20), 125000u);
  EXPECT_EQ(flat_slice_bytes(across, slow, 64 << 10), size_t{64} << 10);
  EXPECT_EQ(flat_slice_bytes(across, far, 1 << 20), 200000u);
  EXPECT_EQ(flat_slice_bytes(across, crawl, 1 << 20), size_t{16} << 10);
  EXPECT_EQ(flat_slice_bytes(across, fast, 1 << 20), size_t{1} << 20);
  EXPECT_EQ(flat_slice_bytes(across, fast, 16 << 20), size_t{16} << 20);  // 1 ms: 50 MB
  EXPECT_EQ(flat_slice_bytes(across, slow, 0), 0u);
  // The ring of 2 hosts at 1 Gbit/s, 2 MiB: a 1 MiB segment in ceil(1048576 / 125000) = 9
  // slices per step: 2 * 9 * a_e + m * b_e + 0.5 m g
  const double m = 2 << 20;
  EXPECT_NEAR(predict_seconds(A::AllreduceRing, 2 << 20, across, slow, 1 << 20),
              18 * 15e-6 + m * 8e-9 + 0.5 * m * 1e-10, 1e-12);
  // The bound keeps the run's slice although it zeroes alpha_e, which the slice reads: the
  // chain broadcast of 16 MiB over 4 hosts with `far` runs k = ceil(16 MiB / 200000) = 84
  // slices, bound (n - 2 + k) m/k b_e (with alpha_e at 0 the slice would be 125000 B, k = 135).
  const std::vector<std::string> four = {"a", "b", "c", "d"};
  const double big = 16 << 20;
  EXPECT_NEAR(bound_seconds(A::BroadcastChain, 16 << 20, cost_shape(host_layout(four)), far,
                            1 << 20),
              (4 - 2 + 84) * big / 84 * 8e-9, 1e-12);
}

TEST(CostModelTest, AllreduceNonPowerOfTwoPaysTheFold) {
  // p = 6, m = 1200, no slicing; p2 = 4, fold = 2*10 + 1200 + 600 + 1200 = 3020.
  // ring: 2*5*10 + 2*5/6*1200 + 5/6*1200*0.5 = 100 + 2000 + 500
  EXPECT_DOUBLE_EQ(predict(A::AllreduceRing, 1200, 6), 2600);
  // rabenseifner: 2*2*10 + 2*3/4*1200 + 3/4*1200*0.5 + fold = 40 + 1800 + 450 + 3020
  EXPECT_DOUBLE_EQ(predict(A::AllreduceRabenseifner, 1200, 6), 5310);
  // recursive doubling: 2*(10 + 1200 + 600) + fold
  EXPECT_DOUBLE_EQ(predict(A::AllreduceRecursiveDoubling, 1200, 6), 6640);
  // double binary tree: height 3 (1 <- 2 <- 4 <- 0), one slice of 600 per tree: the pipeline
  // only fills and drains, 2H (10 + 600 + 300)
  EXPECT_DOUBLE_EQ(predict(A::AllreduceDoubleBinaryTree, 1200, 6), 5460);
}

TEST(CostModelTest, ReduceAndBroadcastMatchHandValues) {
  // reduce p = 4, m = 1000, chunk 250: binomial 2 rounds * (4 slices*10 + 1000 + 500)
  EXPECT_DOUBLE_EQ(predict(A::ReduceBinomial, 1000, 4, 250), 3080);
  // ring reduce: segment 250 = 1 slice: 2*3*10 + 1500 + 375
  EXPECT_DOUBLE_EQ(predict(A::ReduceRing, 1000, 4, 250), 1935);
  // broadcast p = 5, m = 1000, chunk 100: binomial ceil(log2 5) = 3 rounds of (10 + 1000)
  EXPECT_DOUBLE_EQ(predict(A::BroadcastBinomial, 1000, 5, 100), 3030);
  // chain: 10 slices of 100: (5 - 2 + 10)(10 + 100)
  EXPECT_DOUBLE_EQ(predict(A::BroadcastChain, 1000, 5, 100), 1430);
  // scatter + allgather: 3*10 + 4 steps * 2 slices * 10 + 2*4/5*1000
  EXPECT_DOUBLE_EQ(predict(A::BroadcastScatterAllgather, 1000, 5, 100), 1710);
}

TEST(CostModelTest, BlockCollectivesMatchHandValues) {
  // reduce_scatter p = 8, block 100: ring 7*10 + 7*100*1.5; halving 3*10 + 7/8*800*1.5
  EXPECT_DOUBLE_EQ(predict(A::ReduceScatterRing, 100, 8), 1120);
  EXPECT_DOUBLE_EQ(predict(A::ReduceScatterRecursiveHalving, 100, 8), 1080);
  // p = 6: 2*10 + 3/4*600*1.5 + fold (2*10 + 600 + 300 + 100 back)
  EXPECT_DOUBLE_EQ(predict(A::ReduceScatterRecursiveHalving, 100, 6), 1715);
  // allgather p = 7, block 100, chunk 30 (4 slices): ring 6*4*10 + 600; bruck 3*10 + 600
  // plus the rotation 7*100*0.5
  EXPECT_DOUBLE_EQ(predict(A::AllgatherRing, 100, 7, 30), 840);
  EXPECT_DOUBLE_EQ(predict(A::AllgatherBruck, 100, 7, 30), 980);
  // alltoall p = 5, block 100: pairwise 4*(10 + 100); Bruck steps send blocks {1,3}, {2,3},
  // {4}: 3*10 + 5*100*(1 + 2*0.5) (packing and unpacking)
  EXPECT_DOUBLE_EQ(predict(A::AlltoallPairwise, 100, 5), 440);
  EXPECT_DOUBLE_EQ(predict(A::AlltoallvPairwise, 100, 5), 440);
  EXPECT_DOUBLE_EQ(predict(A::AlltoallBruck, 100, 5), 1030);
  // p = 8: Bruck (m/2) log2 p = 3 steps of 4 blocks: 3*10 + 12*100*2
  EXPECT_DOUBLE_EQ(predict(A::AlltoallBruck, 100, 8), 2430);
  // gather/scatter p = 8, block 100: linear 7*(10 + 100); binomial 3*10 + 7*100
  EXPECT_DOUBLE_EQ(predict(A::GatherLinear, 100, 8), 770);
  EXPECT_DOUBLE_EQ(predict(A::ScatterLinear, 100, 8), 770);
  EXPECT_DOUBLE_EQ(predict(A::GatherBinomial, 100, 8), 730);
  EXPECT_DOUBLE_EQ(predict(A::ScatterBinomial, 100, 8), 730);
  // barrier p = 5: 3 rounds
  EXPECT_DOUBLE_EQ(predict(A::BarrierDissemination, 0, 5), 30);
}

TEST(CostModelTest, OneRankCostsNothing) {
  for (const AlgorithmInfo& info : algorithm_table()) {
    EXPECT_EQ(predict(info.id, 1 << 20, 1, 1024), 0) << info.name;
  }
  const AlgorithmChoice choice = choose(C::Broadcast, 4096, 1, kUnits, 1024);
  EXPECT_EQ(choice.algorithm, A::BroadcastBinomial);
  EXPECT_EQ(choice.predicted_s, 0);
}

// ---- choice -------------------------------------------------------------------------------

// A plausible cluster: 5 us latency, 10 GB/s, reduction at 20 GB/s; 1 MiB slices.
constexpr CostParams kCluster{5e-6, 1e-10, 5e-11};
constexpr size_t kChunk = size_t{1} << 20;
constexpr size_t kSmall = 8;
constexpr size_t kLarge = size_t{256} << 20;

A pick(C collective, size_t bytes, int n) {
  return choose(collective, bytes, n, kCluster, kChunk).algorithm;
}

TEST(CostModelTest, ChoiceFlipsFromLatencyToBandwidthAlgorithms) {
  EXPECT_EQ(pick(C::Allreduce, kSmall, 8), A::AllreduceRecursiveDoubling);
  EXPECT_EQ(pick(C::Allreduce, kLarge, 8), A::AllreduceRabenseifner);
  EXPECT_EQ(pick(C::Allreduce, kSmall, 6), A::AllreduceRecursiveDoubling);
  EXPECT_EQ(pick(C::Allreduce, kLarge, 6), A::AllreduceRing);  // the fold costs 2m beta
  EXPECT_EQ(pick(C::Reduce, kSmall, 8), A::ReduceBinomial);
  EXPECT_EQ(pick(C::Reduce, kLarge, 8), A::ReduceRing);
  EXPECT_EQ(pick(C::Broadcast, kSmall, 8), A::BroadcastBinomial);
  EXPECT_EQ(pick(C::Broadcast, kLarge, 8), A::BroadcastChain);
  EXPECT_EQ(pick(C::ReduceScatter, kSmall, 6), A::ReduceScatterRecursiveHalving);
  EXPECT_EQ(pick(C::ReduceScatter, kLarge / 8, 6), A::ReduceScatterRing);
  EXPECT_EQ(pick(C::Alltoall, kSmall, 8), A::AlltoallBruck);
  EXPECT_EQ(pick(C::Alltoall, kLarge / 8, 8), A::AlltoallPairwise);
  EXPECT_EQ(pick(C::Allgather, kSmall, 7), A::AllgatherBruck);
  EXPECT_EQ(pick(C::Gather, kLarge / 8, 8), A::GatherBinomial);
  EXPECT_EQ(pick(C::Alltoallv, kSmall, 8), A::AlltoallvPairwise);
  EXPECT_EQ(pick(C::Barrier, 0, 8), A::BarrierDissemination);
}

TEST(CostModelTest, ChoiceIsTheFastestPrediction) {
  for (size_t c = 0; c < kCollectiveCount; ++c) {
    for (int n : {2, 3, 4, 7, 16}) {
      for (size_t bytes : {size_t{0}, size_t{1}, size_t{4096}, size_t{1} << 20, kLarge}) {
        const AlgorithmChoice choice = choose(static_cast<C>(c), bytes, n, kCluster, kChunk);
        ASSERT_LT(choice.algorithm, A::kCount);
        EXPECT_EQ(algorithm_collective(choice.algorithm), static_cast<C>(c));
        EXPECT_EQ(choice.predicted_s,
                  predict_seconds(choice.algorithm, bytes, n, kCluster, kChunk));
        for (const AlgorithmInfo& other : algorithms_of(static_cast<C>(c))) {
          EXPECT_LE(choice.predicted_s, predict_seconds(other.id, bytes, n, kCluster, kChunk))
              << choice.reason;
        }
      }
    }
  }
}

TEST(CostModelTest, TiesGoToTheFirstListedAlgorithm) {
  // p = 2 and p = 3: linear and binomial gather both cost (p-1)(alpha + b beta).
  EXPECT_EQ(predict(A::GatherLinear, 100, 3), predict(A::GatherBinomial, 100, 3));
  EXPECT_EQ(choose(C::Gather, 100, 3, kUnits, 0).algorithm, A::GatherLinear);
  EXPECT_EQ(choose(C::Scatter, 100, 2, kUnits, 0).algorithm, A::ScatterLinear);
  // All costs zero: the first of the table.
  EXPECT_EQ(choose(C::Allreduce, 4096, 4, CostParams{0, 0, 0}, kChunk).algorithm,
            A::AllreduceRing);
}

TEST(CostModelTest, ReasonNamesTheWinnerTheOthersAndTheParams) {
  // p = 4, 4096 B: recursive doubling 2*(5 + 0.41 + 0.20) = 11.2 us beats rabenseifner.
  const AlgorithmChoice choice = choose(C::Allreduce, 4096, 4, kCluster, kChunk);
  EXPECT_EQ(choice.algorithm, A::AllreduceRecursiveDoubling);
  EXPECT_EQ(choice.reason.rfind("allreduce 4096 B x 4 ranks: recursive_doubling (11.2 us) over ",
                                0),
            0u)
      << choice.reason;
  for (const char* part : {"rabenseifner (", "ring (", "double_binary_tree (",
                           "alpha 5 us, beta 0.1 ns/B, gamma 0.05 ns/B"}) {
    EXPECT_NE(choice.reason.find(part), std::string::npos) << part << " in " << choice.reason;
  }
  // The others are listed fastest first.
  const AlgorithmChoice one = choose(C::Alltoallv, 4096, 4, kCluster, kChunk);
  EXPECT_NE(one.reason.find("pairwise ("), std::string::npos) << one.reason;
  EXPECT_NE(one.reason.find("the only algorithm"), std::string::npos) << one.reason;
  EXPECT_EQ(format_seconds(12.14e-6), "12.1 us");
  EXPECT_EQ(format_seconds(3.5204e-3), "3.52 ms");
  EXPECT_EQ(format_seconds(1.2), "1.20 s");
}

// ---- overrides ----------------------------------------------------------------------------

TEST(AlgoOverrideTest, ParsesPairsWithWhitespace) {
  AlgoOverrides overrides;
  ASSERT_EQ(parse_algo_overrides(" allreduce : ring ,broadcast:binomial, ", "PLEXUS_ALGO", 0,
                                 &overrides),
            PLX_SUCCESS)
      << last_error();
  EXPECT_EQ(overrides.get(C::Allreduce), A::AllreduceRing);
  EXPECT_EQ(overrides.get(C::Broadcast), A::BroadcastBinomial);
  EXPECT_EQ(overrides.get(C::Reduce), std::nullopt);
  EXPECT_EQ(format_algo_overrides(overrides), "allreduce:ring,broadcast:binomial");

  // Forced even where the model would pick another.
  const AlgorithmChoice choice = choose(C::Allreduce, 8, 8, kCluster, kChunk, overrides);
  EXPECT_EQ(choice.algorithm, A::AllreduceRing);
  EXPECT_EQ(choice.predicted_s, predict_seconds(A::AllreduceRing, 8, 8, kCluster, kChunk));
  EXPECT_NE(choice.reason.find(": ring ("), std::string::npos) << choice.reason;
  EXPECT_NE(choice.reason.find("forced by PLEXUS_ALGO"), std::string::npos) << choice.reason;
  EXPECT_EQ(choose(C::Reduce, 8, 8, kCluster, kChunk, overrides).algorithm, A::ReduceBinomial);
}

TEST(AlgoOverrideTest, EmptyAndAutoMeanAutomatic) {
  AlgoOverrides overrides;
  ASSERT_EQ(parse_algo_overrides("", "PLEXUS_ALGO", 0, &overrides), PLX_SUCCESS);
  EXPECT_TRUE(overrides.empty());
  ASSERT_EQ(parse_algo_overrides("  , ", "PLEXUS_ALGO", 0, &overrides), PLX_SUCCESS);
  EXPECT_TRUE(overrides.empty());
  ASSERT_EQ(parse_algo_overrides("allreduce:auto,gather:binomial", &overrides), PLX_SUCCESS);
  EXPECT_EQ(overrides.get(C::Allreduce), std::nullopt);
  EXPECT_EQ(overrides.get(C::Gather), A::GatherBinomial);
  EXPECT_EQ(overrides.source, "plx_comm_set_algorithm");
  EXPECT_NE(choose(C::Gather, 8, 4, kCluster, kChunk, overrides)
                .reason.find("forced by plx_comm_set_algorithm"),
            std::string::npos);
  // The same algorithm twice is not a conflict.
  EXPECT_EQ(parse_algo_overrides("barrier:dissemination,barrier:dissemination", &overrides),
            PLX_SUCCESS);
}

TEST(AlgoOverrideTest, ErrorsNameTheTokenAndTheValidChoices) {
  struct Bad {
    const char* text;
    std::vector<std::string> expected;  // parts of the message
  };
  const Bad cases[] = {
      {"allreduce", {"PLEXUS_ALGO=\"allreduce\": rank 3: item 'allreduce'",
                     "expected collective:algorithm"}},
      {"allredux:ring", {"'allredux' is not a collective",
                         "valid: allreduce, reduce, broadcast, reduce_scatter, allgather, "
                         "alltoall, alltoallv, gather, scatter, barrier"}},
      {"broadcast:binomial, allreduce:bruck",
       {"item 'allreduce:bruck'", "'bruck' is not an algorithm of allreduce",
        "valid: ring, rabenseifner, recursive_doubling, double_binary_tree, hierarchical, shm, "
        "shm_oneshot, "
        "auto"}},
      {"alltoall:ring", {"valid: pairwise, bruck, shm, auto"}},
      {"allreduce:ring,allreduce:rabenseifner", {"allreduce is already set to ring"}},
      {"allreduce:", {"'' is not an algorithm of allreduce"}},
  };
  for (const Bad& bad : cases) {
    AlgoOverrides overrides;
    overrides.forced[0] = A::AllreduceDoubleBinaryTree;  // untouched on failure
    EXPECT_EQ(parse_algo_overrides(bad.text, "PLEXUS_ALGO", 3, &overrides),
              PLX_ERROR_INVALID_ARGUMENT)
        << bad.text;
    const std::string message = last_error();
    for (const std::string& part : bad.expected) {
      EXPECT_NE(message.find(part), std::string::npos) << part << " in " << message;
    }
    EXPECT_EQ(overrides.forced[0], A::AllreduceDoubleBinaryTree);
  }
  AlgoOverrides overrides;
  EXPECT_EQ(parse_algo_overrides("gather:ring", &overrides), PLX_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(std::string(last_error()).rfind("spec \"gather:ring\": item 'gather:ring': ", 0), 0u)
      << last_error();
}

TEST(AlgoOverrideTest, ReadsPlexusAlgo) {
  AlgoOverrides overrides;
  {
    ScopedEnv env("PLEXUS_ALGO", "reduce_scatter:recursive_halving");
    ASSERT_EQ(algo_overrides_from_env(0, &overrides), PLX_SUCCESS) << last_error();
    EXPECT_EQ(overrides.get(C::ReduceScatter), A::ReduceScatterRecursiveHalving);
    EXPECT_EQ(overrides.source, "PLEXUS_ALGO");
  }
  {
    ScopedEnv env("PLEXUS_ALGO", std::nullopt);
    ASSERT_EQ(algo_overrides_from_env(0, &overrides), PLX_SUCCESS);
    EXPECT_TRUE(overrides.empty());
  }
  {
    ScopedEnv env("PLEXUS_ALGO", "scatter:chain");
    EXPECT_EQ(algo_overrides_from_env(2, &overrides), PLX_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(last_error()).find("rank 2"), std::string::npos) << last_error();
  }
}

// ---- PLEXUS_COST_MODEL and the cache ------------------------------------------------------

TEST(CostCacheTest, ParsesPlexusCostModel) {
  CostParams params;
  ASSERT_EQ(parse_cost_model(" 2.5, 0.1 ,0.05 ", 0, &params), PLX_SUCCESS) << last_error();
  EXPECT_DOUBLE_EQ(params.alpha_s, 2.5e-6);
  EXPECT_DOUBLE_EQ(params.beta_s_per_byte, 0.1e-9);
  EXPECT_DOUBLE_EQ(params.gamma_s_per_byte, 0.05e-9);
  ASSERT_EQ(parse_cost_model("3,1e-1,0", 0, &params), PLX_SUCCESS) << last_error();
  EXPECT_DOUBLE_EQ(params.beta_s_per_byte, 0.1e-9);
  EXPECT_EQ(params.gamma_s_per_byte, 0);

  const std::pair<const char*, const char*> bad[] = {
      {"1,2", "2 values given"},           {"1,2,3,4", "4 values given"},
      {"", "1 value given"},               {"x,2,3", "alpha_us 'x' is not"},
      {"1,-2,3", "beta_ns_per_byte '-2'"}, {"1,2,inf", "gamma_ns_per_byte 'inf'"},
      {"1,2 3,4", "beta_ns_per_byte '2 3'"}, {"1,,3", "beta_ns_per_byte ''"},
      {"1,2,3,0,0", "inter_beta_ns_per_byte is 0, but five values"},
      {"0,0,0,1000000,4.9e-324", "inter_beta_ns_per_byte is too small to count, but five"},
      {"1e300,2,3", "alpha_us '1e300' is more than 1e+06"},
      {"1,2,3,4,1000001", "inter_beta_ns_per_byte '1000001' is more than 1e+06"},
  };
  for (const auto& [text, part] : bad) {
    params = CostParams{7, 7, 7};
    EXPECT_EQ(parse_cost_model(text, 5, &params), PLX_ERROR_INVALID_ARGUMENT) << text;
    const std::string message = last_error();
    EXPECT_NE(message.find(part), std::string::npos) << part << " in " << message;
    EXPECT_NE(message.find("rank 5"), std::string::npos) << message;
    EXPECT_NE(message.find("alpha_us,beta_ns_per_byte,gamma_ns_per_byte"), std::string::npos);
    EXPECT_EQ(params.alpha_s, 7);
  }
}

TEST(CostCacheTest, FolderAndFileName) {
  EXPECT_EQ(cost_cache_file_name("node1/3f2a-b c", "tcp;ofi_rxm"),
            "cost-node1_3f2a-b_c-tcp_ofi_rxm.json");
  EXPECT_EQ(cost_cache_file_name("", "shm"), "cost-_-shm.json");
  EXPECT_EQ(cost_cache_file_name(std::string(300, 'h'), "shm").size(),
            std::string("cost--shm.json").size() + 100);
  {
    ScopedEnv dir("PLEXUS_CACHE_DIR", "/some/where");
    EXPECT_EQ(cost_cache_dir(), "/some/where");
  }
  ScopedEnv dir("PLEXUS_CACHE_DIR", std::nullopt);
  {
    ScopedEnv xdg("XDG_CACHE_HOME", "/xdg");
    EXPECT_EQ(cost_cache_dir(), "/xdg/plexus");
  }
  ScopedEnv xdg("XDG_CACHE_HOME", std::nullopt);
  {
    ScopedEnv home("HOME", "/home/u");
    EXPECT_EQ(cost_cache_dir(), "/home/u/.cache/plexus");
  }
  ScopedEnv home("HOME", std::nullopt);
  EXPECT_EQ(cost_cache_dir(), "");
}

TEST(CostCacheTest, RoundTripAndRejectedFiles) {
  test::TempDir dir("plexus-cost");
  ASSERT_FALSE(dir.path().empty());
  const std::string path = dir.path() + "/sub/cost.json";
  const CostParams written{2.9e-6, 2.1e-10, 0.1 / 3 * 1e-9};
  std::string why;
  ASSERT_TRUE(write_cost_cache(path, "hostA", "tcp;ofi_rxm", written, &why)) << why;
  CostParams read;
  ASSERT_TRUE(read_cost_cache(path, "hostA", "tcp;ofi_rxm", &read, &why)) << why;
  EXPECT_EQ(read.alpha_s, written.alpha_s);  // exact: JSON keeps every digit
  EXPECT_EQ(read.beta_s_per_byte, written.beta_s_per_byte);
  EXPECT_EQ(read.gamma_s_per_byte, written.gamma_s_per_byte);
  // No temporary file is left behind.
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path() + "/sub"),
                          std::filesystem::directory_iterator()),
            1);

  EXPECT_FALSE(read_cost_cache(path, "hostB", "tcp;ofi_rxm", &read, &why));
  EXPECT_NE(why.find("hostA"), std::string::npos) << why;
  EXPECT_FALSE(read_cost_cache(path, "hostA", "shm", &read, &why));
  EXPECT_FALSE(read_cost_cache(dir.path() + "/missing.json", "hostA", "shm", &read, &why));

  const std::pair<const char*, const char*> bad[] = {
      {"{not json", "not a JSON object"},
      {"[1, 2]", "not a JSON object"},
      {R"({"format": "other", "version": 1})", "format"},
      {R"({"format": "plexus-cost-model", "version": 0, "host_id": "hostA", "provider": "shm",
           "alpha_s": 1e-6, "beta_s_per_byte": 1e-10, "gamma_s_per_byte": 1e-10})",
       "version 0, expected 2"},
      {R"({"format": "plexus-cost-model", "version": 2, "host_id": "hostA", "provider": "shm",
           "alpha_s": -1e-6, "beta_s_per_byte": 1e-10, "gamma_s_per_byte": 1e-10})",
       "positive"},
      {R"({"format": "plexus-cost-model", "version": 2, "host_id": "hostA", "provider": "shm",
           "alpha_s": 1e-6, "beta_s_per_byte": "fast", "gamma_s_per_byte": 1e-10})",
       "positive"},
  };
  for (const auto& [text, part] : bad) {
    std::ofstream(path) << text;
    read = CostParams{7, 7, 7};
    EXPECT_FALSE(read_cost_cache(path, "hostA", "shm", &read, &why)) << text;
    EXPECT_NE(why.find(part), std::string::npos) << part << " in " << why;
    EXPECT_EQ(read.alpha_s, 7);
  }
}

// ---- measurement on the thread transport --------------------------------------------------

bool same(const CostParams& a, const CostParams& b) {
  return a.alpha_s == b.alpha_s && a.beta_s_per_byte == b.beta_s_per_byte &&
         a.gamma_s_per_byte == b.gamma_s_per_byte;
}

bool in_clamps(const CostParams& p) {
  return p.alpha_s >= kMinAlphaS && p.alpha_s <= kMaxAlphaS &&
         p.beta_s_per_byte >= kMinBetaSPerByte && p.beta_s_per_byte <= kMaxBetaSPerByte &&
         p.gamma_s_per_byte >= kMinGammaSPerByte && p.gamma_s_per_byte <= kMaxGammaSPerByte;
}

// Runs fn(rank, transport, &params[rank]) on n thread ranks; checks the transport's protocol.
std::vector<CostParams> run_ranks(
    int n, const std::function<plx_result_t(comm::Transport&, CostParams*)>& fn,
    std::vector<plx_result_t>* results, std::vector<std::string>* messages) {
  test::ThreadWorld world(n);
  std::vector<CostParams> params(n, CostParams{-1, -1, -1});
  messages->assign(n, "");
  *results = world.run([&](int rank, comm::Transport& transport) {
    const plx_result_t rc = fn(transport, &params[rank]);
    if (rc != PLX_SUCCESS) (*messages)[rank] = last_error();
    return rc;
  });
  EXPECT_TRUE(world.protocol_errors().empty()) << world.protocol_errors().front();
  if (std::all_of(results->begin(), results->end(), [](plx_result_t r) { return r == PLX_SUCCESS; })) {
    EXPECT_TRUE(world.leftover().empty()) << world.leftover().front();
  }
  return params;
}

TEST(MeasureTest, EveryRankGetsRankZerosMeasurement) {
  for (int n : {1, 2, 3, 5}) {
    std::vector<plx_result_t> results;
    std::vector<std::string> messages;
    const auto params = run_ranks(
        n,
        [](comm::Transport& t, CostParams* out) {
          return measure_cost_params(t, collective_tag_base(7), out);
        },
        &results, &messages);
    for (int r = 0; r < n; ++r) {
      ASSERT_EQ(results[r], PLX_SUCCESS) << "n=" << n << " rank " << r << ": " << messages[r];
      EXPECT_TRUE(same(params[r], params[0])) << "n=" << n << " rank " << r;
      EXPECT_TRUE(in_clamps(params[r])) << format_cost_params(params[r]);
    }
    if (n == 1) {
      EXPECT_TRUE(same(params[0], kDefaultCostParams));
    }
  }
  test::ThreadWorld world(1);
  EXPECT_EQ(measure_cost_params(world.transport(0), 0, nullptr), PLX_ERROR_INVALID_ARGUMENT);
}

TEST(LoadOrMeasureTest, CostModelVariableSkipsMeasurement) {
  test::TempDir dir("plexus-cost");
  ScopedEnv cache("PLEXUS_CACHE_DIR", dir.path());
  ScopedEnv model("PLEXUS_COST_MODEL", "2.5,0.1,0.05");
  std::vector<plx_result_t> results;
  std::vector<std::string> messages;
  const auto params = run_ranks(
      3, [](comm::Transport& t, CostParams* out) { return load_or_measure(t, 0, "h", out); },
      &results, &messages);
  for (int r = 0; r < 3; ++r) {
    ASSERT_EQ(results[r], PLX_SUCCESS) << messages[r];
    EXPECT_DOUBLE_EQ(params[r].alpha_s, 2.5e-6);
    EXPECT_DOUBLE_EQ(params[r].beta_s_per_byte, 0.1e-9);
    EXPECT_DOUBLE_EQ(params[r].gamma_s_per_byte, 0.05e-9);
  }
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));  // nothing measured, nothing cached
}

TEST(LoadOrMeasureTest, MalformedCostModelFailsOnEveryRankWithoutHanging) {
  ScopedEnv model("PLEXUS_COST_MODEL", "2.5;0.1;0.05");
  std::vector<plx_result_t> results;
  std::vector<std::string> messages;
  run_ranks(
      4, [](comm::Transport& t, CostParams* out) { return load_or_measure(t, 0, "h", out); },
      &results, &messages);
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(results[r], PLX_ERROR_INVALID_ARGUMENT) << r;
    EXPECT_NE(messages[r].find("PLEXUS_COST_MODEL=\"2.5;0.1;0.05\": rank " + std::to_string(r)),
              std::string::npos)
        << messages[r];
  }
}

TEST(LoadOrMeasureTest, MeasuresOnceThenLoadsAndReplacesACorruptFile) {
  test::TempDir dir("plexus-cost");
  ScopedEnv cache("PLEXUS_CACHE_DIR", dir.path() + "/plexus");
  ScopedEnv model("PLEXUS_COST_MODEL", std::nullopt);
  const std::string path = dir.path() + "/plexus/cost-node_7-thread.json";
  const auto body = [](comm::Transport& t, CostParams* out) {
    return load_or_measure(t, collective_tag_base(3), "node/7", out);
  };
  std::vector<plx_result_t> results;
  std::vector<std::string> messages;

  // 1. No file: every rank measures, rank 0 writes the file.
  const auto measured = run_ranks(3, body, &results, &messages);
  for (int r = 0; r < 3; ++r) {
    ASSERT_EQ(results[r], PLX_SUCCESS) << messages[r];
    EXPECT_TRUE(same(measured[r], measured[0])) << r;
  }
  CostParams cached;
  std::string why;
  ASSERT_TRUE(read_cost_cache(path, "node/7", "thread", &cached, &why)) << why;
  EXPECT_TRUE(same(cached, measured[0]));

  // 2. A file with other values: loaded as is by every rank (nothing is measured).
  const CostParams planted{1.25e-6, 3e-10, 7e-11};
  ASSERT_TRUE(write_cost_cache(path, "node/7", "thread", planted, &why)) << why;
  const auto loaded = run_ranks(3, body, &results, &messages);
  for (int r = 0; r < 3; ++r) {
    ASSERT_EQ(results[r], PLX_SUCCESS) << messages[r];
    EXPECT_TRUE(same(loaded[r], planted)) << r << ": " << format_cost_params(loaded[r]);
  }

  // 3. A corrupt file: ignored with a WARN, measured again, and replaced by a valid one.
  std::ofstream(path) << "{\"format\": \"plexus-cost-model\", \"version\": ";
  const auto remeasured = run_ranks(3, body, &results, &messages);
  for (int r = 0; r < 3; ++r) {
    ASSERT_EQ(results[r], PLX_SUCCESS) << messages[r];
    EXPECT_TRUE(same(remeasured[r], remeasured[0])) << r;
  }
  ASSERT_TRUE(read_cost_cache(path, "node/7", "thread", &cached, &why)) << why;
  EXPECT_TRUE(same(cached, remeasured[0]));
}

TEST(LoadOrMeasureTest, OneRankUsesTheCacheOrDefaults) {
  test::TempDir dir("plexus-cost");
  ScopedEnv cache("PLEXUS_CACHE_DIR", dir.path());
  ScopedEnv model("PLEXUS_COST_MODEL", std::nullopt);
  test::ThreadWorld world(1);
  CostParams params;
  ASSERT_EQ(load_or_measure(world.transport(0), 0, "solo", &params), PLX_SUCCESS) << last_error();
  EXPECT_TRUE(same(params, kDefaultCostParams));
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));  // defaults are not cached
  const CostParams planted{1e-6, 2e-10, 3e-11};
  std::string why;
  ASSERT_TRUE(write_cost_cache(dir.path() + "/" + cost_cache_file_name("solo", "thread"), "solo",
                               "thread", planted, &why))
      << why;
  ASSERT_EQ(load_or_measure(world.transport(0), 0, "solo", &params), PLX_SUCCESS) << last_error();
  EXPECT_TRUE(same(params, planted));
  EXPECT_EQ(load_or_measure(world.transport(0), 0, "solo", nullptr), PLX_ERROR_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace plexus::comm
