// ring_reduce_scatter.cpp - bandwidth-optimal ring reduce-scatter, pipelined in slices.
//
// P. Patarasuk and X. Yuan, "Bandwidth optimal all-reduce algorithms for clusters of
// workstations", J. Parallel Distrib. Comput. 69(2), 2009 (the first phase of their ring
// allreduce); NCCL's runRing for ncclReduceScatter.
//
// sendbuf holds n blocks of count elements; block g of the reduction belongs to rank g. The ranks
// form the ring r -> r+1 (mod n). Every block travels n-1 hops, picks up one contribution per
// hop and ends at its owner:
//
//   step t: rank r sends the partial sum of block (r - t - 1) mod n to r+1, and receives the
//           partial sum of block (r - t - 2) mod n from r-1 and adds its own contribution.
//
//   n = 4, block 3:   r0 ----> r1 ----> r2 ----> r3 (owner)
//                     a3      a3+b3   a3+b3+c3   a3+b3+c3+d3 -> recvbuf of r3
//
// The steps as primitives, slice by slice:
//   t = 0          send               own block (r-1) mod n, straight from sendbuf
//   t = 0..n-3     recv_reduce_send   partial sum + own block, forwarded to r+1
//   t = n-2        recv_reduce_copy   partial sum + own block r -> recvbuf (divided by n for AVG)
// recvbuf is written only by the last step and sendbuf never (in place, recvbuf is block r of
// sendbuf, read by that same last step only).
//
// Pipelining: each block is cut into S slices of at most chunk_bytes. Message u = k*(n-1) + t
// carries slice k at step t (slice-major, like NCCL's loop over chunks: slice k goes around the
// ring while slice k+1 follows it), tagged tag_base | u; Pipeline::run() (pipeline.h) drives them
// in that order. Every rank sends one message per step of this order, so all links stay busy.
// Receive u lands in staging slot u mod kSlots, the rank's own contribution is added there in
// place, and the slot is sent on as message u+1: partial sums need no block-sized buffer. The slot
// is reused by receive u + kSlots, posted after receive u + kSlots - kRecvDepth has been used; by
// then every send numbered <= that has been posted (pipeline.h's rule), so with kSendDepth sends in
// flight send u+1 has completed since u + 1 <= u + kSlots - kRecvDepth - kSendDepth.
//
// Bytes on the wire: each rank sends and receives (n-1) * count * elem_bytes, the minimum for a
// reduce-scatter (Patarasuk & Yuan), in (n-1) * S messages.
#include <algorithm>

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
// A slot holds receive u until its sum has gone out as message u+1 (see the file comment).
constexpr size_t kSlots = kRecvDepth + kSendDepth + 1;

}  // namespace

plx_result_t ring_reduce_scatter(Transport& transport, uint64_t tag_base, const CollArgs& args) {
  if (reduce_trivially(args, transport.size())) return PLX_SUCCESS;
  const size_t count = args.count;
  const plx_datatype_t datatype = args.datatype;
  const plx_red_op_t op = args.op;
  const size_t elem = datatype_bytes(datatype);
  const size_t n = static_cast<size_t>(transport.size());
  const size_t r = static_cast<size_t>(transport.rank());
  const auto* in = static_cast<const unsigned char*>(args.sendbuf);
  auto* out = static_cast<unsigned char*>(args.recvbuf);

  const size_t steps = n - 1;
  const size_t slice_elems = slice_elems_for(args.chunk_bytes, elem, count, steps);
  const size_t messages = slices_of(count, slice_elems) * steps;
  const Ring ring{n, r, (r + n - 1) % n};  // block r ends here
  Pipeline pipe(transport, kSendDepth, kSlots, slice_elems * elem);

  // Message u: slice k = u / steps of block ring.send_block(t) or recv_block(t), t = u % steps.
  const auto slice_off = [&](size_t u) { return (u / steps) * slice_elems; };
  const auto slice_len = [&](size_t u) { return std::min(slice_elems, count - slice_off(u)); };
  const auto own = [&](size_t block, size_t u) {  // this rank's contribution to a slice
    return in + (block * count + slice_off(u)) * elem;
  };

  const auto post_recv = [&](size_t u) {
    return pipe.post_recv(ring.prev(), tag_base | u, pipe.staging(u), slice_len(u) * elem);
  };
  const auto send = [&](size_t u) {
    const unsigned char* src = u % steps == 0 ? own(ring.send_block(0), u) : pipe.staging(u - 1);
    return pipe.send(ring.next(), tag_base | u, src, slice_len(u) * elem);
  };
  const auto recv_reduce_send = [&](size_t u) {  // the slot becomes send u+1
    reduce_into(pipe.staging(u), own(ring.recv_block(u % steps), u), slice_len(u), datatype, op);
  };
  const auto recv_reduce_copy = [&](size_t u) {
    unsigned char* dst = out + slice_off(u) * elem;
    reduce_copy(dst, own(r, u), pipe.staging(u), slice_len(u), datatype, op);
    if (op == PLX_AVG) divide_by(dst, slice_len(u), datatype, n);
  };

  const auto use = [&](size_t u) {
    if (u % steps < steps - 1) {
      recv_reduce_send(u);
    } else {
      recv_reduce_copy(u);  // step n-2
    }
    return PLX_SUCCESS;
  };

  return pipe.run({.recvs = messages,
                   .sends = messages,
                   .recv_ahead = kRecvDepth,
                   .post_recv = post_recv,
                   .post_send = send,
                   // Send m forwards receive m-1, unless it starts a slice (t = 0): then at once.
                   .ready = [&](size_t m, size_t used) { return m % steps == 0 || m <= used; },
                   .use = use});
}

}  // namespace plexus::comm
