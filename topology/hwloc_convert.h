// hwloc_convert.h - a loaded hwloc topology (live or from XML) as a HostTopology.
#pragma once

#include <hwloc.h>

#include "topology/host_topology.h"

namespace plexus::topology {

// Packages, NUMA nodes, caches, PCI devices, GPUs (OS devices of type GPU or CoProc, and PCI 3D
// controllers, class 0x0302, merged by PCI bus id) and NICs (network and OpenFabrics OS
// devices; an OpenFabrics device named efa* or on an Amazon EFA function, 1d0f:efa*, is Efa).
// Fills hostname (the HostName info); leaves host_id, NIC speeds and NVLinks to the caller.
// `topo` must have been loaded after set_discovery_filters().
HostTopology from_hwloc(hwloc_topology_t topo);

// The type filters discovery uses: every PCI device, important OS devices, all caches, and
// disallowed CPUs too (the topology describes the hardware, not this process's cgroup).
void set_discovery_filters(hwloc_topology_t topo);

}  // namespace plexus::topology
