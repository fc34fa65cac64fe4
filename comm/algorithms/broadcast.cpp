// broadcast.cpp - binomial-tree broadcast (small messages) and pipelined chain broadcast (large).
//
// Ranks are renumbered relative to the root, v = (rank - root) mod n, so the root is v = 0.
//
// Small messages (count * elem_bytes < chunk_bytes): binomial tree (binomial_tree.h),
// ceil(log2 n) rounds (the MPICH algorithm; R. Thakur, R. Rabenseifner and W. Gropp, "Optimization
// of collective communication operations in MPICH", IJHPCA 19(1), 2005). In round j, every rank
// that already has the data sends it to v + 2^j. A rank receives once, from v minus its lowest set
// bit, then sends to v + 2^j for every 2^j below that bit. n = 7:
//
//                 0
//         +-------+---+---+
//         4       2       1          round 0: 0->1    round 1: 0->2, 1->3
//       +-+-+     |                  round 2: 0->4, 1->5, 2->6
//       6   5     3
//
//   Latency ceil(log2 n) messages; the root sends count * elem_bytes per child (log2 n children).
//
// Large messages: pipelined chain 0 -> 1 -> ... -> n-1 in slices of at most chunk_bytes
// (the pipelined ring broadcast, e.g. Patarasuk & Yuan's pipelined broadcast, JPDC 2009):
//
//   v0 --s0 s1 s2--> v1 --s0 s1 s2--> v2 --> ... --> v(n-1)
//
//   Each non-root rank receives slice k into recvbuf (kRecvDepth receives posted ahead) and
//   forwards it while slice k+1 arrives: recv_copy_send, and recv on the last rank
//   (Pipeline::run() in pipeline.h, send k ready once receive k is in). Time ~
//   (n - 2 + slices) slice-times; every rank but the last sends count * elem_bytes once.
//
// Tags: tree message tag_base | 0 (one per receiver); chain slice k is tag_base | k.
// In place on the root when sendbuf == recvbuf; otherwise the root copies sendbuf into recvbuf.
#include <algorithm>
#include <cstring>

#include "comm/algorithms/algorithms.h"
#include "comm/algorithms/binomial_tree.h"
#include "comm/algorithms/pipeline.h"
#include "comm/base/error.h"
#include "comm/reduce/reduce.h"

namespace plexus::comm {
namespace {

constexpr size_t kSendDepth = 4;
constexpr size_t kRecvDepth = 4;

plx_result_t binomial_tree(Transport& transport, uint64_t tag_base, const void* src, void* dst,
                           size_t bytes, int root) {
  const BinomialTree tree(transport.size(), root, transport.rank());
  Pipeline pipe(transport, tree.children(), 1, 0);  // owns the requests, even on failure
  // recv from the parent
  if (tree.v != 0) {
    PLX_CHECK(pipe.post_recv(tree.parent(), tag_base, dst, bytes));
    PLX_CHECK(pipe.wait_recv());
    src = dst;
  }
  // send to the children v + 2^j for 2^j < mask, largest subtree first
  for (size_t bit = tree.mask() >> 1; bit > 0; bit >>= 1) {
    if (tree.v + bit < tree.n) PLX_CHECK(pipe.send(tree.real(tree.v + bit), tag_base, src, bytes));
  }
  return pipe.finish();
}

plx_result_t chain(Transport& transport, uint64_t tag_base, const void* src, void* dst,
                   size_t bytes, size_t slice_bytes, int root) {
  const int n = transport.size();
  const int v = (transport.rank() - root + n) % n;
  const int prev = (transport.rank() + n - 1) % n;
  const int next = (transport.rank() + 1) % n;
  // Slice numbers must stay below kTagIndexLimit.
  slice_bytes = std::max(slice_bytes, bytes / kTagIndexLimit + 1);
  const size_t slices = (bytes + slice_bytes - 1) / slice_bytes;
  const auto slice_len = [&](size_t k) { return std::min(slice_bytes, bytes - k * slice_bytes); };
  Pipeline pipe(transport, kSendDepth, kRecvDepth, 0);
  auto* out = static_cast<unsigned char*>(dst);
  // The root sends from src; every other rank forwards from recvbuf what it received there.
  const auto* from = v == 0 ? static_cast<const unsigned char*>(src) : out;

  // The root: send, slice by slice. The others: recv_copy_send, and recv on the last rank.
  return pipe.run({.recvs = v == 0 ? 0 : slices,
                   .sends = v == n - 1 ? 0 : slices,
                   .recv_ahead = kRecvDepth,
                   .post_recv =
                       [&](size_t k) {
                         return pipe.post_recv(prev, tag_base | k, out + k * slice_bytes,
                                               slice_len(k));
                       },
                   .post_send =
                       [&](size_t k) {
                         return pipe.send(next, tag_base | k, from + k * slice_bytes, slice_len(k));
                       },
                   .ready = [&](size_t k, size_t used) { return v == 0 || k < used; }});
}

}  // namespace

namespace {

// The root copies its input into recvbuf when out of place; from then on every rank works in
// recvbuf. Returns false when nothing is left to send.
bool prepare(Transport& transport, const CollArgs& args, size_t* bytes) {
  *bytes = args.count * datatype_bytes(args.datatype);
  if (*bytes == 0) return false;
  if (transport.rank() == args.root && args.sendbuf != args.recvbuf) {
    std::memcpy(args.recvbuf, args.sendbuf, *bytes);
  }
  return transport.size() > 1;
}

}  // namespace

plx_result_t binomial_broadcast(Transport& transport, uint64_t tag_base, const CollArgs& args) {
  size_t bytes = 0;
  if (!prepare(transport, args, &bytes)) return PLX_SUCCESS;
  return binomial_tree(transport, tag_base, args.recvbuf, args.recvbuf, bytes, args.root);
}

plx_result_t chain_broadcast(Transport& transport, uint64_t tag_base, const CollArgs& args) {
  size_t bytes = 0;
  if (!prepare(transport, args, &bytes)) return PLX_SUCCESS;
  return chain(transport, tag_base, args.recvbuf, args.recvbuf, bytes,
               std::max<size_t>(args.chunk_bytes, 1), args.root);
}

}  // namespace plexus::comm
