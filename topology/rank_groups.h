// rank_groups.h - a communicator's ranks grouped by where they run: hosts, NUMA domains, local
// ranks and rails, and the closest path between two ranks. Pure functions of every rank's
// location, so every rank computes the same groups from the same allgathered locations.
//
//   ranks 0..4 on hosts A A B A B  (interleaved, uneven 3 + 2)
//     hosts:  [0 1 3] [2 4]        host order = order of first rank
//     local:   0 1 2   0 1         local_size 3 on A, 2 on B
//     rails:  [0 2] [1 4] [3]      rail l = ranks with local rank l, in host order
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "topology/host_topology.h"

namespace plexus::topology {

// Where one rank runs.
struct RankLocation {
  std::string host_id;         // topology::host_id() on that rank
  int numa_node = kNoNuma;     // NUMA node os_index the rank is bound to; kNoNuma if unbound
  std::string gpu_pci_bus_id;  // the rank's GPU; "" if none
  bool operator==(const RankLocation&) const = default;
};

// Path classes from nearest to farthest, so "closer" is <.
enum class PathClass {
  NvLink,    // same host, and the ranks' GPUs have an NVLink between them
  SameNuma,  // same host and the same (known) NUMA node: shared memory, local to both
  SameHost,  // same host otherwise: shared memory across NUMA nodes (or unknown ones)
  Network,   // different hosts
};

struct RankGroups {
  std::vector<std::string> host_ids;           // per host, hosts in order of their first rank
  std::vector<std::vector<int>> hosts;         // per host, its ranks in increasing order
  std::vector<std::vector<int>> numa_domains;  // ranks sharing a host and a known NUMA node,
                                               // domains in order of their first rank
  std::vector<std::vector<int>> rails;         // rails[l]: ranks with local rank l, in host order
  std::vector<int> host_of;                    // per rank: index into hosts
  std::vector<int> local_rank;                 // per rank: position in its host's list
  std::vector<int> local_size;                 // per rank: size of its host's list
  std::vector<int> numa_domain_of;  // per rank: index into numa_domains, -1 if NUMA unknown

  int size() const { return static_cast<int>(host_of.size()); }
  // All hosts have the same number of ranks.
  bool uniform() const;
};

// Groups ranks 0..n-1 (ranks[i] is rank i's location). n may be 0.
RankGroups group_ranks(std::span<const RankLocation> ranks);

// The closest path between two different ranks. `host` is the topology of the host both run on
// (used only when they share one, for NVLink between their GPUs); nullptr means no NVLink is
// known.
PathClass path_class(const RankLocation& a, const RankLocation& b, const HostTopology* host);

std::string_view to_string(PathClass path);  // "nvlink", "same-numa", "same-host", "network"

}  // namespace plexus::topology
