// hierarchical_reduce.cpp - two-level reduce: inside each host towards its leader, then between
// hosts along the root's lane, pipelined in slices up host_tree.h's tree.
//
// The two-level reduce of NCCL's trees and of the multi-lane literature (J. L. Traeff and
// S. Hunold, IEEE Cluster 2020), run on tree_pipeline.h's systolic schedule (slices pipelined
// up the tree as in Chan, Heimlich, Purkayastha & van de Geijn, CCPE 19(13), 2007). The host
// layout comes in CollArgs::hosts (host_layout.h; NULL: one host).
//
//   1. intra-host: every host reduces up a binomial tree of its ranks towards its leader, the
//      rank on the root's lane (local rank lane(root) mod L_h on a shorter host);
//   2. inter-host: the leaders reduce towards the root, along a chain (several slices: each host
//      link carries every slice once) or a binomial tree (one slice: ceil(log2 K) hops).
//
//   hosts A [0 1 2]  B [3 4], root 4 (lane 1); A's leader is 1, B's is 4:
//
//        0 --> 1 <-- 2            3 --> 4 (root)        chain of leaders: 1 --> 4
//
// The whole tree is one systolic pipeline: slice k leaves a rank of height h at step k + h, so
// while the root combines slice k the leaves already send later ones. A leader combines its
// host's partials and the previous leader's in one accumulator (scratch memory, recvbuf only at
// the root, which divides for PLX_AVG once). Every element is combined once per tree edge, so
// each rank's contribution reaches the root exactly once.
//
// One host: binomial_reduce's tree (the same binomial tree, rooted at the root). One rank per
// host: the leaders' chain or tree alone.
//
// Tags and ordering: tree_pipeline.h's (one tree, up only).
//
// Bytes: every non-root rank sends m once; each host link carries m once (its leader's partial).
#include <vector>

#include "comm/algorithms/algorithms.h"
#include "comm/algorithms/host_layout.h"
#include "comm/algorithms/host_tree.h"
#include "comm/algorithms/slices.h"
#include "comm/algorithms/tree_pipeline.h"
#include "comm/algorithms/trivial_reduction.h"
#include "comm/base/error.h"
#include "comm/reduce/reduce.h"

namespace plexus::comm {

plx_result_t hierarchical_reduce(Transport& transport, uint64_t tag_base, const CollArgs& args) {
  const int n = transport.size(), me = transport.rank();
  if (reduce_trivially(args, n)) return PLX_SUCCESS;
  HostLayout fallback;
  const HostLayout* layout = nullptr;
  PLX_CHECK(resolve_layout(args.hosts, n, me, "hierarchical_reduce", &fallback, &layout));
  // The slices tree_pipeline.h will cut (one tree, two indices per slice).
  const size_t elem = datatype_bytes(args.datatype);
  const size_t slices =
      slices_of(args.count, slice_elems_for(args.chunk_bytes, elem, args.count, 2));
  const HostTree tree =
      host_tree(*layout, args.root, slices > 1 ? LeaderShape::Chain : LeaderShape::Binomial);
  const std::vector<TreeRole> trees = {tree_role(tree.parent, me, 0, args.count)};
  void* out = me == args.root ? args.recvbuf : nullptr;  // elsewhere recvbuf is unused, maybe NULL
  return tree_reduce_broadcast(transport, tag_base, trees, tree_buffers(args, out, false));
}

}  // namespace plexus::comm
