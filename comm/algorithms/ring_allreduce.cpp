// ring_allreduce.cpp - bandwidth-optimal ring allreduce, pipelined in slices.
//
// P. Patarasuk and X. Yuan, "Bandwidth optimal all-reduce algorithms for clusters of
// workstations", J. Parallel Distrib. Comput. 69(2), 2009. Also NCCL's runRing and Gloo's
// AllreduceRing.
//
// The n ranks form the ring r -> r+1 (mod n). The count elements are split into n near-equal
// segments (the first count % n segments hold one element more; some are empty if count < n).
//
//        seg0  seg1  seg2  seg3            step t: rank r sends segment (r - t) mod n to r+1
//   r0  [ a0 ][ a1 ][ a2 ][ a3 ]                   and receives segment (r - t - 1) mod n
//   r1  [ b0 ][ b1 ][ b2 ][ b3 ]           from r-1.
//   r2  [ c0 ][ c1 ][ c2 ][ c3 ]
//   r3  [ d0 ][ d1 ][ d2 ][ d3 ]   r0 -> r1 -> r2 -> r3 -> r0
//
// Phase 1, reduce-scatter, steps t = 0..n-2: the received segment is reduced into recvbuf; after
//   step n-2 rank r holds segment (r+1) mod n fully reduced (for PLX_AVG it divides it by n now).
// Phase 2, allgather, steps t = n-1..2n-3: the received segment is final and lands in recvbuf.
// What a rank receives at step t it sends at step t+1, so the steps chain, slice by slice:
//   t = 0            send               (segment r, from sendbuf, or recvbuf when in place)
//   t = 0..n-3       recv_reduce_send
//   t = n-2          recv_reduce_copy_send  (the segment is now final: divide for AVG, forward)
//   t = n-1..2n-4    recv_copy_send
//   t = 2n-3         recv
// A rank receives each segment once during reduce-scatter and combines it with its own
// contribution: recvbuf[g] = sendbuf[g] op received (reduce_copy), so out of place sendbuf is
// only read and every recvbuf segment is written before it is read.
//
// Pipelining: every segment is cut into S slices of at most chunk_bytes (the same S for all
// segments, so a trailing slice may be empty; SlicedBlocks in slices.h). Slice k of step t is
// message u = t*S + k, tagged tag_base | u. Receives are posted kRecvDepth ahead into staging
// slots (reduce-scatter) or straight into recvbuf (allgather), so one slice is reduced while the
// next arrives; up to kSendDepth sends are in flight. The send of message u+S depends only on
// receive u. Pipeline::run() (pipeline.h) drives the messages in that order.
//
// Bytes on the wire: each rank sends and receives 2(n-1) segments,
//   2(n-1)/n * count * elem_bytes per rank, which is optimal for n ranks (Patarasuk & Yuan).
#include "comm/algorithms/algorithms.h"
#include "comm/algorithms/pipeline.h"
#include "comm/algorithms/ring.h"
#include "comm/algorithms/slices.h"
#include "comm/algorithms/trivial_reduction.h"
#include "comm/reduce/reduce.h"

namespace plexus::comm {
namespace {

constexpr size_t kSendDepth = 4;
constexpr size_t kRecvDepth = 2;

}  // namespace

plx_result_t ring_allreduce(Transport& transport, uint64_t tag_base, const CollArgs& args) {
  if (reduce_trivially(args, transport.size())) return PLX_SUCCESS;
  const size_t n = static_cast<size_t>(transport.size());
  const plx_datatype_t datatype = args.datatype;
  const plx_red_op_t op = args.op;
  const size_t elem = datatype_bytes(datatype);
  const size_t r = static_cast<size_t>(transport.rank());
  auto* out = static_cast<unsigned char*>(args.recvbuf);
  const auto* in = static_cast<const unsigned char*>(args.sendbuf);

  // n segments, each in S slices; 2(n-1) steps of S messages must stay below kTagIndexLimit.
  const SlicedBlocks segs(args.count, n, elem, args.chunk_bytes, 2 * (n - 1));
  const size_t S = segs.slices;
  const size_t messages = 2 * (n - 1) * S;
  const Ring ring{n, r, r};  // step t sends segment (r - t) mod n
  Pipeline pipe(transport, kSendDepth, kRecvDepth, segs.slice_elems * elem);  // staging slots

  // Message u = t*S + k: slice k of the segment of step t.
  const auto post_recv = [&](size_t u) {
    const size_t t = u / S, k = u % S, g = ring.recv_block(t);
    const size_t bytes = segs.slice_count(g, k) * elem;
    void* dst = t < n - 1 ? static_cast<void*>(pipe.staging(u))   // reduce-scatter: stage
                          : out + segs.slice_begin(g, k) * elem;  // allgather: in place
    return pipe.post_recv(ring.prev(), tag_base | u, dst, bytes);
  };
  const auto send = [&](size_t u) {
    const size_t t = u / S, k = u % S, g = ring.send_block(t);
    const unsigned char* src = t == 0 ? in : out;  // step 0: this rank's own segment
    return pipe.send(ring.next(), tag_base | u, src + segs.slice_begin(g, k) * elem,
                     segs.slice_count(g, k) * elem);
  };
  // Combines received message u with this rank's own segment into recvbuf (reduce-scatter).
  const auto reduce = [&](size_t u) {
    const size_t t = u / S, k = u % S, g = ring.recv_block(t);
    const size_t off = segs.slice_begin(g, k) * elem, len = segs.slice_count(g, k);
    reduce_copy(out + off, in + off, pipe.staging(u), len, datatype, op);  // in == out in place
    if (t == n - 2 && op == PLX_AVG) divide_by(out + off, len, datatype, n);
  };

  // The step primitives, by what they do with receive u once it lands; each makes message u + S
  // (the same slice, one step later) ready to send, and the last step ends.
  //   recv_reduce_send       t < n-2         reduce into recvbuf
  //   recv_reduce_copy_send  t = n-2         reduce, and divide for AVG: the segment is final
  //   recv_copy_send, recv   t = n-1..2n-3   nothing: the slice landed in recvbuf
  const auto use = [&](size_t u) {
    if (u / S < n - 1) reduce(u);
    return PLX_SUCCESS;
  };
  return pipe.run({.recvs = messages,
                   .sends = messages,
                   .recv_ahead = kRecvDepth,
                   .post_recv = post_recv,
                   .post_send = send,
                   // send: step 0 at once; every later send forwards receive u - S.
                   .ready = [&](size_t u, size_t used) { return u < S || u - S < used; },
                   .use = use});
}

}  // namespace plexus::comm
