// host_layout.h - where a communicator's ranks run: hosts, local ranks, rails and lanes, as the
// hierarchical algorithms (hierarchical_*.cpp) and the two-level cost model see them.
//
// Hosts are numbered in the order of their first rank; each host lists its ranks in increasing
// order, and a rank's local rank is its position there. Rail l is the ranks with local rank l,
// in host order (what a rail-optimised cluster wires to the same switch). Every rank computes the
// same layout from the same allgathered host ids (plx_comm::host_ids), so no message is needed.
//
//   ranks 0..4 on hosts A A B A B  (uneven 3 + 2, interleaved)
//     hosts:  A [0 1 3]   B [2 4]          local ranks: 0 1 0 2 1
//     rails:  [0 2] [1 4] [3]              rail 2 is short: B has no local rank 2
//
// Lanes. The hierarchical algorithms cut their data into M = max_local() lanes, lane j for rail
// j, and need, on every host, one rank that holds lane j. On a host with fewer than M ranks the
// rank with local rank j mod L_h stands in ("proxy") for the missing ones, so every lane has
// exactly one holder per host:
//
//     proxy(h, j) = hosts[h][j mod L_h]          lane_group(j) = [proxy(0, j), proxy(1, j), ...]
//
//     in the example (M = 3):  lane 0 [0 2]   lane 1 [1 4]   lane 2 [3 2]
//     rank 2 holds lanes 0 and 2 on host B; rank 4 holds lane 1.
//
// A lane group has one rank per host and never two ranks of one host, so the network part of a
// hierarchical algorithm runs once per lane, host to host; the ranks of a short host each run
// ceil(M / L_h) lanes at most.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "plexus/plexus.h"

namespace plexus::comm {

struct HostLayout {
  std::vector<std::vector<int>> hosts;  // per host, in order of first rank: its ranks, increasing
  std::vector<int> host_of;             // per rank: index into hosts
  std::vector<int> local_rank;          // per rank: position in its host's list
  std::vector<std::vector<int>> rails;  // rails[l]: ranks with local rank l, in host order

  int size() const { return static_cast<int>(host_of.size()); }
  int host_count() const { return static_cast<int>(hosts.size()); }
  int local_size(int rank) const { return static_cast<int>(hosts[host_of[rank]].size()); }
  // M: the most ranks on one host (the number of lanes); 0 for an empty layout.
  int max_local() const { return static_cast<int>(rails.size()); }
  // The fewest ranks on one host.
  int min_local() const;
  // The rank of host h that holds lane j (0 <= j < max_local()).
  int proxy(int h, int lane) const {
    const std::vector<int>& ranks = hosts[h];
    return ranks[static_cast<size_t>(lane) % ranks.size()];
  }
  // The holders of lane j, one per host, in host order.
  std::vector<int> lane_group(int lane) const;
};

// The layout of ranks 0..n-1 where host_ids[r] names rank r's host (any string; equal strings
// are one host). Pure: every rank gets the same layout from the same ids.
HostLayout host_layout(std::span<const std::string> host_ids);

// n ranks on one host (what an algorithm assumes when CollArgs::hosts is NULL).
HostLayout single_host_layout(int nranks);

// The layout an algorithm runs on: `given` (CollArgs::hosts), or when it is NULL *fallback
// filled with single_host_layout(n). PLX_ERROR_INTERNAL, naming `algorithm` and `rank`, when
// `given` does not describe n ranks.
plx_result_t resolve_layout(const HostLayout* given, int n, int rank, const char* algorithm,
                            HostLayout* fallback, const HostLayout** out);

}  // namespace plexus::comm
