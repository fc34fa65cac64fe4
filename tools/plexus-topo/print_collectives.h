// print_collectives.h - what plexus-topo says about collectives on a communicator.
//
// The place where the cost model's per-collective choice (algorithm, predicted time and busbw
// per collective and size) will be printed once comm/tuning can take a RankGroups and the
// cluster's links. Until then it prints only what the topology itself fixes: the links'
// published rates and the bytes each host must send per byte of an allreduce.
#pragma once

#include <cstdio>

#include "topology/host_topology.h"
#include "topology/rank_groups.h"

namespace plexus::topo_tool {

void print_collective_choices(FILE* out, const topology::ClusterTopology& cluster,
                              const topology::RankGroups& groups);

}  // namespace plexus::topo_tool
