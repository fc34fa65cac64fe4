// double_binary_tree_allreduce.cpp - NCCL's double binary tree allreduce, pipelined in slices.
//
// P. Sanders, J. Speck and J. L. Traeff, "Two-tree algorithms for full bandwidth broadcast,
// reduction and scan", Parallel Computing 35(12), 2009; S. Jeaugey, "Massively scale your deep
// learning training with NCCL 2.4" (NVIDIA blog, 2019) and NCCL's src/graph/trees.cc.
//
// Tree 0 is the in-order binary tree of the ranks with rank 0 on top: the parent of r is r with
// its lowest set bit b moved up one place, (r ^ b) | 2b, or r ^ b when that is out of range.
// Odd ranks are leaves and even ranks interior. Tree 1 is tree 0 mirrored (r -> n-1-r) when n is
// even, or shifted by one (r -> r+1) when n is odd, so a leaf of one tree is interior in the
// other (for odd n rank 0, the root of tree 0, is interior in both). n = 8:
//
//   tree 0 (root 0)              tree 1 (mirrored, root 7)
//
//   0---------4                           3---------7
//           /   \                       /   \          odd ranks: leaves of tree 0,
//          2     6                     1     5         interior in tree 1; even ranks
//         / \   / \                   / \   / \        the other way round
//        1   3 5   7                 0   2 4   6
//
// n = 7: tree 0 is 0-4, 4 -> {2, 6}, 2 -> {1, 3}, 6 -> {5}; tree 1 is tree 0 shifted by one:
// 1-5, 5 -> {3, 0}, 3 -> {2, 4}, 0 -> {6}.
//
// The count elements are split in two halves: tree 0 carries [0, ceil(count/2)) and tree 1 the
// rest. Each half is cut into slices of at most chunk_bytes; slice k is reduced up its tree
// (recv_reduce_send at interior ranks, send at leaves, recv_reduce at the root, which divides by
// n for PLX_AVG) and broadcast back down (recv_copy_send at interior ranks, recv at leaves), so
// every rank receives the root's exact bytes: results are bit-identical on all ranks. Slices
// follow tree_pipeline.h's systolic schedule, so slice k+1 goes up while slice k comes down and
// the two trees run at once.
//
// In recvbuf: a rank accumulates its partial of slice k in recvbuf, sends it up, and later
// receives the final slice k into the same place. The parent sends slice k down only after it
// has received this rank's slice k up, so the up send has been read before the result lands.
//
// Bytes on the wire: a leaf sends its half up and receives it down; an interior rank receives
// two halves up, sends one up, receives one down and sends two down. A rank that is a leaf in
// one tree and interior in the other thus sends and receives 2 * count * elem_bytes in all, with
// up to 4 peers (the ring moves 2(n-1)/n * count * elem_bytes, but over 2(n-1) steps); the
// latency is about 2 log2(n) slice steps plus the number of slices per half.
#include <vector>

#include "comm/algorithms/algorithms.h"
#include "comm/algorithms/double_binary_tree.h"
#include "comm/algorithms/tree_pipeline.h"
#include "comm/algorithms/trivial_reduction.h"
#include "comm/reduce/reduce.h"

namespace plexus::comm {

plx_result_t double_binary_tree_allreduce(Transport& transport, uint64_t tag_base,
                                          const CollArgs& args) {
  const int n = transport.size();
  const int r = transport.rank();
  if (reduce_trivially(args, n)) return PLX_SUCCESS;

  std::vector<int> parent0(n), parent1(n);
  for (int x = 0; x < n; ++x) {
    parent0[x] = btree_parent(n, x);
    parent1[x] = second_tree_parent(n, x);
  }
  const size_t half = (args.count + 1) / 2;
  const std::vector<TreeRole> trees = {tree_role(parent0, r, 0, half),
                                       tree_role(parent1, r, half, args.count - half)};
  return tree_reduce_broadcast(transport, tag_base, trees, tree_buffers(args, args.recvbuf, true));
}

}  // namespace plexus::comm
