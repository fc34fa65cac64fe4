// binomial_gather.cpp - gather up a binomial tree, ceil(log2 n) rounds.
//
// The binomial gather of MPICH (R. Thakur, R. Rabenseifner and W. Gropp, "Optimization of
// collective communication operations in MPICH", IJHPCA 19(1), 2005). Ranks are renumbered
// relative to the root, v = (rank - root) mod n. Rank v, whose lowest set bit is `mask`, owns
// the subtree v .. min(v + mask, n) - 1; its children are v + 2^j for 2^j < mask, and child c
// owns the next min(2^j, n - c) blocks. Every rank receives its children's subtrees behind its
// own block, in relative order, then sends the whole subtree to its parent v - mask. n = 7:
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
#include "comm/algorithms/pipeline.h"
#include "comm/algorithms/staging_buffer.h"
#include "comm/core/error.h"
#include "comm/reduce/reduce.h"

namespace plexus::comm {

plx_result_t binomial_gather(Transport& transport, uint64_t tag_base, const CollArgs& args) {
  const size_t n = static_cast<size_t>(transport.size());
  const size_t root = static_cast<size_t>(args.root);
  const size_t v = (static_cast<size_t>(transport.rank()) + n - root) % n;
  const size_t block = args.count * datatype_bytes(args.datatype);
  if (block == 0) return PLX_SUCCESS;
  const auto real = [&](size_t u) { return static_cast<int>((u + root) % n); };
  // The lowest set bit of v (its parent is v - mask), or the first power of two >= n at the root.
  size_t mask = 1;
  while (v != 0 ? !(v & mask) : mask < n) mask <<= 1;
  const size_t span = std::min(mask, n - v);  // blocks in v's subtree
  const auto child_span = [&](size_t c) { return std::min(c - v, n - c); };
  size_t children = 0;
  for (size_t bit = 1; bit < mask; bit <<= 1) children += v + bit < n ? 1 : 0;
  const auto* in = static_cast<const unsigned char*>(args.sendbuf);

  if (v != 0 && children == 0) {        // a leaf sends its block as it is
    Pipeline pipe(transport, 1, 1, 0);  // owns the request, even on failure
    PLX_CHECK(pipe.send(real(v - mask), tag_base, in, block));
    return pipe.finish();
  }
  if (v != 0) {  // interior: own block, then the children's subtrees, up to the parent
    StagingBuffer tmp(span * block);
    std::memcpy(tmp.data(), in, block);
    Pipeline pipe(transport, 1, children, 0);
    for (size_t bit = 1; bit < mask && v + bit < n; bit <<= 1) {
      PLX_CHECK(pipe.post_recv(real(v + bit), tag_base, tmp.data() + bit * block,
                               child_span(v + bit) * block));
    }
    PLX_CHECK(pipe.finish());
    PLX_CHECK(pipe.send(real(v - mask), tag_base, tmp.data(), span * block));
    return tmp.settle(pipe.finish());
  }

  // The root: child c's subtree goes to real blocks (root + c) mod n onwards; at most one wraps.
  auto* out = static_cast<unsigned char*>(args.recvbuf);
  const auto wraps = [&](size_t c) { return root + c < n && root + c + child_span(c) > n; };
  size_t wrap_child = 0;  // none
  for (size_t bit = 1; bit < n; bit <<= 1) wrap_child = wraps(bit) ? bit : wrap_child;
  StagingBuffer wrap(wrap_child != 0 ? child_span(wrap_child) * block : 0);
  Pipeline pipe(transport, 1, std::max<size_t>(children, 1), 0);
  for (size_t bit = 1; bit < n; bit <<= 1) {
    unsigned char* dst = bit == wrap_child ? wrap.data() : out + (root + bit) % n * block;
    PLX_CHECK(pipe.post_recv(real(bit), tag_base, dst, child_span(bit) * block));
  }
  unsigned char* own = out + root * block;
  if (in != own) std::memcpy(own, in, block);
  PLX_CHECK(pipe.finish());
  if (wrap_child != 0) {  // rotate into place: the blocks up to real n-1, then from real 0
    const size_t head = n - (root + wrap_child);
    std::memcpy(out + (root + wrap_child) * block, wrap.data(), head * block);
    std::memcpy(out, wrap.data() + head * block, (child_span(wrap_child) - head) * block);
  }
  return wrap.settle(PLX_SUCCESS);
}

}  // namespace plexus::comm
