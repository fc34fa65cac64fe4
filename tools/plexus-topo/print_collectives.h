// print_collectives.h - what plexus-topo says about collectives on a communicator: the cost
// parameters the topology implies (comm/topology_bridge.h), the links' published rates, and for
// each collective and size the algorithm the cost model picks, its predicted time and bus
// bandwidth, and the runner-up.
//
// Sizes are counted as nccl-tests counts them: allreduce, broadcast and reduce the whole
// vector; reduce_scatter the send buffer and allgather the receive buffer (n blocks, so a rank's
// block is size / n). algbw = size / time and busbw = algbw x nccl-tests' bus factor
// (doc/PERFORMANCE.md), so busbw compares with a link's rate.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "plexus/plexus.h"
#include "topology/host_topology.h"
#include "topology/rank_groups.h"

namespace plexus::topo_tool {

struct CollectiveTableOptions {
  std::vector<uint64_t> sizes;     // bytes, as above
  size_t chunk_bytes = 1u << 20;   // the pipelining slice (PLEXUS_CHUNK_BYTES's default)
  std::string cost_model_text;     // PLEXUS_COST_MODEL's value; "" = from the topology
};

// The collectives of the table, in order: allreduce, reduce_scatter, allgather, broadcast,
// reduce.
const std::vector<std::string>& table_collectives();

// The per-rank `bytes` the cost model takes for a table size (size / n for reduce_scatter and
// allgather, at least 1; the size otherwise).
size_t model_bytes(const std::string& collective, uint64_t size, int nranks);

// Prints the section. PLX_ERROR_INVALID_ARGUMENT with *error for a bad PLEXUS_COST_MODEL.
plx_result_t print_collective_choices(FILE* out, const topology::ClusterTopology& cluster,
                                      const topology::RankGroups& groups,
                                      const CollectiveTableOptions& options, std::string* error);

}  // namespace plexus::topo_tool
