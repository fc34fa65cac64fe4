// tree_pipeline.h - pipelined reduction up one or two trees, and optionally broadcast back down.
//
// The engine shared by double_binary_tree_allreduce.cpp (two trees, reduce then broadcast) and
// binomial_reduce.cpp (one tree, reduce only). Each algorithm draws its trees as a parent for
// every rank and says which elements each tree carries; this file moves the data.
//
// Slices. A tree's elements are cut into S slices of at most slice_elems (chunk_bytes worth).
// Slice k goes up the tree: a leaf sends its own input; a node with children combines its input
// with each child's partial (received into a staging slot) in its accumulator and sends that to
// its parent; the root's accumulator then holds the final value (divided once by n for
// PLX_AVG). With `broadcast`, slice k then goes down: the root sends it to its children and each
// node forwards what it receives, so every rank ends with the root's exact bytes.
//
//     up (reduce)                 down (broadcast)
//        root                          root           slice k+1 goes up while
//       ^    ^                        /    \          slice k comes down
//   node      node                node      node
//   ^  ^      ^  ^                /  \      /  \      (interior: recv_reduce_send up,
// leaf leaf leaf leaf          leaf leaf leaf leaf     recv_copy_send down; leaves: send
//                                                     up, recv down)
//
// Systolic schedule. With h(x) the height of x (0 for a leaf), H the root's height and d(x) the
// depth of x (0 at the root), the up message of slice k from x travels at time T = k + h(x), and
// the down message of slice k to x at time T = k + H + d(x): every message's inputs are strictly
// earlier. Messages are ordered by the key (T, tree, up/down, sender, receiver), which all ranks
// compute alike. Each rank waits for its receives in key order (kRecvDepth posted ahead, one
// FIFO) and posts its sends in key order, each one before it waits for any receive with a larger
// key (kSendDepth in flight). Then the unfinished message with the lowest key can always finish:
// its sender has used every receive it depends on (all have smaller keys) and so has posted it,
// and its receiver has finished every receive with a smaller key and so has posted its receive.
// Nothing deadlocks (pipeline.h's rule, with the key as the message number), and in steady state
// every tree edge carries one slice per time step, up and down at once, both trees interleaved.
//
// Tags: slice k of tree t, up (0) or down (1), is tag_base | ((k * trees + t) * 2 + dir); a pair
// of ranks shares at most one edge per tree, so every (peer, tag) pair is unique.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "comm/algorithms/algorithms.h"
#include "comm/transport/transport.h"
#include "plexus/plexus.h"

namespace plexus::comm {

// One tree as this rank sees it, with the elements [begin, begin + count) it carries.
struct TreeRole {
  int parent = -1;                   // -1: this rank is the root
  std::vector<int> children;         // in the order their partials are combined: (height, rank)
  std::vector<size_t> child_height;  // h(child), same order
  size_t height = 0;                 // h(this rank): 0 for a leaf
  size_t depth = 0;                  // d(this rank): 0 for the root
  size_t tree_height = 0;            // H = h(root)
  size_t begin = 0;                  // elements
  size_t count = 0;
};

// Builds this rank's role from the parent of every rank (parent[root] == -1; a tree of depth
// O(log n), as binary and binomial trees are).
TreeRole tree_role(const std::vector<int>& parent, int rank, size_t begin, size_t count);

struct TreeBuffers {
  const void* in = nullptr;  // this rank's input, all the trees' elements
  void* out = nullptr;       // the accumulator; nullptr on a rank without output (reduce)
  plx_datatype_t datatype = PLX_FLOAT32;
  plx_red_op_t op = PLX_SUM;
  size_t chunk_bytes = size_t{1} << 20;
  bool broadcast = false;  // true: send the root's result back down (needs out)
};

// The buffers of a reduction call: args' sendbuf, datatype, op and chunk_bytes, with `out` and
// `broadcast` as above.
inline TreeBuffers tree_buffers(const CollArgs& args, void* out, bool broadcast) {
  return {.in = args.sendbuf,
          .out = out,
          .datatype = args.datatype,
          .op = args.op,
          .chunk_bytes = args.chunk_bytes,
          .broadcast = broadcast};
}

// Runs the schedule above over `trees` (one or two). `in` may equal `out` (in place). Ranks with
// children but no `out` accumulate in scratch memory. Returns the first transport failure.
plx_result_t tree_reduce_broadcast(Transport& transport, uint64_t tag_base,
                                   const std::vector<TreeRole>& trees, const TreeBuffers& io);

}  // namespace plexus::comm
