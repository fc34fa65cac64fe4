// ring_reduce.cpp - reduce as a ring reduce-scatter followed by a gather at the root, pipelined.
//
// Rabenseifner's reduce (R. Rabenseifner, "Optimization of collective reduction operations",
// ICCS 2004; R. Thakur, R. Rabenseifner and W. Gropp, IJHPCA 19(1), 2005): a reduce-scatter
// leaves rank r with segment r of the result, then every rank sends its segment to the root.
// Here the reduce-scatter is the pipelined ring (P. Patarasuk and X. Yuan, JPDC 69(2), 2009), so
// every link carries the same load and any n works.
//
// The count elements are split into n near-equal segments (the first count % n hold one element
// more; some are empty if count < n). The ring is r -> r+1 (mod n). n = 4, root 0:
//
//        seg0  seg1  seg2  seg3        step t = 0..n-2: rank r sends segment (r - t - 1) mod n
//   r0  [ a0 ][ a1 ][ a2 ][ a3 ]       to r+1 and receives segment (r - t - 2) mod n from r-1,
//   r1  [ b0 ][ b1 ][ b2 ][ b3 ]       combining it with its own: acc = sendbuf op received.
//   r2  [ c0 ][ c1 ][ c2 ][ c3 ]       After step n-2 rank r holds segment r complete (divided
//   r3  [ d0 ][ d1 ][ d2 ][ d3 ]       by n for PLX_AVG).
//
//   gather: r1 --seg1--> r0,  r2 --seg2--> r0,  r3 --seg3--> r0   (r0 keeps its seg0)
//
// Per slice, in the NCCL primitives: step 0 send (from sendbuf); steps 0..n-3 recv_reduce_send;
// step n-2 recv_reduce (then send to the root); the root's gather is recv into recvbuf.
// Ranks accumulate in recvbuf at the root and in scratch memory elsewhere (recvbuf may be NULL
// there); a received slice is staged and reduce_copy'd with this rank's input, so sendbuf is
// only read, and only the root writes recvbuf.
//
// Pipelining: every segment is cut into S slices of at most chunk_bytes (the same S for all, so
// a trailing slice may be empty; SlicedBlocks in slices.h). Ring message u = t*S + k is slice k
// of step t, tagged tag_base | u; the gather message of slice k is number (n-1)*S + k, tagged
// alike, and the root receives them in (k, sender) order. Windows and deadlock freedom are
// ring_allreduce.cpp's, by Pipeline::run() (pipeline.h): receives posted kRecvDepth ahead, and
// before waiting for a receive numbered u every ready send numbered <= u is posted (later ready
// ones while the window has room).
//
// Bytes on the wire: each rank sends (n-1)/n * count * elem_bytes around the ring and its
// segment (count/n) to the root; the root receives 2(n-1)/n * count * elem_bytes in all, which
// is the bound for large messages (a binomial tree puts log2(n) * count on the root's link).
#include "comm/algorithms/algorithms.h"
#include "comm/algorithms/pipeline.h"
#include "comm/algorithms/ring.h"
#include "comm/algorithms/slices.h"
#include "comm/algorithms/staging_buffer.h"
#include "comm/algorithms/trivial_reduction.h"
#include "comm/reduce/reduce.h"

namespace plexus::comm {
namespace {

constexpr size_t kSendDepth = 4;
constexpr size_t kRecvDepth = 4;

}  // namespace

plx_result_t ring_reduce(Transport& transport, uint64_t tag_base, const CollArgs& args) {
  if (reduce_trivially(args, transport.size())) return PLX_SUCCESS;
  const plx_datatype_t datatype = args.datatype;
  const plx_red_op_t op = args.op;
  const size_t elem = datatype_bytes(datatype);
  const size_t n = static_cast<size_t>(transport.size());
  const size_t r = static_cast<size_t>(transport.rank());
  const size_t root = static_cast<size_t>(args.root);
  const auto* in = static_cast<const unsigned char*>(args.sendbuf);

  // n segments, each in S slices; message numbers, up to n*S, stay below kTagIndexLimit.
  const SlicedBlocks segs(args.count, n, elem, args.chunk_bytes, n);
  const size_t S = segs.slices;
  const size_t ring_msgs = (n - 1) * S;
  const bool is_root = r == root;
  const size_t recvs = ring_msgs + (is_root ? (n - 1) * S : 0);
  const size_t sends = ring_msgs + (is_root ? 0 : S);
  const Ring ring{n, r, (r + n - 1) % n};  // segment r ends here
  // The gather receive j (j = k*(n-1) + x) is slice k from the x-th non-root rank.
  const auto gather_sender = [&](size_t j) {
    const size_t x = j % (n - 1);
    return x < root ? x : x + 1;
  };

  StagingBuffer scratch(is_root ? 0 : args.count * elem);  // outlives the pipeline
  auto* acc = is_root ? static_cast<unsigned char*>(args.recvbuf) : scratch.data();
  Pipeline pipe(transport, kSendDepth, kRecvDepth, segs.slice_elems * elem);

  const auto post_recv = [&](size_t i) {
    if (i < ring_msgs) {  // reduce-scatter: stage
      const size_t t = i / S, k = i % S, g = ring.recv_block(t);
      return pipe.post_recv(ring.prev(), tag_base | i, pipe.staging(i),
                            segs.slice_count(g, k) * elem);
    }
    const size_t j = i - ring_msgs, k = j / (n - 1), x = gather_sender(j);  // gather: in place
    return pipe.post_recv(static_cast<int>(x), tag_base | (ring_msgs + k),
                          acc + segs.slice_begin(x, k) * elem, segs.slice_count(x, k) * elem);
  };
  const auto send = [&](size_t s) {
    if (s < ring_msgs) {
      const size_t t = s / S, k = s % S, g = ring.send_block(t);
      const unsigned char* src = t == 0 ? in : acc;  // step 0: this rank's own input
      return pipe.send(ring.next(), tag_base | s, src + segs.slice_begin(g, k) * elem,
                       segs.slice_count(g, k) * elem);
    }
    const size_t k = s - ring_msgs;  // gather: this rank's finished segment r
    return pipe.send(static_cast<int>(root), tag_base | s, acc + segs.slice_begin(r, k) * elem,
                     segs.slice_count(r, k) * elem);
  };
  // acc = sendbuf op received, for ring receive i; the last step finishes segment r.
  const auto reduce = [&](size_t i) {
    const size_t t = i / S, k = i % S, g = ring.recv_block(t);
    const size_t off = segs.slice_begin(g, k) * elem, len = segs.slice_count(g, k);
    reduce_copy(acc + off, in + off, pipe.staging(i), len, datatype, op);  // in == acc in place
    if (t == n - 2 && op == PLX_AVG) divide_by(acc + off, len, datatype, n);
  };

  // The message number of receive i, in the order shared with the senders.
  const auto number = [&](size_t i) {
    return i < ring_msgs ? i : ring_msgs + (i - ring_msgs) / (n - 1);
  };
  const auto use = [&](size_t i) {
    if (i < ring_msgs) reduce(i);  // recv_reduce_send, recv_reduce; the gather lands in place
    return PLX_SUCCESS;
  };

  return scratch.settle(
      pipe.run({.recvs = recvs,
                .sends = sends,
                .recv_ahead = kRecvDepth,
                .post_recv = post_recv,
                .post_send = send,
                // Step 0 sends this rank's own input at once; every later send (and, after
                // step n-2, the gather of a slice) forwards ring receive s - S.
                .ready = [&](size_t s, size_t used) { return s < S || s - S < used; },
                .number = number,
                .use = use}));
}

}  // namespace plexus::comm
