// host_check.h - whether a HostTopology is consistent: the checks that span fields or objects,
// which the JSON reader applies after the types (and comm may apply to a peer's topology).
#pragma once

#include <optional>
#include <string>

#include "topology/host_topology.h"

namespace plexus::topology {

struct HostProblem {
  std::string path;  // JSON path inside the host object ("numa_nodes[1].package"); "" = the host
  std::string what;  // "3 is not the os_index of a package (0, 1)"
};

// The first of, in this order: no NUMA node; a package or NUMA node with fewer PUs than cores;
// a NUMA node's cpus that is not a cpulist or does not list `pus` CPUs; a CPU in the cpus of two
// NUMA nodes; an os_index, PCI bus id
// or NIC name used twice; a NUMA node's package, or a device's numa_node, that names nothing
// (other than kNoNuma); an NVLink to a GPU that is not one of the host's. nullopt if none.
std::optional<HostProblem> check_host(const HostTopology& host);

}  // namespace plexus::topology
