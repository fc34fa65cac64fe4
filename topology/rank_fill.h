// rank_fill.h - where the ranks of a communicator would run on a described cluster (a topology
// file), for plexus-topo and simulation: hosts filled in order, a fixed number per host.
#pragma once

#include <string>
#include <vector>

#include "plexus/plexus.h"
#include "topology/host_topology.h"
#include "topology/rank_groups.h"

namespace plexus::topology {

// Places ranks 0..nranks-1 as a launcher binding each local rank to a GPU and its NUMA node
// would: rank r on host r / per_host (the last host may get fewer), local rank l = r % per_host;
// its GPU is the host's GPU l (in bus id order) when the host has more than l GPUs; its NUMA node
// is that GPU's, else node l * K / per_host of the host's K NUMA nodes (blocks of local ranks).
// Returns PLX_ERROR_INVALID_ARGUMENT when nranks < 1, per_host < 1 or the hosts are too few
// ("fill_hosts: 300 ranks at 8 per host need 38 hosts; the topology has 32"). *out is written
// only on success.
plx_result_t fill_hosts(const ClusterTopology& cluster, int nranks, int per_host,
                        std::vector<RankLocation>* out, std::string* error);

}  // namespace plexus::topology
