// binomial_gather.cpp - gather up a binomial tree, ceil(log2 n) rounds.
//
// The binomial gather of MPICH (R. Thakur, R. Rabenseifner and W. Gropp, "Optimization of
// collective communication operations in MPICH", IJHPCA 19(1), 2005), on binomial_tree.h's tree.
// Ranks are renumbered relative to the root, v = (rank - root) mod n. Rank v, whose lowest set bit
// is `mask`, owns the subtree v .. min(v + mask, n) - 1; its children are v + 2^j for 2^j < mask,
// and child c owns the next min(2^j, n - c) blocks. Every rank receives its children's subtrees
// behind its own block, in relative order, then sends the whole subtree to its parent v - mask. n =
// 7:
//
//                 0                     round 0: 1->0 {1}   3->2 {3}   5->4 {5}
//         +-------+---+---+             round 1: 2->0 {2,3}            6->4 {6}
//         4       2       1             round 2: 4->0 {4,5,6}
//       +-+-+     |
//       6   5     3                     (relative ranks; {} = the blocks in the message)
//
// The root lands each child's subtree straight in recvbuf, at real blocks root+c ..; the one
// subtree whose blocks wrap past real block n-1 is received into scratch and copied in two
// parts ("rotated into place"). Interior ranks gather into scratch of their subtree's size;
// leaves send sendbuf itself. Every receive of a rank is posted before it waits.
// In place on the root when sendbuf == recvbuf + root*count elements.
//
// Tags: every message is tag_base | 0 (each rank sends once, to its parent).
// Bytes on the wire: the root receives n-1 blocks, as in linear_gather, but in ceil(log2 n)
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

plx_result_t binomial_gather(Transport& transport, uint64_t tag_base, const CollArgs& args) {
  const BinomialTree tree(transport.size(), args.root, transport.rank());
  const size_t n = tree.n, root = tree.root, v = tree.v;
  const size_t block = args.count * datatype_bytes(args.datatype);
  if (block == 0) return PLX_SUCCESS;
  const auto* in = static_cast<const unsigned char*>(args.sendbuf);

  if (tree.leaf()) return send_one(transport, tree.parent(), tag_base, in, block);  // as it is
  if (v != 0) {  // interior: own block, then the children's subtrees, up to the parent
    StagingBuffer tmp(tree.extent(v) * block);
    std::memcpy(tmp.data(), in, block);
    Pipeline pipe(transport, 1, tree.children(), 0);
    for (size_t bit = 1; bit < tree.mask() && v + bit < n; bit <<= 1) {
      PLX_CHECK(pipe.post_recv(tree.real(v + bit), tag_base, tmp.data() + bit * block,
                               tree.extent(v + bit) * block));
    }
    PLX_CHECK(pipe.finish());
    PLX_CHECK(pipe.send(tree.parent(), tag_base, tmp.data(), tree.extent(v) * block));
    return tmp.settle(pipe.finish());
  }

  // The root: child c's subtree goes to real blocks (root + c) mod n onwards; at most one wraps.
  auto* out = static_cast<unsigned char*>(args.recvbuf);
  const size_t wrap_child = tree.wrapping_child();
  StagingBuffer wrap(wrap_child != 0 ? tree.extent(wrap_child) * block : 0);
  Pipeline pipe(transport, 1, std::max<size_t>(tree.children(), 1), 0);
  for (size_t bit = 1; bit < n; bit <<= 1) {
    unsigned char* dst = bit == wrap_child ? wrap.data() : out + (root + bit) % n * block;
    PLX_CHECK(pipe.post_recv(tree.real(bit), tag_base, dst, tree.extent(bit) * block));
  }
  unsigned char* own = out + root * block;
  if (in != own) std::memcpy(own, in, block);
  PLX_CHECK(pipe.finish());
  if (wrap_child != 0) {  // rotate into place: the blocks up to real n-1, then from real 0
    const size_t head = tree.wrap_head(wrap_child);
    std::memcpy(out + (root + wrap_child) * block, wrap.data(), head * block);
    std::memcpy(out, wrap.data() + head * block, (tree.extent(wrap_child) - head) * block);
  }
  return wrap.settle(PLX_SUCCESS);
}

}  // namespace plexus::comm
