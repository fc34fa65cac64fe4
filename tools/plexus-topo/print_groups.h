// print_groups.h - a communicator laid over a cluster: hosts, local ranks, NUMA domains, rails
// and how many rank pairs meet over each path class.
#pragma once

#include <cstdio>
#include <vector>

#include "topology/host_topology.h"
#include "topology/rank_groups.h"

namespace plexus::topo_tool {

// At most this many ranks are listed one per line; the rest are counted.
inline constexpr int kMaxRankRows = 64;

void print_rank_groups(FILE* out, const topology::ClusterTopology& cluster,
                       const std::vector<topology::RankLocation>& ranks,
                       const topology::RankGroups& groups);

}  // namespace plexus::topo_tool
