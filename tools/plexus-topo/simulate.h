// simulate.h - plexus-topo --simulate: the predicted time and bus bandwidth of every allreduce
// algorithm on a communicator laid over a (large) topology file, from the same cost model
// (comm/topology_bridge.h) the communicator chooses with, as a table or as JSON.
//
// JSON (--format json):
//   {"collective": "allreduce", "nranks": 1024, "hosts": 128, "ranks_per_host": 8,
//    "chunk_bytes": 1048576, "bus_factor": 1.998,
//    "cost": {"alpha_s": .., "beta_s_per_byte": .., "gamma_s_per_byte": .., "inter_alpha_s": ..,
//             "inter_beta_s_per_byte": .., "links_per_host": 8, "peer_memory": false,
//             "intra": "..", "inter": ".."},
//    "rows": [{"bytes": 1024, "chosen": "recursive_doubling",
//              "algorithms": {"ring": {"seconds": .., "busbw_gbs": ..}, ...}}, ...]}
// With --explain each algorithm also has "bound_seconds" and "bound_busbw_gbs" (its bytes
// alone: TopologyCostModel::predict_bounds), and a row on several hosts "hierarchical_phases":
//   {"segments": 512, "segment_bytes": .., "seconds": ..,
//    "reduce_scatter": {"latency_s": .., "bytes_s": .., "reduction_s": ..}, "allgather": {..},
//    "network": {..}, "boundaries_s": ..}   (per segment; TopologyCostModel's HierarchicalPhases)
// and the text adds under each size a line of the bounds' busbw and, on several hosts, one of
// the phases.
// busbw_gbs = bytes / seconds x 2(n-1)/n / 10^9 (nccl-tests' allreduce bus bandwidth); null
// when the predicted time is 0 (a cost model of zeros), which the table prints as "-".
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "plexus/plexus.h"
#include "topology/host_topology.h"
#include "topology/rank_groups.h"

namespace plexus::topo_tool {

// The allreduce algorithms --simulate compares, in its column order: "shm" last when the ranks
// are on one host and share a peer-memory segment (TopologyCost::peer_memory).
std::vector<std::string> simulated_algorithms(bool peer_memory);

struct SimulateOptions {
  std::vector<uint64_t> sizes;  // bytes of the vector
  size_t chunk_bytes = 1u << 20;
  std::string cost_model_text;  // PLEXUS_COST_MODEL's value; "" = from the topology
  bool json = false;
  bool explain = false;  // --explain: bounds and the hierarchical allreduce's phases
};

// PLX_ERROR_INVALID_ARGUMENT with *error for a bad PLEXUS_COST_MODEL or a communicator of one
// rank (nothing to simulate).
plx_result_t print_simulation(FILE* out, const topology::ClusterTopology& cluster,
                              const topology::RankGroups& groups, const SimulateOptions& options,
                              std::string* error);

}  // namespace plexus::topo_tool
