// hierarchical_reduce_scatter.cpp - two-level reduce-scatter: inside each host by lane, then
// between hosts along each lane.
//
// J. L. Traeff and S. Hunold, "Decomposing MPI collectives for exploiting multi-lane
// communication", IEEE Cluster 2020 (the "full-lane" reduce-scatter: node-local reduce-scatter,
// then lane reduce-scatter); both phases are pipelined rings (group_ring.h; Patarasuk & Yuan,
// JPDC 69(2), 2009). The host layout comes in CollArgs::hosts (host_layout.h; NULL: one host).
//
// sendbuf holds n blocks of count elements, block q for rank q. Block q travels on lane(q) =
// local_rank(q): on every host h its partial is gathered by proxy(h, lane(q)), the holder of
// that lane there (local rank lane(q) mod L_h), and the lane then reduces the hosts' partials
// into rank q itself, which holds its own lane on its own host.
//
//   1. intra-host reduce-scatter (through the host's peer memory, shm_group.h, else a ring over
//      the host's ranks): part p = the blocks q with lane(q) mod L_h == p, so each rank gets its
//      host's partial of every block on the lanes it holds, in scratch memory (on one host: its
//      own block, straight into recvbuf);
//   2. inter-host reduce-scatter along each lane j this rank holds (ring over lane_group(j)):
//      the member on host g owns the block of rank hosts[g][j], or nothing when host g has no
//      local rank j; the owner divides for PLX_AVG, once.
//
// Worked example, uneven hosts 3 + 2: A = [0 1 2], B = [3 4], lanes 0 [0 3], 1 [1 4], 2 [2 3].
//   1. A: rank 0 gets A's partial of blocks {0, 3}, rank 1 of {1, 4}, rank 2 of {2};
//      B: rank 3 gets B's partial of blocks {0, 2, 3} (lanes 0 and 2), rank 4 of {1, 4}.
//   2. lane 0 [0 3]: parts {0}, {3};  lane 1 [1 4]: {1}, {4};  lane 2 [2 3]: {2}, {} (B has no
//      local rank 2, so rank 3 only forwards B's partial of block 2 to rank 2).
//   Each block's partial leaves each host exactly once, on its lane, and ends at its rank.
//
// Degenerate layouts: one host skips step 2 (a ring reduce-scatter over the host); one rank per
// host skips step 1 and reads its contributions straight from sendbuf.
//
// In place (recvbuf == sendbuf + r*count): step 1 reads sendbuf and writes scratch; step 2
// writes block r only after step 1 has finished with it.
//
// Tags: window 0 for step 1, window 1 + j for lane j (group_ring.h).
//
// Bytes, K hosts of M ranks, b = count * elem_bytes: (M-1) * K b per rank inside the host, and
// (K-1) b per lane between hosts, so each host's link carries (K-1) M b = (n - M) b each way,
// the least a reduce-scatter can send off a host.
#include <cstdint>
#include <vector>

#include "comm/algorithms/algorithms.h"
#include "comm/algorithms/group_ring.h"
#include "comm/algorithms/host_layout.h"
#include "comm/algorithms/shm_group.h"
#include "comm/algorithms/staging_buffer.h"
#include "comm/algorithms/trivial_reduction.h"
#include "comm/base/error.h"
#include "comm/reduce/reduce.h"

namespace plexus::comm {

plx_result_t hierarchical_reduce_scatter(Transport& transport, uint64_t tag_base,
                                         const CollArgs& args) {
  const int n = transport.size(), me = transport.rank();
  if (reduce_trivially(args, n)) return PLX_SUCCESS;
  HostLayout fallback;
  const HostLayout* layout = nullptr;
  PLX_CHECK(
      resolve_layout(args.hosts, n, me, "hierarchical_reduce_scatter", &fallback, &layout));
  const int h = layout->host_of[me], i = layout->local_rank[me];
  const int local = layout->local_size(me), hosts = layout->host_count();
  const int lanes = layout->max_local();
  const size_t block_bytes = args.count * datatype_bytes(args.datatype);
  const auto* in = static_cast<const unsigned char*>(args.sendbuf);
  auto* out = static_cast<unsigned char*>(args.recvbuf);
  const uint64_t windows = 1 + static_cast<uint64_t>(lanes);

  // The blocks this rank gathers in step 1 get consecutive scratch slots (with several hosts).
  std::vector<size_t> slot(n, 0);
  size_t held = 0;
  for (int q = 0; q < n; ++q) {
    if (layout->local_rank[q] % local == i) slot[q] = held++;
  }
  const bool staged = hosts > 1 && local > 1;
  StagingBuffer scratch(staged ? held * block_bytes : 0);  // sent from in step 2

  const auto run = [&]() -> plx_result_t {
    // 1. Intra-host reduce-scatter by lane.
    if (local > 1) {
      RingGroup intra{layout->hosts[h], static_cast<size_t>(i), std::vector<Part>(local)};
      for (int q = 0; q < n; ++q) {
        const int p = layout->local_rank[q] % local;
        unsigned char* dst = p != i        ? nullptr
                             : hosts == 1 ? out
                                          : scratch.data() + slot[q] * block_bytes;
        intra.parts[p].push_back({in + q * block_bytes, dst, args.count});
      }
      PLX_CHECK(host_reduce_scatter(transport, tag_window(tag_base, 0, windows), intra,
                                    args.peers, args.datatype, args.op, hosts == 1 ? n : 0,
                                    args.chunk_bytes, "reduce_scatter:hierarchical", nullptr));
    }
    // 2. Inter-host reduce-scatter along each lane this rank holds.
    for (int j = i; hosts > 1 && j < lanes; j += local) {
      RingGroup lane{layout->lane_group(j), static_cast<size_t>(h), std::vector<Part>(hosts)};
      for (int g = 0; g < hosts; ++g) {
        if (j >= static_cast<int>(layout->hosts[g].size())) continue;  // host g: no rank j
        const int q = layout->hosts[g][j];
        const unsigned char* partial =
            staged ? scratch.data() + slot[q] * block_bytes : in + q * block_bytes;
        lane.parts[g].push_back({partial, q == me ? out : nullptr, args.count});
      }
      PLX_CHECK(group_reduce_scatter(transport, tag_window(tag_base, 1 + j, windows), lane,
                                     args.datatype, args.op, n, args.chunk_bytes));
    }
    return PLX_SUCCESS;
  };
  return scratch.settle(run());
}

}  // namespace plexus::comm
