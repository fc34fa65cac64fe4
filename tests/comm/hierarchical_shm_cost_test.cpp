// hierarchical_shm_cost_test.cpp - the two-level cost model of the hierarchical algorithms with
// a peer-memory segment on every host (comm/tuning/hierarchical_cost.cpp): the intra-host phases
// cost memory traffic and waits, not messages.
//
// On 2 hosts x 2 ranks, without slicing (one pipeline segment, one round of the slot), the
// allreduce of m bytes is, in the header's notation (y = m/2 per lane, u = y owned, t = m):
//   reduce-scatter  2 a_i + (m - y) kCopyGamma g + y g      allgather  a_i + m kCopyGamma g
//   lanes           2 a_e + 2 y b_e + y/2 g                 boundaries 2 a_i
// and it does not depend on the intra-host beta at all; without the segment it does.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "comm/algorithms/host_layout.h"
#include "comm/tuning/algorithm_id.h"
#include "comm/tuning/cost_shape.h"
#include "comm/tuning/hierarchical_cost.h"
#include "comm/tuning/shm_cost.h"

namespace plexus::comm {
namespace {

CostShape two_by_two(bool peer_memory) {
  CostShape shape = cost_shape(host_layout(std::vector<std::string>{"A", "A", "B", "B"}));
  shape.peer_memory = peer_memory;
  return shape;
}

TEST(HierarchicalShmCost, AllreduceOnTwoByTwoMatchesTheClosedForm) {
  const TwoLevelParams p{.alpha_intra = 2e-6, .beta_intra = 1e-10, .alpha_inter = 3e-5,
                         .beta_inter = 4e-9, .gamma = 5e-11, .shared_link = true};
  const double m = 1 << 20, y = m / 2, g = p.gamma, cg = kCopyGamma;
  const double want = (2 * p.alpha_intra + (m - y) * cg * g + y * g) +
                      (p.alpha_intra + m * cg * g) +
                      (2 * p.alpha_inter + 2 * y * p.beta_inter + y / 2 * g) +
                      2 * p.alpha_intra;
  const double got =
      hierarchical_seconds(AlgorithmId::AllreduceHierarchical, m, two_by_two(true), p, 0);
  EXPECT_NEAR(got, want, want * 1e-12);
}

TEST(HierarchicalShmCost, IntraHostBetaCountsOnlyWithoutPeerMemory) {
  TwoLevelParams fast{.alpha_intra = 2e-6, .beta_intra = 1e-10, .alpha_inter = 3e-5,
                      .beta_inter = 4e-9, .gamma = 5e-11, .shared_link = true};
  TwoLevelParams slow = fast;
  slow.beta_intra = 1e-8;  // loopback TCP a hundred times slower
  for (AlgorithmId id : {AlgorithmId::AllreduceHierarchical,
                         AlgorithmId::ReduceScatterHierarchical,
                         AlgorithmId::AllgatherHierarchical}) {
    for (double bytes : {4096.0, double(1 << 20), double(64 << 20)}) {
      const size_t chunk = 1 << 20;
      EXPECT_DOUBLE_EQ(hierarchical_seconds(id, bytes, two_by_two(true), fast, chunk),
                       hierarchical_seconds(id, bytes, two_by_two(true), slow, chunk))
          << algorithm_name(id) << " " << bytes;
      EXPECT_GT(hierarchical_seconds(id, bytes, two_by_two(false), slow, chunk),
                hierarchical_seconds(id, bytes, two_by_two(false), fast, chunk))
          << algorithm_name(id) << " " << bytes;
    }
  }
}

}  // namespace
}  // namespace plexus::comm
