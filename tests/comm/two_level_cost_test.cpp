// two_level_cost_test.cpp - unit tests of what the hierarchical algorithms and the two-level cost
// model know about hosts: the host layout (comm/algorithms/host_layout.h), the two-level tree
// (host_tree.h), the link loads of the flat algorithms (comm/tuning/cost_shape.h), the two-level
// formulas against hand-computed values, the choice between flat and hierarchical, the
// five-value PLEXUS_COST_MODEL and cache file, and the two-level measurement on the in-process
// thread transport (every rank must end with identical parameters).
//
// The formula tests use abstract units (alpha 10, beta 1, gamma 0.5 per byte within a host;
// alpha 100, beta 10 between hosts) so each expected value is small arithmetic, worked out in the
// comment beside it.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "comm/algorithms/host_layout.h"
#include "comm/algorithms/hierarchical_segments.h"
#include "comm/algorithms/host_tree.h"
#include "comm/base/error.h"
#include "comm/transport/tag.h"
#include "comm/tuning/algo_override.h"
#include "comm/tuning/algorithm_id.h"
#include "comm/tuning/cost_cache.h"
#include "comm/tuning/cost_model.h"
#include "comm/tuning/cost_shape.h"
#include "comm/tuning/hierarchical_cost.h"
#include "comm/tuning/measure.h"
#include "tests/support/temp_dir.h"
#include "tests/support/thread_transport.h"
#include "tests/topology/scoped_env.h"

namespace plexus::comm {
namespace {

using A = AlgorithmId;
using C = Collective;
using test::ScopedEnv;
using Ids = std::vector<std::string>;

HostLayout layout_of(const Ids& ids) { return host_layout(ids); }
CostShape shape_of(const Ids& ids) { return cost_shape(host_layout(ids)); }

// ---- host layout ---------------------------------------------------------------------------

TEST(HostLayoutTest, UnevenInterleavedHostsAsInTheHeader) {
  const HostLayout l = layout_of({"A", "A", "B", "A", "B"});
  EXPECT_EQ(l.hosts, (std::vector<std::vector<int>>{{0, 1, 3}, {2, 4}}));
  EXPECT_EQ(l.host_of, (std::vector<int>{0, 0, 1, 0, 1}));
  EXPECT_EQ(l.local_rank, (std::vector<int>{0, 1, 0, 2, 1}));
  EXPECT_EQ(l.rails, (std::vector<std::vector<int>>{{0, 2}, {1, 4}, {3}}));
  EXPECT_EQ(l.size(), 5);
  EXPECT_EQ(l.host_count(), 2);
  EXPECT_EQ(l.max_local(), 3);
  EXPECT_EQ(l.min_local(), 2);
  EXPECT_EQ(l.local_size(4), 2);
  // Lanes: B stands in for its missing local rank 2 with local rank 2 mod 2 = 0 (rank 2).
  EXPECT_EQ(l.lane_group(0), (std::vector<int>{0, 2}));
  EXPECT_EQ(l.lane_group(1), (std::vector<int>{1, 4}));
  EXPECT_EQ(l.lane_group(2), (std::vector<int>{3, 2}));
}

TEST(HostLayoutTest, HostsAreOrderedByFirstRankWhateverTheirNames) {
  const HostLayout l = layout_of({"zeta", "alpha", "zeta", "mid", "alpha"});
  EXPECT_EQ(l.hosts, (std::vector<std::vector<int>>{{0, 2}, {1, 4}, {3}}));
  EXPECT_EQ(l.rails, (std::vector<std::vector<int>>{{0, 1, 3}, {2, 4}}));
  EXPECT_EQ(l.lane_group(1), (std::vector<int>{2, 4, 3}));
  EXPECT_EQ(l.min_local(), 1);
}

TEST(HostLayoutTest, SingleHostAndEmptyLayouts) {
  const HostLayout one = single_host_layout(3);
  EXPECT_EQ(one.hosts, (std::vector<std::vector<int>>{{0, 1, 2}}));
  EXPECT_EQ(one.rails, (std::vector<std::vector<int>>{{0}, {1}, {2}}));
  const HostLayout none = layout_of({});
  EXPECT_EQ(none.size(), 0);
  EXPECT_EQ(none.host_count(), 0);
  EXPECT_EQ(none.max_local(), 0);
  EXPECT_EQ(none.min_local(), 0);
}

TEST(HostLayoutTest, ResolveNamesTheAlgorithmAndRankOnAMismatch) {
  HostLayout fallback;
  const HostLayout* used = nullptr;
  ASSERT_EQ(resolve_layout(nullptr, 4, 1, "x", &fallback, &used), PLX_SUCCESS);
  EXPECT_EQ(used, &fallback);
  EXPECT_EQ(fallback.hosts, (std::vector<std::vector<int>>{{0, 1, 2, 3}}));
  const HostLayout three = layout_of({"A", "B", "A"});
  ASSERT_EQ(resolve_layout(&three, 3, 0, "x", &fallback, &used), PLX_SUCCESS);
  EXPECT_EQ(used, &three);
  EXPECT_EQ(resolve_layout(&three, 4, 2, "hierarchical_reduce", &fallback, &used),
            PLX_ERROR_INTERNAL);
  EXPECT_STREQ(last_error(), "hierarchical_reduce: rank 2: the host layout describes 3 ranks, "
                             "the communicator has 4");
}

// ---- the two-level tree --------------------------------------------------------------------

TEST(HostTreeTest, ChainOfLeadersThenBinomialHostsAsDrawn) {
  // host_tree.h's picture: A [0 1 2], B [3 4], C [5 6 7], root 1.
  const HostLayout l = layout_of({"A", "A", "A", "B", "B", "C", "C", "C"});
  const HostTree chain = host_tree(l, 1, LeaderShape::Chain);
  EXPECT_EQ(chain.parent, (std::vector<int>{1, -1, 1, 4, 1, 6, 4, 6}));
  EXPECT_EQ(chain.children[1], (std::vector<int>{4, 0, 2}));  // next leader first
  EXPECT_EQ(chain.children[4], (std::vector<int>{6, 3}));
  EXPECT_EQ(chain.children[6], (std::vector<int>{5, 7}));
  // One slice: the leaders form a binomial tree too (1 -> 4, 1 -> 6).
  const HostTree binomial = host_tree(l, 1, LeaderShape::Binomial);
  EXPECT_EQ(binomial.parent[6], 1);
  EXPECT_EQ(binomial.parent[4], 1);
  EXPECT_EQ(binomial.children[1], (std::vector<int>{6, 4, 0, 2}));
}

TEST(HostTreeTest, ShortHostsLeadWithTheLaneModuloTheirSize) {
  // Root 3 has local rank 2; host B (2 ranks) is led by local rank 0 (rank 2).
  const HostLayout l = layout_of({"A", "A", "B", "A", "B"});
  const HostTree tree = host_tree(l, 3, LeaderShape::Chain);
  EXPECT_EQ(tree.parent, (std::vector<int>{3, 3, 3, -1, 2}));
  // One host: the binomial tree of binomial_tree.h, relative to the root.
  const HostTree one = host_tree(single_host_layout(7), 2, LeaderShape::Chain);
  // Relative ranks v = 0..6 are 2 3 4 5 6 0 1; v = 5, 6 hang below v = 4 (rank 6).
  EXPECT_EQ(one.parent, (std::vector<int>{6, 6, -1, 2, 2, 4, 2}));
}

// ---- link loads ----------------------------------------------------------------------------

TEST(CostShapeTest, OneHostHasNoLoads) {
  const CostShape s = shape_of({"A", "A", "A"});
  EXPECT_FALSE(s.multi_host());
  EXPECT_EQ(s.nranks, 3);
  EXPECT_EQ(s.max_local, 3);
  EXPECT_EQ(s.ring, 0);
  EXPECT_TRUE(s.halving.empty());
  const CostShape flat = flat_cost_shape(5);
  EXPECT_EQ(flat.nranks, 5);
  EXPECT_EQ(flat.local_sizes, (std::vector<int>{5}));
}

TEST(CostShapeTest, ContiguousAndInterleavedHosts) {
  // 2x2 host by host: the ring leaves each host once; halving crosses at distance 2 only.
  const CostShape s = shape_of({"A", "A", "B", "B"});
  EXPECT_TRUE(s.multi_host());
  EXPECT_EQ(s.ring, 1);
  EXPECT_EQ(s.halving, (std::vector<int>{0, 2}));
  EXPECT_EQ(s.fold, 0);
  EXPECT_EQ(s.binomial, (std::vector<int>{0, 1}));  // round 1: 2 -> 0
  EXPECT_EQ(s.doubling, (std::vector<int>{1, 2}));
  EXPECT_EQ(s.root_host_ranks, 2);
  // Pairwise steps +1 and +3 send one message off each host, +2 two.
  EXPECT_EQ(s.pairwise, (std::vector<int>{0, 2, 1}));
  // Interleaved: every ring edge crosses, halving crosses at distance 1.
  const CostShape i = shape_of({"A", "B", "A", "B"});
  EXPECT_EQ(i.ring, 2);
  EXPECT_EQ(i.halving, (std::vector<int>{2, 0}));
  // Uneven 3 + 2 interleaved: p2 = 4, rank 1 folds into 0 (same host), survivors 0 2 3 4.
  const CostShape u = shape_of({"A", "A", "B", "A", "B"});
  EXPECT_EQ(u.fold, 0);
  EXPECT_EQ(u.halving, (std::vector<int>{2, 0}));
  EXPECT_EQ(u.local_sizes, (std::vector<int>{2, 3}));
  EXPECT_EQ(u.min_local, 2);
  int steps = 0;
  for (int c : u.pairwise) steps += c;
  EXPECT_EQ(steps, 4);
}

// Links per host: the fewest distinct NICs any host's ranks opened; unknown or a list that does
// not cover the layout gives 1.
TEST(CostShapeTest, NicsInUseCountsEachHostsDistinctNics) {
  const std::vector<std::string> ids = {"A", "A", "B", "B"}, interleaved = {"A", "B", "A", "B"};
  const HostLayout two_by_two = host_layout(ids);
  EXPECT_EQ(nics_in_use(two_by_two, {"eth0", "eth1", "eth0", "eth1"}), 2);  // two rails
  EXPECT_EQ(nics_in_use(two_by_two, {"eth0", "eth0", "eth0", "eth0"}), 1);  // one NIC each
  EXPECT_EQ(nics_in_use(two_by_two, {"eth0", "eth1", "eth0", "eth0"}), 1);  // host B has one
  EXPECT_EQ(nics_in_use(two_by_two, {"eth0", "", "eth0", "eth1"}), 1);      // one unknown
  EXPECT_EQ(nics_in_use(two_by_two, {}), 1);                                // none known
  EXPECT_EQ(nics_in_use(two_by_two, {"eth0", "eth1"}), 1);                  // too short
  // Interleaved ranks: hosts as host_layout groups them (A = ranks 0 and 2, each with e0 and e1
  // here), not by contiguous rank order (which would pair e0 with e0).
  EXPECT_EQ(nics_in_use(host_layout(interleaved), {"e0", "e0", "e1", "e1"}), 2);
  // p5-like: 8 ranks of each host on 8 NICs.
  std::vector<std::string> hosts, nics;
  for (int h = 0; h < 2; ++h) {
    for (int r = 0; r < 8; ++r) {
      hosts.push_back(h == 0 ? "A" : "B");
      nics.push_back("rdmap" + std::to_string(r));
    }
  }
  EXPECT_EQ(nics_in_use(host_layout(hosts), nics), 8);
}

// ---- two-level formulas --------------------------------------------------------------------

// Within a host alpha 10, beta 1, gamma 0.5; between hosts alpha 100, beta 10.
constexpr CostParams kTwo{10, 1, 0.5, 100, 10};

TEST(TwoLevelModelTest, FlatRingPaysTheNetworkOnEveryStep) {
  // 2x2, m = 1000, no slicing: 2*3*100 + 2*3/4*1000*10 + 3/4*1000*0.5 = 600 + 15000 + 375
  EXPECT_DOUBLE_EQ(predict_seconds(A::AllreduceRing, 1000, shape_of({"A", "A", "B", "B"}), kTwo, 0),
                   15975);
  // Interleaved: two ring edges leave each host, beta 2*10: 600 + 30000 + 375
  EXPECT_DOUBLE_EQ(predict_seconds(A::AllreduceRing, 1000, shape_of({"A", "B", "A", "B"}), kTwo, 0),
                   30975);
  // rabenseifner 2x2: step d=2 crosses (load 2) with m/2, step d=1 stays: 2*(100 + 500*20) +
  // 2*(10 + 250*1) + 3/4*1000*0.5 = 20200 + 520 + 375
  EXPECT_DOUBLE_EQ(
      predict_seconds(A::AllreduceRabenseifner, 1000, shape_of({"A", "A", "B", "B"}), kTwo, 0),
      21095);
}

TEST(TwoLevelModelTest, HierarchicalAllreduceMatchesHandValue) {
  // 2x2, m = 1000: M = 2 lanes of y = 500, q = 1.
  //   intra reduce-scatter  1 step * (10 + 500 * 1.5)           = 760
  //   lanes                 2*1*100 + max(2*500*10, 500*10) + 1/2*500*0.5 = 200 + 10000 + 125
  //   intra allgather       10 + 500                             = 510
  //   two boundaries        2 * 10
  EXPECT_DOUBLE_EQ(
      predict_seconds(A::AllreduceHierarchical, 1000, shape_of({"A", "A", "B", "B"}), kTwo, 0),
      11615);
  // Two NICs per host: the lanes no longer share one link: 500*10 instead of 2*500*10.
  CostShape nics = shape_of({"A", "A", "B", "B"});
  nics.nics_per_host = 2;
  EXPECT_DOUBLE_EQ(predict_seconds(A::AllreduceHierarchical, 1000, nics, kTwo, 0), 6615);
}

// The lanes' schedule (hierarchical_cost.h): recursive halving and doubling where its fewer
// latencies win by 10 % or more, the ring otherwise, and the ring on two hosts and with
// one-level parameters.
TEST(TwoLevelModelTest, LanesHalveWhereTheirLatenciesOutweighTheRingsBytes) {
  // 4x2, m = 1000, no slicing: M = 2 lanes of y = 500 sharing one link (lane_beta(B) = 20 B),
  // intra phases and boundaries 760 + 510 + 20 as on 2x2 above.
  //   ring     2*3*100 + 20*(2*3/4*500) + 3/4*500*0.5       = 600 + 15000 + 187.5
  //   halving  P = 4: 2*2*100 + 20*(2*3/4*500) + 3/4*500*0.5 = 400 + 15000 + 187.5
  const CostShape four = shape_of({"A", "A", "B", "B", "C", "C", "D", "D"});
  const TwoLevelParams two{.alpha_intra = 10, .beta_intra = 1, .alpha_inter = 100,
                           .beta_inter = 10, .gamma = 0.5, .shared_link = true};
  EXPECT_DOUBLE_EQ(hierarchical_allreduce_parts(1000, four, two, 0, false).total(), 17077.5);
  EXPECT_DOUBLE_EQ(hierarchical_allreduce_parts(1000, four, two, 0, true).total(), 16877.5);
  // 1 % less is within the margin: the ring.
  EXPECT_DOUBLE_EQ(predict_seconds(A::AllreduceHierarchical, 1000, four, kTwo, 0), 17077.5);
  EXPECT_FALSE(hierarchical_lane_plan(1000, four, kTwo, 0).halving);
  // m = 10 (y = 5): ring 17.5 + (600 + 150 + 1.875) + 15 + 20 = 804.375, halving 604.375.
  EXPECT_DOUBLE_EQ(predict_seconds(A::AllreduceHierarchical, 10, four, kTwo, 0), 604.375);
  EXPECT_TRUE(hierarchical_lane_plan(10, four, kTwo, 0).halving);
  EXPECT_TRUE(hierarchical_allreduce_parts(10, four, two, 0).lane_halving);
  // 5x2: P = 4 and one pair outside it, whose hosts move the whole block twice more:
  //   ring     2*4*100 + 20*(2*4/5*500) + 4/5*500*0.5                 = 800 + 16000 + 200
  //   halving  (2*2 + 2)*100 + 20*(2*3/4*500 + 2*500) + (3/4 + 1)*500*0.5 = 600 + 35000 + 437.5
  const CostShape five = shape_of({"A", "A", "B", "B", "C", "C", "D", "D", "E", "E"});
  EXPECT_DOUBLE_EQ(hierarchical_allreduce_parts(1000, five, two, 0, false).network.total(), 17000);
  EXPECT_DOUBLE_EQ(hierarchical_allreduce_parts(1000, five, two, 0, true).network.total(),
                   36037.5);
  EXPECT_FALSE(hierarchical_lane_plan(1000, five, kTwo, 0).halving);
  // ... but with a tiny block the latencies decide: m = 2 (y = 1), ring 11.5 + 832.4 + 11 + 20,
  // halving 11.5 + 670.875 + 11 + 20.
  EXPECT_DOUBLE_EQ(hierarchical_allreduce_parts(2, five, two, 0, false).total(), 874.9);
  EXPECT_DOUBLE_EQ(hierarchical_allreduce_parts(2, five, two, 0, true).total(), 713.375);
  EXPECT_TRUE(hierarchical_lane_plan(2, five, kTwo, 0).halving);
  // Two hosts: the same two steps and bytes either way; the ring.
  EXPECT_FALSE(hierarchical_lane_plan(2, shape_of({"A", "A", "B", "B"}), kTwo, 0).halving);
  // One rank per host runs the flat ring; one host has no lanes.
  EXPECT_FALSE(hierarchical_lane_plan(2, shape_of({"A", "B", "C", "D"}), kTwo, 0).halving);
  EXPECT_FALSE(hierarchical_lane_plan(2, shape_of({"A", "A", "A", "A"}), kTwo, 0).halving);
  // One-level parameters price one segment where the run cuts several: never halving.
  EXPECT_FALSE(hierarchical_lane_plan(2, four, CostParams{10, 1, 0.5}, 16384).halving);
  EXPECT_FALSE(hierarchical_lane_plan(2, four, CostParams{10, 1, 0.5}, 0).halving);
  // Sliced, halving segments hold two lane steps per lane, the ring's K: with a 1 KiB chunk (the
  // lane step here: 8 alpha / beta is 80 bytes, the floor 256 KiB), 64 KiB on 4x2 is 16
  // segments of 4 KiB against the ring's 8 of 8 KiB.
  EXPECT_DOUBLE_EQ(hierarchical_allreduce_parts(65536, four, two, 1024, true).segments, 16);
  EXPECT_DOUBLE_EQ(hierarchical_allreduce_parts(65536, four, two, 1024, false).segments, 8);
  EXPECT_EQ(lane_steps_per_block(true, 4), 2u);
  EXPECT_EQ(lane_steps_per_block(false, 4), 4u);
}

// Halving lanes on K hosts, not a power of two, fold a paired host's block in and send the
// result back out: a lone segment pays both in turn, the pipeline's steady stage one, since a
// segment's return crosses the other way beside the next one's fold (the emulated 3 x 2 cluster
// ran 1-16 MiB at 0.67-0.78 of the price that charged both). 5x2, 1 KiB chunk, 64 KiB: 16
// segments of two 1 KiB steps per lane, y = 2048, lane_beta(b) = 2 lanes x 10 b on one link.
TEST(TwoLevelModelTest, HalvingLanesReturnTheFoldedBlocksBesideTheNextSegment) {
  const TwoLevelParams two{.alpha_intra = 10, .beta_intra = 1, .alpha_inter = 100,
                           .beta_inter = 10, .gamma = 0.5, .shared_link = true};
  const CostShape five = shape_of({"A", "A", "B", "B", "C", "C", "D", "D", "E", "E"});
  const HierarchicalAllreduceParts halving =
      hierarchical_allreduce_parts(65536, five, two, 1024, true);
  ASSERT_DOUBLE_EQ(halving.segments, 16);
  // One segment: 2(P-1)/P y + 2 y = 3.5 y; the steady stage 2.5 y.
  EXPECT_DOUBLE_EQ(halving.network.bytes, 20 * 3.5 * 2048);
  EXPECT_DOUBLE_EQ(halving.network_return_bytes, 20 * 2048);
  EXPECT_DOUBLE_EQ(halving.network_link(), 20 * 2.5 * 2048);
  EXPECT_DOUBLE_EQ(halving.network_stage(),
                   std::max(20 * 2.5 * 2048, halving.network.total() / halving.in_flight));
  EXPECT_DOUBLE_EQ(halving.total(),
                   halving.host() + halving.network.total() + halving.boundaries +
                       15 * std::max(halving.host(), halving.network_stage()));
  // Hosts a power of two fold nothing; the ring returns nothing.
  const CostShape four = shape_of({"A", "A", "B", "B", "C", "C", "D", "D"});
  EXPECT_DOUBLE_EQ(hierarchical_allreduce_parts(65536, four, two, 1024, true)
                       .network_return_bytes, 0);
  EXPECT_DOUBLE_EQ(hierarchical_allreduce_parts(65536, five, two, 1024, false)
                       .network_return_bytes, 0);
}

// PLEXUS_HIERARCHICAL_LANES (CostShape::lanes): a forced schedule is priced and planned
// against the margin wherever halving may run; two hosts, one rank per host and one-level
// parameters (whose price has one segment) keep the ring.
TEST(TwoLevelModelTest, LanesForcedByTheUserArePricedAndPlanned) {
  CostShape four = shape_of({"A", "A", "B", "B", "C", "C", "D", "D"});
  const TwoLevelParams two{.alpha_intra = 10, .beta_intra = 1, .alpha_inter = 100,
                           .beta_inter = 10, .gamma = 0.5, .shared_link = true};
  // m = 1000: the model keeps the ring (17077.5; halving 16877.5, within the margin).
  four.lanes = LaneSchedule::Halving;
  EXPECT_DOUBLE_EQ(predict_seconds(A::AllreduceHierarchical, 1000, four, kTwo, 0), 16877.5);
  EXPECT_TRUE(hierarchical_lane_plan(1000, four, kTwo, 0).halving);
  EXPECT_TRUE(hierarchical_allreduce_parts(1000, four, two, 0).lane_halving);
  EXPECT_FALSE(hierarchical_lane_plan(2, four, CostParams{10, 1, 0.5}, 16384).halving);
  // m = 10: the model halves (604.375; the ring 804.375).
  four.lanes = LaneSchedule::Ring;
  EXPECT_DOUBLE_EQ(predict_seconds(A::AllreduceHierarchical, 10, four, kTwo, 0), 804.375);
  EXPECT_FALSE(hierarchical_lane_plan(10, four, kTwo, 0).halving);
  four.lanes = LaneSchedule::Auto;
  EXPECT_TRUE(hierarchical_lane_plan(10, four, kTwo, 0).halving);
  for (const Ids& ids : {Ids{"A", "A", "B", "B"}, Ids{"A", "B", "C", "D"}}) {
    CostShape shape = shape_of(ids);
    shape.lanes = LaneSchedule::Halving;
    EXPECT_FALSE(hierarchical_lane_plan(2, shape, kTwo, 0).halving) << ids.size();
  }

  LaneSchedule lanes = LaneSchedule::Auto;
  ASSERT_EQ(parse_lane_schedule(" halving ", 0, &lanes), PLX_SUCCESS);
  EXPECT_EQ(lanes, LaneSchedule::Halving);
  ASSERT_EQ(parse_lane_schedule("ring", 0, &lanes), PLX_SUCCESS);
  EXPECT_EQ(lanes, LaneSchedule::Ring);
  for (const char* automatic : {"", "auto"}) {
    ASSERT_EQ(parse_lane_schedule(automatic, 0, &lanes), PLX_SUCCESS);
    EXPECT_EQ(lanes, LaneSchedule::Auto);
  }
  lanes = LaneSchedule::Ring;
  EXPECT_EQ(parse_lane_schedule("tree", 3, &lanes), PLX_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(last_error(),
               "PLEXUS_HIERARCHICAL_LANES=\"tree\": rank 3: not one of auto, ring, halving");
  EXPECT_EQ(lanes, LaneSchedule::Ring);  // untouched
  {
    ScopedEnv env("PLEXUS_HIERARCHICAL_LANES", "halving");
    ASSERT_EQ(lane_schedule_from_env(0, &lanes), PLX_SUCCESS);
    EXPECT_EQ(lanes, LaneSchedule::Halving);
  }
}

// The pipelined allreduce's intra-host ring slice (hierarchical_segments.h): the chunk, or 8
// latencies' worth of bytes where that is more, at most 64 MiB.
TEST(TwoLevelModelTest, IntraHostSliceFollowsTheHostsLinkAsTheLaneStepDoes) {
  constexpr size_t KiB = 1024, MiB = 1024 * KiB;
  // NVLink (2 us, 450 GB/s): 7.2 MB.
  EXPECT_NEAR(static_cast<double>(hierarchical_intra_slice_bytes(MiB, 2e-6, 1 / 450e9)), 7.2e6,
              1);
  // This VM's shared memory (2.05 us, 0.136 ns/B): 120 kB, below the chunk, which stays.
  EXPECT_EQ(hierarchical_intra_slice_bytes(MiB, 2.05e-6, 0.136e-9), MiB);
  // A larger chunk wins; no slicing stays none; unknown or absurd parameters leave the chunk or
  // stop at 64 MiB.
  EXPECT_EQ(hierarchical_intra_slice_bytes(16 * MiB, 2e-6, 1 / 450e9), 16 * MiB);
  EXPECT_EQ(hierarchical_intra_slice_bytes(0, 2e-6, 1 / 450e9), 0u);
  EXPECT_EQ(hierarchical_intra_slice_bytes(MiB, 0, 1e-9), MiB);
  EXPECT_EQ(hierarchical_intra_slice_bytes(MiB, 1, 1e-30), kMaxIntraSliceBytes);
  // The allreduce's intra rings are priced in those slices: 2x2 without peer memory, chunk
  // 64 bytes, alpha_i 100, beta_i 1 (800-byte slices). The lane step is the 64-byte chunk, so
  // 1000 bytes are 4 segments of 2 blocks of 125 bytes: one slice per ring step, not two.
  const CostShape two = shape_of({"A", "A", "B", "B"});
  const TwoLevelParams p{.alpha_intra = 100, .beta_intra = 1, .alpha_inter = 100,
                         .beta_inter = 10, .gamma = 0.5, .shared_link = true};
  const HierarchicalAllreduceParts parts = hierarchical_allreduce_parts(1000, two, p, 64, false);
  EXPECT_DOUBLE_EQ(parts.segments, 4);
  EXPECT_DOUBLE_EQ(parts.reduce_scatter.latency, 100);
  EXPECT_DOUBLE_EQ(parts.allgather.latency, 100);
}

// The pipelined allreduce's lane step (hierarchical_segments.h), shared by the algorithm and
// the model: one eager message where D l E beta_e >= 8 alpha_e (D = 3 segments in flight, l
// lanes per link, E the eager limit), else min(chunk, max(256 KiB, 8 alpha_e / beta_e)).
TEST(TwoLevelModelTest, LaneStepFollowsTheLinksLatencyAgainstItsRate) {
  constexpr size_t KiB = 1024, MiB = 1024 * KiB;
  // p5: 10 us at 50 GB/s per link, 8 alpha/beta = 4 MB: the 1 MiB chunk.
  EXPECT_EQ(hierarchical_lane_step_bytes(MiB, 10e-6, 2e-11, 0, 1), MiB);
  // ... and 4,000,000 bytes with a larger chunk.
  EXPECT_NEAR(static_cast<double>(hierarchical_lane_step_bytes(64 * MiB, 10e-6, 2e-11, 0, 1)),
              4e6, 1);
  // The emulated 2 Gbit/s hosts (alpha 16.9 us, beta 3.18 ns/B: 42.5 KB) with no eager limit
  // known: the 256 KiB floor.
  EXPECT_EQ(hierarchical_lane_step_bytes(MiB, 16.9e-6, 3.18e-9, 0, 1), 256 * KiB);
  // No two-level model: the floor, eager limit or not; a smaller chunk wins over the floor.
  EXPECT_EQ(hierarchical_lane_step_bytes(MiB, 0, 0, 0, 1), 256 * KiB);
  EXPECT_EQ(hierarchical_lane_step_bytes(MiB, 0, 0, 16256, 2), 256 * KiB);
  EXPECT_EQ(hierarchical_lane_step_bytes(64 * KiB, 10e-6, 2e-11, 0, 1), 64 * KiB);
  EXPECT_EQ(hierarchical_lane_step_bytes(0, 0, 0, 0, 0), 1u);
  // Absurd parameters stay finite: the chunk.
  EXPECT_EQ(hierarchical_lane_step_bytes(MiB, 1e9, 1e-30, 0, 1), MiB);
  EXPECT_EQ(hierarchical_segment_bytes(256 * KiB, 2, 2), MiB);
}

// The longest lane step the model may take (hierarchical_segments.h
// hierarchical_lane_step_limit): 16 MiB where the transport has no eager limit and the second
// rule capped the step at the chunk on a link whose 8 alpha / beta exceeds the chunk and 1 MiB;
// the step itself everywhere else.
TEST(TwoLevelModelTest, LaneStepMayGrowOnlyOnRdmaClassLinks) {
  constexpr size_t KiB = 1024, MiB = 1024 * KiB;
  constexpr size_t kEager = 16 * KiB - 128;
  // p5 (10 us, 50 GB/s: 4 MB) with the 1 MiB chunk: up to 16 MiB.
  EXPECT_EQ(hierarchical_lane_step_limit(MiB, 10e-6, 2e-11, 0, 1), kMaxLaneStepBytes);
  EXPECT_EQ(kMaxLaneStepBytes, 16 * MiB);
  // ... but a chunk above its 4 MB keeps the 4 MB step.
  EXPECT_NEAR(static_cast<double>(hierarchical_lane_step_limit(64 * MiB, 10e-6, 2e-11, 0, 1)),
              4e6, 1);
  // The emulated links: 2 Gbit/s (42.5 KB) keeps the 256 KiB floor; 10 Gbit/s at 32.7 us
  // (327 KB) keeps its step even with a 64 KiB chunk (below 1 MiB); 1 Gbit/s takes eager steps.
  EXPECT_EQ(hierarchical_lane_step_limit(MiB, 16.9e-6, 3.18e-9, 0, 1), 256 * KiB);
  EXPECT_EQ(hierarchical_lane_step_limit(64 * KiB, 32.7e-6, 0.8e-9, kEager, 1), 64 * KiB);
  EXPECT_EQ(hierarchical_lane_step_limit(MiB, 32.7e-6, 8.35e-9, kEager, 2), kEager);
  // Over ofi_rxm (an eager limit) nothing grows, eager steps or not: this VM's loopback as once
  // measured (45.08 us, 0.115 ns/B: 3.1 MB, not eager) keeps the chunk.
  EXPECT_EQ(hierarchical_lane_step_limit(MiB, 10e-6, 2e-11, 4 * MiB, 1), MiB);
  EXPECT_EQ(hierarchical_lane_step_limit(MiB, 45.08e-6, 0.115e-9, kEager, 2), MiB);
  EXPECT_EQ(hierarchical_lane_step_limit(MiB, 45.08e-6, 0.115e-9, 0, 2), kMaxLaneStepBytes);
  // No model keeps the floor.
  EXPECT_EQ(hierarchical_lane_step_limit(MiB, 0, 0, 0, 1), 256 * KiB);
}

// The plan (hierarchical_cost.h): the lane step s or a power of two times it, up to the limit,
// whichever prices fastest; the run takes it from hierarchical_lane_plan.
TEST(TwoLevelModelTest, LanePlanTakesTheLongerStepWherePricedFaster) {
  const CostShape two = shape_of({"A", "A", "B", "B"});
  // 8 alpha_e / beta_e = 8e7 bytes, above the 1000-byte chunk and 1 MiB: s = 1000, limit
  // 16 MiB. 8000 bytes are 2 segments of M K s = 4000 at s, one of 8000 at 2s; with a
  // latency of 1e7 per lane step the one segment (2 latencies, not 2 + 2/2 for the pipeline
  // stage) wins.
  const TwoLevelParams slow{.alpha_intra = 10, .beta_intra = 1, .alpha_inter = 1e7,
                            .beta_inter = 1, .gamma = 0.5, .shared_link = true};
  const HierarchicalAllreduceParts at_s =
      hierarchical_allreduce_parts(8000, two, slow, 1000, false);
  EXPECT_EQ(at_s.lane_step_bytes, 1000u);
  EXPECT_DOUBLE_EQ(at_s.segments, 2);
  const HierarchicalAllreduceParts plan = hierarchical_allreduce_parts(8000, two, slow, 1000);
  EXPECT_EQ(plan.lane_step_bytes, 2000u);
  EXPECT_DOUBLE_EQ(plan.segments, 1);
  EXPECT_FALSE(plan.lane_halving);
  // One message per step although the step (4000 bytes per lane, 2000 per shard) is past the
  // chunk: 2 (K - 1) = 2 latencies.
  EXPECT_DOUBLE_EQ(plan.network.latency, 2e7);
  EXPECT_LT(plan.total(), at_s.total());
  constexpr CostParams kSlow{10, 1, 0.5, 1e7, 1};
  EXPECT_DOUBLE_EQ(predict_seconds(A::AllreduceHierarchical, 8000, two, kSlow, 1000),
                   plan.total());
  const HierarchicalLanePlan run = hierarchical_lane_plan(8000, two, kSlow, 1000);
  EXPECT_EQ(run.step_bytes, 2000u);
  EXPECT_FALSE(run.halving);
  // The emulated-link-like model (8 alpha_e / beta_e = 80 bytes) keeps s whatever the size.
  const TwoLevelParams fast{.alpha_intra = 10, .beta_intra = 1, .alpha_inter = 100,
                            .beta_inter = 10, .gamma = 0.5, .shared_link = true};
  EXPECT_EQ(hierarchical_allreduce_parts(8000, two, fast, 1000).lane_step_bytes, 1000u);
  EXPECT_EQ(hierarchical_lane_plan(8000, two, kTwo, 1000).step_bytes, 1000u);
  // One-level parameters: the rule's step without a two-level model, the 256 KiB floor or a
  // smaller chunk.
  EXPECT_EQ(hierarchical_lane_plan(8000, two, CostParams{10, 1, 0.5}, 1000).step_bytes, 1000u);
  EXPECT_EQ(hierarchical_lane_plan(8000, two, CostParams{10, 1, 0.5}, 1 << 20).step_bytes,
            size_t{256} << 10);
  // One rank per host (the flat ring) and one host: no plan.
  EXPECT_EQ(hierarchical_lane_plan(8000, shape_of({"A", "B"}), kTwo, 1000).step_bytes, 0u);
  EXPECT_EQ(hierarchical_lane_plan(8000, shape_of({"A", "A"}), kTwo, 1000).step_bytes, 0u);
}

// The pipeline's network stage (hierarchical_cost.h): the lanes of the segments in flight
// overlap their latencies and reductions with the link's bytes.
TEST(TwoLevelModelTest, NetworkStageSharesItsLatencyAmongTheSegmentsInFlight) {
  HierarchicalAllreduceParts parts;
  parts.segments = 10;
  parts.in_flight = 3;
  parts.reduce_scatter = PhaseCost{1, 2, 0};
  parts.allgather = PhaseCost{1, 2, 0};  // host stage 6
  parts.boundaries = 2;
  // Network 30 + 50 + 10 = 90 per segment; a third is 30 < the bytes' 50: the link's 50.
  parts.network = PhaseCost{30, 50, 10};
  EXPECT_DOUBLE_EQ(parts.network_stage(), 50);
  EXPECT_DOUBLE_EQ(parts.total(), 6 + 90 + 2 + 9 * 50);
  // Latency-heavy: 300 + 50 + 10 = 360, a third 120 > 50.
  parts.network = PhaseCost{300, 50, 10};
  EXPECT_DOUBLE_EQ(parts.network_stage(), 120);
  EXPECT_DOUBLE_EQ(parts.total(), 6 + 360 + 2 + 9 * 120);
  // One segment in flight: the serial sum, as before.
  parts.in_flight = 1;
  EXPECT_DOUBLE_EQ(parts.network_stage(), 360);
  EXPECT_DOUBLE_EQ(parts.total(), 6 + 360 + 2 + 9 * 360);
  // A host stage slower than the network's share bounds the pipeline.
  parts.in_flight = 3;
  parts.reduce_scatter = PhaseCost{100, 100, 0};  // host stage 200 + 3 = 203
  EXPECT_DOUBLE_EQ(parts.total(), 203 + 360 + 2 + 9 * 203);
  // bytes_total (the bound) is unchanged by the overlap: host bytes 2 + 100, network 50.
  EXPECT_DOUBLE_EQ(parts.bytes_total(), 102 + 50 + 9 * 102);
}

// The segment count's cap, shared by the run and the model: 1024, or what the tag windows hold.
TEST(TwoLevelModelTest, SegmentCapFollowsTheTagWindows) {
  EXPECT_EQ(hierarchical_max_segments(2, 2), kMaxHierarchicalSegments);
  EXPECT_EQ(hierarchical_max_segments(8, 128), kMaxHierarchicalSegments);
  // 16 lanes across 1000 hosts: windows of 2000 indices, 18 per segment: 466.
  EXPECT_EQ(hierarchical_max_segments(16, 1000), 466u);
  EXPECT_EQ(hierarchical_max_segments(1000, 10000000), 1u);
}

TEST(TwoLevelModelTest, LaneStepIsOneEagerMessageWhereTheyKeepTheLinkBusy) {
  constexpr size_t KiB = 1024, MiB = 1024 * KiB;
  constexpr size_t kEager = 16 * KiB - 128;  // tcp;ofi_rxm's, ofi/eager_limit.h
  // The emulated 1 Gbit/s link as measured (alpha 32.7 us, beta 8.35 ns/B): 8 alpha = 262 us;
  // two lanes on one link keep 3 * 2 * 16256 B = 814 us in flight: eager steps.
  EXPECT_EQ(hierarchical_lane_step_bytes(MiB, 32.7e-6, 8.35e-9, kEager, 2), kEager);
  // One lane per link: 3 * 16256 B = 407 us >= 262 us, still eager.
  EXPECT_EQ(hierarchical_lane_step_bytes(MiB, 32.7e-6, 8.35e-9, kEager, 1), kEager);
  // 10 Gbit/s at the same latency (beta 0.8 ns/B): 3 * 16256 B = 39 us < 262 us: the second rule,
  // 8 alpha / beta = 327 KB.
  EXPECT_NEAR(static_cast<double>(hierarchical_lane_step_bytes(MiB, 32.7e-6, 0.8e-9, kEager, 1)),
              327000, 1);
  // ... unless enough lanes share the link: 8 lanes keep 312 us in flight.
  EXPECT_EQ(hierarchical_lane_step_bytes(MiB, 32.7e-6, 0.8e-9, kEager, 8), kEager);
  // p5's links never qualify; a chunk below the eager limit still caps the step.
  EXPECT_EQ(hierarchical_lane_step_bytes(MiB, 10e-6, 2e-11, kEager, 1), MiB);
  EXPECT_EQ(hierarchical_lane_step_bytes(8 * KiB, 32.7e-6, 8.35e-9, kEager, 2), 8 * KiB);
  // l: the lanes that share one of the links a host's lanes use.
  EXPECT_EQ(lanes_per_link(2, 1), 2u);
  EXPECT_EQ(lanes_per_link(4, 2), 2u);
  EXPECT_EQ(lanes_per_link(3, 2), 2u);
  EXPECT_EQ(lanes_per_link(2, 8), 1u);
  EXPECT_EQ(lanes_per_link(1, 0), 1u);
  EXPECT_EQ(lanes_per_link(0, 0), 1u);
}

TEST(TwoLevelModelTest, HierarchicalBlockCollectivesMatchHandValues) {
  const CostShape s = shape_of({"A", "A", "B", "B"});
  // reduce_scatter, b = 100: intra: 1 step of 2 blocks (2*10 + 200*1.5) = 320; lanes:
  // 1*100 + max(1*2*100*10, 100*10) + 100*0.5 = 100 + 2000 + 50; boundary 10.
  EXPECT_DOUBLE_EQ(predict_seconds(A::ReduceScatterHierarchical, 100, s, kTwo, 0), 2480);
  // allgather: lanes 100 + 2000; intra 2*10 + 200; boundary 10.
  EXPECT_DOUBLE_EQ(predict_seconds(A::AllgatherHierarchical, 100, s, kTwo, 0), 2330);
  // broadcast m = 1000 in one slice: ceil(log2 2) hops each level: (100 + 10000) + (10 + 1000)
  EXPECT_DOUBLE_EQ(predict_seconds(A::BroadcastHierarchical, 1000, s, kTwo, 0), 11110);
  // ... in 10 slices of 100: one network hop (100 + 1000), one host level (10 + 100), then
  // 9 more slices at the network's pace: 1100 + 110 + 9 * 1100
  EXPECT_DOUBLE_EQ(predict_seconds(A::BroadcastHierarchical, 1000, s, kTwo, 100), 11110);
  // reduce in one slice: (10 + 1000 + 500) + (100 + 10000 + 500)
  EXPECT_DOUBLE_EQ(predict_seconds(A::ReduceHierarchical, 1000, s, kTwo, 0), 12110);
  // ... in 10 slices: (1100 + 50) + (110 + 50) + 9 * (1100 + 2 * 50)
  EXPECT_DOUBLE_EQ(predict_seconds(A::ReduceHierarchical, 1000, s, kTwo, 100), 12110);
}

TEST(TwoLevelModelTest, OneLevelParametersKeepTheOneLevelPredictions) {
  // Without inter values the shape changes nothing for the flat algorithms.
  const CostParams one{10, 1, 0.5};
  const CostShape s = shape_of({"A", "B", "A", "B", "A", "C"});
  for (const AlgorithmInfo& info : algorithm_table()) {
    if (info.name == "hierarchical") continue;
    for (size_t bytes : {size_t{0}, size_t{100}, size_t{1} << 20}) {
      EXPECT_EQ(predict_seconds(info.id, bytes, s, one, 4096),
                predict_seconds(info.id, bytes, 6, one, 4096))
          << info.name << " " << bytes;
    }
  }
}

// A plausible two-level cluster: 2 us and 20 GB/s within a host, 25 us and 1.25 GB/s (10 Gbit/s)
// between hosts, reduction at 20 GB/s; 1 MiB slices.
constexpr CostParams kCluster{2e-6, 5e-11, 5e-11, 25e-6, 8e-10};
constexpr size_t kChunk = size_t{1} << 20;

TEST(TwoLevelChoiceTest, LargeAllreduceOnTwoHostsOfTwoIsHierarchical) {
  const CostShape s = shape_of({"A", "A", "B", "B"});
  for (size_t bytes = size_t{16} << 20; bytes <= size_t{1} << 30; bytes *= 4) {
    const AlgorithmChoice choice = choose(C::Allreduce, bytes, s, kCluster, kChunk);
    EXPECT_EQ(choice.algorithm, A::AllreduceHierarchical) << choice.reason;
    // And it beats the flat ring by about the link-bytes ratio 1.5 (issue 7's bound).
    const double ring = predict_seconds(A::AllreduceRing, bytes, s, kCluster, kChunk);
    EXPECT_GT(ring / choice.predicted_s, 1.3) << choice.reason;
  }
  const AlgorithmChoice small = choose(C::Allreduce, 64, s, kCluster, kChunk);
  EXPECT_NE(small.algorithm, A::AllreduceHierarchical) << small.reason;
  EXPECT_EQ(small.reason.rfind("allreduce 64 B x 4 ranks on 2 hosts: ", 0), 0u) << small.reason;
  EXPECT_NE(small.reason.find("between hosts alpha 25 us, beta 0.8 ns/B"), std::string::npos)
      << small.reason;
}

TEST(TwoLevelChoiceTest, EveryLargeCollectiveGoesHierarchicalOnTwoHostsOfFour) {
  // The flat algorithms either cross the network with every ring step (ring, chain) or send
  // their largest steps across it (halving, Bruck); the hierarchical ones cross once per lane.
  const CostShape s = shape_of({"A", "A", "A", "A", "B", "B", "B", "B"});
  const size_t large = size_t{64} << 20;
  EXPECT_EQ(choose(C::Allreduce, large, s, kCluster, kChunk).algorithm, A::AllreduceHierarchical);
  EXPECT_EQ(choose(C::ReduceScatter, large / 8, s, kCluster, kChunk).algorithm,
            A::ReduceScatterHierarchical);
  EXPECT_EQ(choose(C::Allgather, large / 8, s, kCluster, kChunk).algorithm,
            A::AllgatherHierarchical);
  EXPECT_EQ(choose(C::Broadcast, large, s, kCluster, kChunk).algorithm,
            A::BroadcastHierarchical);
  EXPECT_EQ(choose(C::Reduce, large, s, kCluster, kChunk).algorithm, A::ReduceHierarchical);
}

TEST(TwoLevelChoiceTest, InterleavedHostsAvoidTheFlatRing) {
  // Ranks alternate between two hosts: every ring edge crosses (load 4), while recursive
  // halving's large steps (distances 4 and 2) stay inside the hosts, so it moves the same bytes
  // over the network as the hierarchical allreduce; either may win, never the ring.
  const CostShape s = shape_of({"A", "B", "A", "B", "A", "B", "A", "B"});
  EXPECT_EQ(s.ring, 4);
  const size_t large = size_t{64} << 20;
  const AlgorithmChoice choice = choose(C::Allreduce, large, s, kCluster, kChunk);
  EXPECT_TRUE(choice.algorithm == A::AllreduceHierarchical ||
              choice.algorithm == A::AllreduceRabenseifner)
      << choice.reason;
  EXPECT_GT(predict_seconds(A::AllreduceRing, large, s, kCluster, kChunk),
            2.5 * predict_seconds(A::AllreduceHierarchical, large, s, kCluster, kChunk));
}

TEST(TwoLevelChoiceTest, OneHostNeverChoosesHierarchical) {
  for (int n : {2, 3, 4, 5, 8, 16}) {
    const CostShape s = shape_of(Ids(n, "A"));
    for (size_t c = 0; c < kCollectiveCount; ++c) {
      for (size_t bytes = 1; bytes <= size_t{1} << 30; bytes *= 8) {
        const AlgorithmChoice choice = choose(static_cast<C>(c), bytes, s, kCluster, kChunk);
        EXPECT_NE(algorithm_name(choice.algorithm), "hierarchical") << choice.reason;
        // The flat shape and the one-host layout predict alike.
        EXPECT_EQ(choice.predicted_s,
                  choose(static_cast<C>(c), bytes, n, kCluster, kChunk).predicted_s);
      }
    }
  }
}

TEST(TwoLevelChoiceTest, OneLevelParametersNeverChooseHierarchicalForAllreduce) {
  // Without inter values, the network costs what memory does: nothing to save by two levels.
  const CostParams one{kCluster.alpha_s, kCluster.beta_s_per_byte, kCluster.gamma_s_per_byte};
  for (const Ids& ids : {Ids{"A", "A", "B", "B"}, Ids{"A", "A", "A", "B", "B"}}) {
    for (size_t bytes = 1; bytes <= size_t{1} << 30; bytes *= 8) {
      EXPECT_NE(choose(C::Allreduce, bytes, shape_of(ids), one, kChunk).algorithm,
                A::AllreduceHierarchical)
          << bytes;
    }
  }
}

// ---- PLEXUS_COST_MODEL and the cache with two levels ---------------------------------------

TEST(TwoLevelCacheTest, FiveValuesGiveBothLevels) {
  CostParams p;
  ASSERT_EQ(parse_cost_model("2.5, 0.1, 0.05, 25, 4", 0, &p), PLX_SUCCESS) << last_error();
  EXPECT_DOUBLE_EQ(p.inter_alpha_s, 25e-6);
  EXPECT_DOUBLE_EQ(p.inter_beta_s_per_byte, 4e-9);
  EXPECT_TRUE(p.two_level());
  ASSERT_EQ(parse_cost_model("2.5,0.1,0.05", 0, &p), PLX_SUCCESS);
  EXPECT_FALSE(p.two_level());
  EXPECT_EQ(parse_cost_model("1,2,3,4,x", 7, &p), PLX_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(last_error()).find("inter_beta_ns_per_byte 'x' is not"), std::string::npos)
      << last_error();
  EXPECT_EQ(parse_cost_model("1,2,3,4,5,6", 7, &p), PLX_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(last_error()).find("6 values given"), std::string::npos) << last_error();
}

TEST(TwoLevelCacheTest, FileKeepsTheInterHostValuesAndRejectsHalfOfThem) {
  test::TempDir dir("plexus-two-level");
  ASSERT_FALSE(dir.path().empty());
  const std::string path = dir.path() + "/cost.json";
  std::string why;
  ASSERT_TRUE(write_cost_cache(path, "h", "tcp", kCluster, &why)) << why;
  CostParams read;
  ASSERT_TRUE(read_cost_cache(path, "h", "tcp", &read, &why)) << why;
  EXPECT_EQ(read.inter_alpha_s, kCluster.inter_alpha_s);
  EXPECT_EQ(read.inter_beta_s_per_byte, kCluster.inter_beta_s_per_byte);
  std::ofstream(path) << R"({"format": "plexus-cost-model", "version": 2, "host_id": "h",
      "provider": "tcp", "alpha_s": 1e-6, "beta_s_per_byte": 1e-10, "gamma_s_per_byte": 1e-10,
      "inter_alpha_s": 1e-5})";
  EXPECT_FALSE(read_cost_cache(path, "h", "tcp", &read, &why));
  EXPECT_NE(why.find("inter_alpha_s and inter_beta_s_per_byte"), std::string::npos) << why;
}

// ---- two-level measurement on the thread transport -----------------------------------------

bool same(const CostParams& a, const CostParams& b) {
  return a.alpha_s == b.alpha_s && a.beta_s_per_byte == b.beta_s_per_byte &&
         a.gamma_s_per_byte == b.gamma_s_per_byte && a.inter_alpha_s == b.inter_alpha_s &&
         a.inter_beta_s_per_byte == b.inter_beta_s_per_byte;
}

// Runs fn on every rank of an n-rank thread world; every rank must succeed with the same params.
std::vector<CostParams> run_world(
    int n, const std::function<plx_result_t(Transport&, CostParams*)>& fn) {
  test::ThreadWorld world(n);
  std::vector<CostParams> params(n);
  std::vector<std::string> messages(n);
  const auto results = world.run([&](int r, Transport& t) {
    const plx_result_t rc = fn(t, &params[r]);
    if (rc != PLX_SUCCESS) messages[r] = last_error();
    return rc;
  });
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(results[r], PLX_SUCCESS) << "rank " << r << ": " << messages[r];
    EXPECT_TRUE(same(params[r], params[0])) << "rank " << r;
  }
  EXPECT_TRUE(world.protocol_errors().empty());
  EXPECT_TRUE(world.leftover().empty());
  return params;
}

TEST(TwoLevelMeasureTest, EveryLayoutMeasuresBothLevels) {
  // Host 0 with two ranks; host 0 alone (the pair within a host is on host 1); no host with two
  // ranks (the network's values serve both levels).
  for (const Ids& ids : {Ids{"A", "A", "B", "B"}, Ids{"A", "B", "B"}, Ids{"A", "B", "C"}}) {
    const HostLayout layout = host_layout(ids);
    const auto params = run_world(layout.size(), [&](Transport& t, CostParams* out) {
      return measure_cost_params(t, collective_tag_base(5), &layout, out);
    });
    EXPECT_TRUE(params[0].two_level()) << format_cost_params(params[0]);
    EXPECT_GE(params[0].inter_alpha_s, kMinAlphaS);
    EXPECT_GE(params[0].alpha_s, kMinAlphaS);
    if (ids[1] == "B" && ids[2] == "C") {
      EXPECT_EQ(params[0].alpha_s, params[0].inter_alpha_s);
      EXPECT_EQ(params[0].beta_s_per_byte, params[0].inter_beta_s_per_byte);
    }
  }
  // One host: one level.
  const HostLayout one = single_host_layout(3);
  const auto params = run_world(3, [&](Transport& t, CostParams* out) {
    return measure_cost_params(t, 0, &one, out);
  });
  EXPECT_FALSE(params[0].two_level());
}

TEST(TwoLevelMeasureTest, OneLevelCacheFileIsMeasuredAgainAcrossHosts) {
  test::TempDir dir("plexus-two-level");
  ScopedEnv cache("PLEXUS_CACHE_DIR", dir.path());
  ScopedEnv model("PLEXUS_COST_MODEL", std::nullopt);
  const std::string path = dir.path() + "/" + cost_cache_file_name("h", "thread");
  std::string why;
  const CostParams planted{1e-6, 2e-10, 3e-11};
  ASSERT_TRUE(write_cost_cache(path, "h", "thread", planted, &why)) << why;
  const HostLayout layout = host_layout(Ids{"A", "A", "B"});
  // One host uses the one-level file as it is...
  const HostLayout one = single_host_layout(3);
  auto params = run_world(3, [&](Transport& t, CostParams* out) {
    return load_or_measure(t, 0, "h", &one, out);
  });
  EXPECT_TRUE(same(params[0], planted));
  // ... two hosts measure both levels and rewrite it.
  params = run_world(3, [&](Transport& t, CostParams* out) {
    return load_or_measure(t, 0, "h", &layout, out);
  });
  EXPECT_TRUE(params[0].two_level());
  CostParams cached;
  ASSERT_TRUE(read_cost_cache(path, "h", "thread", &cached, &why)) << why;
  EXPECT_TRUE(same(cached, params[0]));
  // ... and load it the next time.
  const auto again = run_world(3, [&](Transport& t, CostParams* out) {
    return load_or_measure(t, 0, "h", &layout, out);
  });
  EXPECT_TRUE(same(again[0], cached));
}

TEST(TwoLevelMeasureTest, ThreeValueCostModelIsOneLevelAcrossHosts) {
  ScopedEnv model("PLEXUS_COST_MODEL", "2.5,0.1,0.05");
  const HostLayout layout = host_layout(Ids{"A", "B"});
  const auto params = run_world(2, [&](Transport& t, CostParams* out) {
    return load_or_measure(t, 0, "h", &layout, out);
  });
  EXPECT_FALSE(params[0].two_level());
  EXPECT_DOUBLE_EQ(params[0].alpha_s, 2.5e-6);
}

}  // namespace
}  // namespace plexus::comm
