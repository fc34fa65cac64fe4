// binomial_reduce.cpp - binomial-tree reduce towards the root, pipelined in slices.
//
// The MPICH algorithm (R. Thakur, R. Rabenseifner and W. Gropp, "Optimization of collective
// communication operations in MPICH", IJHPCA 19(1), 2005), with NCCL-style slicing for large
// messages, on binomial_tree.h's tree. Ranks are renumbered relative to the root,
// v = (rank - root) mod n, so the root is v = 0. In round j, every v whose lowest set bit is 2^j
// sends its partial to v - 2^j, which combines it into its own: v receives from v + 2^i for every
// 2^i below its lowest set bit (the root: below n), in increasing order, then sends to v minus its
// lowest set bit. n = 7:
//
//                 0
//         +-------+---+---+
//         4       2       1          round 0: 1->0, 3->2, 5->4
//       +-+-+     |                  round 1: 2->0, 6->4
//       6   5     3                  round 2: 4->0
//
// Slices: the count elements are cut into slices of at most chunk_bytes, and slice k flows up
// the tree on tree_pipeline.h's systolic schedule (a node of height h sends slice k at step
// k + h), so while the root combines slice k the leaves already send slice k + h. A leaf sends
// straight from sendbuf; an interior rank combines its input and its children's partials
// (received into staging slots) in an accumulator: recvbuf at the root, scratch memory elsewhere,
// since recvbuf may be NULL there (only the root writes recvbuf). The root divides by n for
// PLX_AVG once a slice is complete.
//
// Bytes on the wire: every non-root rank sends count * elem_bytes once; a rank receives that
// much from each child (the root from ceil(log2 n) children). Latency: ceil(log2 n) message
// steps plus one step per further slice.
#include <vector>

#include "comm/algorithms/algorithms.h"
#include "comm/algorithms/binomial_tree.h"
#include "comm/algorithms/tree_pipeline.h"
#include "comm/algorithms/trivial_reduction.h"
#include "comm/reduce/reduce.h"

namespace plexus::comm {

plx_result_t binomial_reduce(Transport& transport, uint64_t tag_base, const CollArgs& args) {
  const int n = transport.size();
  const int r = transport.rank();
  if (reduce_trivially(args, n)) return PLX_SUCCESS;

  // binomial_tree.h's tree, drawn as the parent of every rank.
  std::vector<int> parent(n);
  for (int x = 0; x < n; ++x) {
    const BinomialTree tree(n, args.root, x);
    parent[x] = tree.v == 0 ? -1 : tree.parent();
  }
  const std::vector<TreeRole> trees = {tree_role(parent, r, 0, args.count)};
  void* out = r == args.root ? args.recvbuf : nullptr;  // elsewhere recvbuf is unused, maybe NULL
  return tree_reduce_broadcast(transport, tag_base, trees, tree_buffers(args, out, false));
}

}  // namespace plexus::comm
