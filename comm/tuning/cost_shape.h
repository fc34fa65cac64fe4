// cost_shape.h - what the two-level cost model knows about where a communicator's ranks run:
// how many hosts, how many ranks each, and, for the message pattern of every flat algorithm, how
// many of its concurrent messages one host's network link carries ("load").
//
// The model behind it (cost_model.h): a host has one network link, shared by every message that
// leaves or enters the host in the same step (one NIC per host, as in the emulated cluster; a host
// with nics_per_host NICs spreads the load over them). A step of a pattern whose busiest host
// link carries `load` messages of x bytes each costs
//
//   alpha_inter + x * max(beta_intra, ceil(load / nics) * beta_inter)      (load > 0)
//   alpha_intra + x * beta_intra                                           (load = 0)
//
// so a flat ring whose ranks sit host by host (load 1) runs at the link's rate, and one whose
// neighbours alternate between hosts (load = ranks per host) at a fraction of it. This is the
// congestion view of the LogGP/alpha-beta literature (e.g. Sack & Gropp, "Collective algorithms
// for multiported torus networks", TOPC 1(2), 2015) applied to a two-level tree of links, as
// NCCL's tuning model charges inter-node steps at the network bandwidth (src/graph/tuning.cc).
//
// Loads are computed once per communicator (cost_shape, O(n^2) for the pairwise exchange up to
// kPairwiseExactRanks ranks, O(n log n) otherwise), so a prediction stays O(log n).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "comm/algorithms/host_layout.h"

namespace plexus::comm {

// Above this many ranks the pairwise exchange's loads are not counted step by step: every step
// is charged the largest host's size.
constexpr int kPairwiseExactRanks = 2048;

// The schedule of the hierarchical allreduce's lanes across hosts (hierarchical_cost.h):
// chosen by the cost model (Auto), or forced by PLEXUS_HIERARCHICAL_LANES (algo_override.h).
enum class LaneSchedule : uint8_t { Auto, Ring, Halving };

struct CostShape {
  int nranks = 1;
  int hosts = 1;
  int max_local = 1;             // M, the most ranks on one host (the hierarchical lanes)
  int min_local = 1;             // the fewest ranks on one host
  std::vector<int> local_sizes;  // the distinct host sizes, increasing
  int nics_per_host = 1;         // links a host's inter-host messages spread over (nics_in_use)
  size_t eager_bytes = 0;        // the network transport's eager limit (Transport::eager_bytes)

  // Loads (see above) of the flat algorithms' patterns; 0: the pattern stays inside hosts.
  int ring = 0;                // r -> r+1 mod n: rings, chain
  int fold = 0;                // odd r < 2(n - p2) -> r-1: the fold of non-powers of two
  std::vector<int> halving;    // [k]: survivors v <-> v ^ 2^k (rabenseifner, recursive_*)
  std::vector<int> binomial;   // [j]: v <-> v + 2^j, v a multiple of 2^(j+1) (root 0)
  std::vector<int> doubling;   // [k]: r -> r + 2^k mod n (Bruck, dissemination)
  std::vector<int> pairwise;   // [c]: how many of the n-1 pairwise steps have load c
  int double_tree = 0;         // both trees' edges between hosts at the busiest host (see .cpp)
  // The two trees themselves (any layout): their height H (the taller tree's), and the most
  // messages one rank sends per pipeline step (its degree summed over both trees: one up to
  // each parent, one down to each child) and reduces per step (its children in both trees).
  int double_tree_height = 0;
  int double_tree_degree = 0;
  int double_tree_children = 0;
  int root_host_ranks = 1;     // ranks on rank 0's host (linear gather and scatter)
  // The ranks of each host share a peer-memory segment (set by the communicator; comm/
  // transport/peer_memory/peer_memory.h, true when every host with several ranks has one). On
  // one host the shm algorithms are predicted by shm_cost.h (else as the flat algorithm they
  // fall back to); across hosts the hierarchical algorithms' intra-host phases are priced at
  // memory speed (hierarchical_cost.h).
  bool peer_memory = false;
  // The lanes' schedule the user forced (PLEXUS_HIERARCHICAL_LANES), or Auto: the model's.
  LaneSchedule lanes = LaneSchedule::Auto;

  bool multi_host() const { return hosts > 1; }
};

// n ranks on one host: every load 0.
CostShape flat_cost_shape(int nranks);

// The shape of `layout`'s ranks.
CostShape cost_shape(const HostLayout& layout);

// The links a host's messages spread over, for CostShape::nics_per_host: the fewest distinct
// NICs the ranks of any host opened, `nic_of_rank` naming each rank's (Transport::nic(), in the
// layout's rank order; "" unknown). 1 when some rank's is unknown or the list does not cover
// the layout. Every rank of a host sending on its own NIC (rails, PLEXUS_FI_NICS; one NIC per
// GPU on p5) gives up to one link per rank; the inter-host beta is one NIC's (measure.h).
int nics_in_use(const HostLayout& layout, const std::vector<std::string>& nic_of_rank);

}  // namespace plexus::comm
