// hierarchical_allgather.cpp - two-level allgather: between hosts along each lane, then inside
// each host.
//
// J. L. Traeff and S. Hunold, "Decomposing MPI collectives for exploiting multi-lane
// communication", IEEE Cluster 2020 (the "full-lane" allgather: lane allgather, then node-local
// allgather); both phases are pipelined rings (group_ring.h; Patarasuk & Yuan, JPDC 69(2),
// 2009). The mirror of hierarchical_reduce_scatter.cpp. The host layout comes in
// CollArgs::hosts (host_layout.h; NULL: one host).
//
// recvbuf holds n blocks of count elements, block q from rank q. Block q travels on lane(q) =
// local_rank(q):
//
//   1. inter-host allgather along each lane j this rank holds (ring over lane_group(j)): the
//      member on host g contributes the block of rank hosts[g][j], or nothing when host g has no
//      local rank j; every holder of lane j then has the blocks of all ranks on lane j;
//   2. intra-host allgather (through the host's peer memory, shm_group.h, else a ring over the
//      host's ranks): part p = the blocks q with lane(q) mod L_h == p, which rank hosts[h][p]
//      holds after step 1.
//
// Worked example, uneven hosts 3 + 2: A = [0 1 2], B = [3 4], lanes 0 [0 3], 1 [1 4], 2 [2 3].
//   1. lane 0: 0 <-> 3 swap blocks 0 and 3;  lane 1: 1 <-> 4 swap 1 and 4;  lane 2: rank 2
//      sends block 2 to rank 3, which contributes nothing (B has no local rank 2).
//   2. A: parts {0, 3}, {1, 4}, {2} over [0 1 2];  B: parts {0, 2, 3}, {1, 4} over [3 4].
//   Each block enters each other host exactly once, on its lane, and reaches every rank there.
//
// Why no first intra-host step (the "intra, inter, intra"): an allgather has nothing to
// combine before the network, and step 1 already spreads a host's blocks over all its lanes; an
// intra-host allgather first would only move the same bytes inside the host twice.
//
// Degenerate layouts: one host runs step 2 alone (a ring allgather over the host); one rank per
// host runs step 1 alone (a ring allgather over lane 0).
//
// In place (sendbuf == recvbuf + r*count): this rank's block is already in place; otherwise it
// is copied there first. Every other block of recvbuf is written once, by a receive.
//
// Tags: window j for lane j, window M for step 2 (group_ring.h).
//
// Bytes, K hosts of M ranks, b = count * elem_bytes: (K-1) b per lane between hosts, so each
// host's link carries (n - M) b each way, the least an allgather can bring onto a host; then
// (M-1) K b per rank inside the host.
#include <cstdint>
#include <cstring>
#include <vector>

#include "comm/algorithms/algorithms.h"
#include "comm/algorithms/group_ring.h"
#include "comm/algorithms/host_layout.h"
#include "comm/algorithms/shm_group.h"
#include "comm/base/error.h"
#include "comm/reduce/reduce.h"

namespace plexus::comm {

plx_result_t hierarchical_allgather(Transport& transport, uint64_t tag_base,
                                    const CollArgs& args) {
  const int n = transport.size(), me = transport.rank();
  const size_t block_bytes = args.count * datatype_bytes(args.datatype);
  const auto* in = static_cast<const unsigned char*>(args.sendbuf);
  auto* out = static_cast<unsigned char*>(args.recvbuf);
  if (block_bytes == 0) return PLX_SUCCESS;
  if (in != out + me * block_bytes) std::memcpy(out + me * block_bytes, in, block_bytes);
  if (n == 1) return PLX_SUCCESS;
  HostLayout fallback;
  const HostLayout* layout = nullptr;
  PLX_CHECK(resolve_layout(args.hosts, n, me, "hierarchical_allgather", &fallback, &layout));
  const int h = layout->host_of[me], i = layout->local_rank[me];
  const int local = layout->local_size(me), hosts = layout->host_count();
  const int lanes = layout->max_local();
  const uint64_t windows = 1 + static_cast<uint64_t>(lanes);

  // 1. Inter-host allgather along each lane this rank holds.
  for (int j = i; hosts > 1 && j < lanes; j += local) {
    RingGroup lane{layout->lane_group(j), static_cast<size_t>(h), std::vector<Part>(hosts)};
    for (int g = 0; g < hosts; ++g) {
      if (j >= static_cast<int>(layout->hosts[g].size())) continue;  // host g: no rank j
      lane.parts[g].push_back({nullptr, out + layout->hosts[g][j] * block_bytes, args.count});
    }
    PLX_CHECK(group_allgather(transport, tag_window(tag_base, j, windows), lane, args.datatype,
                              args.chunk_bytes));
  }
  // 2. Intra-host allgather of what each rank holds.
  if (local == 1) return PLX_SUCCESS;
  RingGroup intra{layout->hosts[h], static_cast<size_t>(i), std::vector<Part>(local)};
  for (int q = 0; q < n; ++q) {
    intra.parts[layout->local_rank[q] % local].push_back(
        {nullptr, out + q * block_bytes, args.count});
  }
  return host_allgather(transport, tag_window(tag_base, lanes, windows), intra, args.peers,
                        args.datatype, args.chunk_bytes, "allgather:hierarchical", nullptr);
}

}  // namespace plexus::comm
