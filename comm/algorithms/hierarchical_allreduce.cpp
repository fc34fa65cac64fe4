// hierarchical_allreduce.cpp - two-level allreduce: reduce-scatter inside each host, allreduce of
// each shard between hosts along its lane, allgather inside each host.
//
// The decomposition of NCCL's hierarchical (NVLink + network) rings and of Horovod's
// hierarchical allreduce; J. L. Traeff and S. Hunold, "Decomposing MPI collectives for
// exploiting multi-lane communication", IEEE Cluster 2020 (the "full-lane" allreduce). Each
// phase is a pipelined ring (group_ring.h; Patarasuk & Yuan, JPDC 69(2), 2009). The host layout
// comes in CollArgs::hosts (host_layout.h; NULL means one host).
//
// The vector is cut into M = max_local() near-equal blocks, block j for lane j; on host h block
// j belongs to proxy(h, j), local rank j mod L_h (host_layout.h):
//
//   1. intra-host reduce-scatter (ring over the host's ranks): the owner of block j on host h
//      gets the host's partial sum of block j, in recvbuf;
//   2. inter-host allreduce of block j along lane j (ring reduce-scatter then ring allgather
//      over lane_group(j), one rank per host), for every lane this rank holds, in increasing j:
//      block j is now reduced over every rank (PLX_AVG divides it here, once);
//   3. intra-host allgather: every rank gets every block from its host's owners.
//
// Worked example, uneven hosts 3 + 2: hosts A = [0 1 2], B = [3 4]; M = 3 blocks b0 b1 b2.
//
//            host A               host B              lanes (one holder per host)
//   owns   0: b0  1: b1  2: b2    3: b0 b2   4: b1    lane 0 [0 3]  lane 1 [1 4]  lane 2 [2 3]
//
//   1. A reduce-scatters b0, b1, b2 over [0 1 2]; B reduce-scatters parts {b0, b2}, {b1} over
//      [3 4] (rank 3's part has two pieces).
//   2. lane 0: 0 <-> 3 allreduce b0;  lane 1: 1 <-> 4 allreduce b1;  lane 2: 2 <-> 3 allreduce b2
//      (rank 3 runs lane 0, then lane 2).
//   3. A allgathers b0, b1, b2 over [0 1 2]; B allgathers {b0, b2}, {b1} over [3 4].
//   Every block has exactly one owner per host, so every lane sums each host's partial once and
//   every element is reduced exactly once and delivered to every rank.
//
// Degenerate layouts: one host (H = 1) skips step 2, which leaves a ring reduce-scatter and ring
// allgather; one rank per host (M = 1) skips steps 1 and 3, which leaves a ring allreduce over
// lane 0 in host order.
//
// Tags: every ring runs in its own window of the call's indices (group_ring.h): window 0 for
// step 1, 1 + 2j and 2 + 2j for lane j's reduce-scatter and allgather, 2M + 1 for step 3.
//
// Bytes, K = H hosts of M ranks (m the vector): per rank (M-1)/M m each way inside the host in
// steps 1 and 3, and 2(K-1)/K m/M between hosts in step 2, so each host's network link carries
// 2(K-1)/K m each way, against 2(n-1)/n m for a flat ring whose ring crosses every host once.
#include <cstring>
#include <vector>

#include "comm/algorithms/algorithms.h"
#include "comm/algorithms/group_ring.h"
#include "comm/algorithms/host_layout.h"
#include "comm/algorithms/slices.h"
#include "comm/algorithms/trivial_reduction.h"
#include "comm/core/error.h"
#include "comm/reduce/reduce.h"

namespace plexus::comm {

plx_result_t hierarchical_allreduce(Transport& transport, uint64_t tag_base,
                                    const CollArgs& args) {
  const int n = transport.size(), me = transport.rank();
  if (reduce_trivially(args, n)) return PLX_SUCCESS;
  HostLayout fallback;
  const HostLayout* layout = nullptr;
  PLX_CHECK(resolve_layout(args.hosts, n, me, "hierarchical_allreduce", &fallback, &layout));
  const int h = layout->host_of[me], i = layout->local_rank[me];
  const int local = layout->local_size(me), hosts = layout->host_count();
  const int lanes = layout->max_local();
  const size_t elem = datatype_bytes(args.datatype);
  const auto* in = static_cast<const unsigned char*>(args.sendbuf);
  auto* out = static_cast<unsigned char*>(args.recvbuf);
  const Blocks blocks{args.count, static_cast<size_t>(lanes)};
  const uint64_t windows = 2 * static_cast<uint64_t>(lanes) + 2;
  const size_t divisor = static_cast<size_t>(n);

  // Steps 1 and 3: the host's ranks, and part p = the blocks of lanes j with j mod L_h == p.
  RingGroup intra{layout->hosts[h], static_cast<size_t>(i), std::vector<Part>(local)};
  for (int j = 0; j < lanes; ++j) {
    const size_t off = blocks.begin(j) * elem;
    intra.parts[j % local].push_back({in + off, out + off, blocks.size(j)});
  }

  // 1. Intra-host reduce-scatter (one rank: its own input is the host's partial).
  PLX_CHECK(group_reduce_scatter(transport, tag_window(tag_base, 0, windows), intra,
                                 args.datatype, args.op, hosts == 1 ? divisor : 0,
                                 args.chunk_bytes));
  // 2. Inter-host allreduce of each block this rank holds, along its lane, in place.
  for (int j = i; hosts > 1 && j < lanes; j += local) {
    if (blocks.size(j) == 0) continue;  // count < M: every holder skips it alike
    RingGroup lane{layout->lane_group(j), static_cast<size_t>(h), std::vector<Part>(hosts)};
    const Blocks shards{blocks.size(j), static_cast<size_t>(hosts)};
    for (int g = 0; g < hosts; ++g) {
      unsigned char* shard = out + (blocks.begin(j) + shards.begin(g)) * elem;
      lane.parts[g].push_back({shard, shard, shards.size(g)});
    }
    PLX_CHECK(group_reduce_scatter(transport, tag_window(tag_base, 1 + 2 * j, windows), lane,
                                   args.datatype, args.op, divisor, args.chunk_bytes));
    PLX_CHECK(group_allgather(transport, tag_window(tag_base, 2 + 2 * j, windows), lane,
                              args.datatype, args.chunk_bytes));
  }
  // 3. Intra-host allgather of the final blocks.
  return group_allgather(transport, tag_window(tag_base, windows - 1, windows), intra,
                         args.datatype, args.chunk_bytes);
}

}  // namespace plexus::comm
