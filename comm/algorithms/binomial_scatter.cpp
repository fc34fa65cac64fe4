// binomial_scatter.cpp - scatter down a binomial tree, ceil(log2 n) rounds.
//
// The binomial scatter of MPICH (R. Thakur, R. Rabenseifner and W. Gropp, "Optimization of
// collective communication operations in MPICH", IJHPCA 19(1), 2005): binomial_gather run
// backwards, on binomial_tree.h's tree. Ranks are renumbered relative to the root, v = (rank -
// root) mod n. Rank v, whose lowest set bit is `mask`, receives the blocks of its subtree v ..
// min(v + mask, n) - 1, in relative order, from its parent v - mask; it keeps the first and sends
// each child c = v + 2^j (2^j < mask, largest first) the min(2^j, n - c) blocks of c's subtree. n =
// 7:
//
//                 0                     round 0: 0->4 {4,5,6}
//         +-------+---+---+             round 1: 0->2 {2,3}            4->6 {6}
//         4       2       1             round 2: 0->1 {1}   2->3 {3}   4->5 {5}
//       +-+-+     |
//       6   5     3                     (relative ranks; {} = the blocks in the message)
//
// The root sends each subtree straight from sendbuf, at real blocks root+c ..; the one subtree
// whose blocks wrap past real block n-1 is first copied, in two parts, into scratch in relative
// order ("rotated"). Interior ranks receive into scratch of their subtree's size; leaves
// receive straight into recvbuf. A rank posts all its sends before it waits for any.
// In place on the root when recvbuf == sendbuf + root*count elements.
//
// Tags: every message is tag_base | 0 (each rank receives once, from its parent).
// Bytes on the wire: the root sends n-1 blocks, as in linear_scatter, but in ceil(log2 n)
// message times; a block is forwarded once per level (about (n/2) log2 n blocks in all), so
// this is the choice for small blocks.
#include <algorithm>
#include <cstring>

#include "comm/algorithms/algorithms.h"
#include "comm/algorithms/binomial_tree.h"
#include "comm/algorithms/pipeline.h"
#include "comm/algorithms/staging_buffer.h"
#include "comm/base/error.h"
#include "comm/reduce/reduce.h"

namespace plexus::comm {

plx_result_t binomial_scatter(Transport& transport, uint64_t tag_base, const CollArgs& args) {
  const BinomialTree tree(transport.size(), args.root, transport.rank());
  const size_t n = tree.n, root = tree.root, v = tree.v;
  const size_t block = args.count * datatype_bytes(args.datatype);
  if (block == 0) return PLX_SUCCESS;
  auto* out = static_cast<unsigned char*>(args.recvbuf);

  // A leaf receives its block where it belongs.
  if (tree.leaf()) return recv_one(transport, tree.parent(), tag_base, out, block);
  if (v != 0) {  // interior: the subtree from the parent, keep block 0, pass the rest down
    StagingBuffer tmp(tree.extent(v) * block);
    Pipeline pipe(transport, tree.children(), 1, 0);
    PLX_CHECK(pipe.post_recv(tree.parent(), tag_base, tmp.data(), tree.extent(v) * block));
    PLX_CHECK(pipe.wait_recv());
    for (size_t bit = tree.mask() >> 1; bit > 0; bit >>= 1) {
      if (v + bit >= n) continue;
      PLX_CHECK(pipe.send(tree.real(v + bit), tag_base, tmp.data() + bit * block,
                          tree.extent(v + bit) * block));
    }
    std::memcpy(out, tmp.data(), block);
    return tmp.settle(pipe.finish());
  }

  // The root: child c's subtree is real blocks (root + c) mod n onwards; at most one wraps.
  const auto* in = static_cast<const unsigned char*>(args.sendbuf);
  const size_t wrap_child = tree.wrapping_child();
  StagingBuffer wrap(wrap_child != 0 ? tree.extent(wrap_child) * block : 0);
  if (wrap_child != 0) {  // rotate: the blocks up to real n-1, then from real 0
    const size_t head = tree.wrap_head(wrap_child);
    std::memcpy(wrap.data(), in + (root + wrap_child) * block, head * block);
    std::memcpy(wrap.data() + head * block, in, (tree.extent(wrap_child) - head) * block);
  }
  Pipeline pipe(transport, std::max<size_t>(tree.children(), 1), 1, 0);
  for (size_t bit = tree.mask() >> 1; bit > 0; bit >>= 1) {  // every bit < n: mask/2 < n
    const unsigned char* src = bit == wrap_child ? wrap.data() : in + (root + bit) % n * block;
    PLX_CHECK(pipe.send(tree.real(bit), tag_base, src, tree.extent(bit) * block));
  }
  const unsigned char* own = in + root * block;
  if (out != own) std::memcpy(out, own, block);
  return wrap.settle(pipe.finish());
}

}  // namespace plexus::comm
