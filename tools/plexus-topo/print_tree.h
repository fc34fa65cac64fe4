// print_tree.h - a topology as an indented tree: host > packages > NUMA nodes > cores, each
// device under the NUMA node it sits on.
#pragma once

#include <cstdio>

#include "topology/host_topology.h"

namespace plexus::topo_tool {

struct TreeOptions {
  bool list_pci = false;  // list every PCI device that is neither a GPU nor a NIC (else a count)
};

// One host's tree.
void print_host_tree(FILE* out, const topology::HostTopology& host, const TreeOptions& options);

// Every host; a run of hosts with the same hardware is printed once, under a line naming them.
void print_cluster_tree(FILE* out, const topology::ClusterTopology& cluster,
                        const TreeOptions& options);

}  // namespace plexus::topo_tool
