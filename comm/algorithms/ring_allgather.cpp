// ring_allgather.cpp - bandwidth-optimal ring allgather, pipelined in slices.
//
// P. Patarasuk and X. Yuan, "Bandwidth optimal all-reduce algorithms for clusters of
// workstations", J. Parallel Distrib. Comput. 69(2), 2009 (the second phase of their ring
// allreduce); NCCL's runRing for ncclAllGather.
//
// recvbuf holds n blocks of count elements; block g is rank g's sendbuf. The ranks form the ring
// r -> r+1 (mod n) and every block travels n-1 hops, copied into recvbuf at each rank it passes:
//
//   step t: rank r sends block (r - t) mod n to r+1 and receives block (r - t - 1) mod n from r-1.
//
//   n = 4, block 0:   r0 ----> r1 ----> r2 ----> r3
//                     a0       a0       a0       a0
//
// The steps as primitives, slice by slice:
//   t = 0          send             own block r (sendbuf; out of place it is first copied into
//                                   block r of recvbuf, in place it is already there)
//   t = 0..n-3     recv_copy_send   the received slice lands in recvbuf and is forwarded from it
//   t = n-2        recv
// Every block of recvbuf is written once and only read afterwards, so the sends can read recvbuf
// while later receives land in other blocks.
//
// Pipelining: each block is cut into S slices of at most chunk_bytes. Message u = k*(n-1) + t
// carries slice k at step t (slice-major, like NCCL's loop over chunks), tagged tag_base | u.
// kRecvDepth receives are posted ahead, straight into recvbuf, and up to kSendDepth sends are in
// flight; send u+1 depends only on receive u (Pipeline::run() in pipeline.h drives them).
//
// Bytes on the wire: each rank sends and receives (n-1) * count * elem_bytes, the minimum for an
// allgather, in (n-1) * S messages.
#include <algorithm>
#include <cstring>

#include "comm/algorithms/algorithms.h"
#include "comm/algorithms/pipeline.h"
#include "comm/algorithms/ring.h"
#include "comm/algorithms/slices.h"
#include "comm/reduce/reduce.h"

namespace plexus::comm {
namespace {

constexpr size_t kSendDepth = 4;
constexpr size_t kRecvDepth = 4;

}  // namespace

plx_result_t ring_allgather(Transport& transport, uint64_t tag_base, const CollArgs& args) {
  const size_t count = args.count;
  const size_t elem = datatype_bytes(args.datatype);
  const size_t n = static_cast<size_t>(transport.size());
  const size_t r = static_cast<size_t>(transport.rank());
  const auto* in = static_cast<const unsigned char*>(args.sendbuf);
  auto* out = static_cast<unsigned char*>(args.recvbuf);
  if (count == 0) return PLX_SUCCESS;
  // Out of place, this rank's block goes into recvbuf first; in place it is there already.
  if (in != out + r * count * elem) std::memcpy(out + r * count * elem, in, count * elem);
  if (n == 1) return PLX_SUCCESS;

  const size_t steps = n - 1;
  const size_t slice_elems = slice_elems_for(args.chunk_bytes, elem, count, steps);
  const size_t messages = slices_of(count, slice_elems) * steps;
  const Ring ring{n, r, r};  // step t sends block (r - t) mod n
  Pipeline pipe(transport, kSendDepth, kRecvDepth, 0);

  // Message u: slice k = u / steps of the block of step t = u % steps, in recvbuf.
  const auto slice_off = [&](size_t u) { return (u / steps) * slice_elems; };
  const auto slice_len = [&](size_t u) { return std::min(slice_elems, count - slice_off(u)); };
  const auto slice_at = [&](size_t block, size_t u) {
    return out + (block * count + slice_off(u)) * elem;
  };
  const auto post_recv = [&](size_t u) {
    return pipe.post_recv(ring.prev(), tag_base | u, slice_at(ring.recv_block(u % steps), u),
                          slice_len(u) * elem);
  };
  const auto send = [&](size_t u) {
    return pipe.send(ring.next(), tag_base | u, slice_at(ring.send_block(u % steps), u),
                     slice_len(u) * elem);
  };

  // recv_copy_send and recv: the slice lands in recvbuf, where (unless t = n-2) the next send
  // reads it; there is nothing else to do with it.
  return pipe.run({.recvs = messages,
                   .sends = messages,
                   .recv_ahead = kRecvDepth,
                   .post_recv = post_recv,
                   .post_send = send,
                   // Send m forwards receive m-1, unless it starts a slice (t = 0): then at once.
                   .ready = [&](size_t m, size_t used) { return m % steps == 0 || m <= used; }});
}

}  // namespace plexus::comm
