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
// segments, so a trailing slice may be empty). Slice k of step t is message u = t*S + k, tagged
// tag_base | u. Receives are posted kRecvDepth ahead into staging slots (reduce-scatter) or
// straight into recvbuf (allgather), so one slice is reduced while the next arrives; up to
// kSendDepth sends are in flight. The send of message u+S depends only on receive u.
//
// Bytes on the wire: each rank sends and receives 2(n-1) segments,
//   2(n-1)/n * count * elem_bytes per rank, which is optimal for n ranks (Patarasuk & Yuan).
#include <algorithm>
#include <cstring>
#include <limits>

#include "comm/algorithms/algorithms.h"
#include "comm/algorithms/pipeline.h"
#include "comm/core/error.h"
#include "comm/reduce/reduce.h"

namespace plexus::comm {
namespace {

constexpr size_t kSendDepth = 4;
constexpr size_t kRecvDepth = 2;

// Where segment g and its slices lie, in elements.
struct RingLayout {
  size_t count;
  size_t n;
  size_t slice_elems;  // at most chunk_bytes worth, >= 1
  size_t slices;       // S, per segment

  size_t seg_begin(size_t g) const { return g * (count / n) + std::min(g, count % n); }
  size_t seg_count(size_t g) const { return count / n + (g < count % n ? 1 : 0); }
  // Slice k of segment g as [begin, begin + len).
  size_t slice_begin(size_t g, size_t k) const {
    return seg_begin(g) + std::min(seg_count(g), k * slice_elems);
  }
  size_t slice_count(size_t g, size_t k) const {
    const size_t len = seg_count(g);
    const size_t lo = std::min(len, k * slice_elems);
    return std::min(len, lo + slice_elems) - lo;
  }
};

RingLayout make_layout(size_t count, size_t n, size_t elem_bytes, size_t chunk_bytes) {
  RingLayout layout{count, n, std::max<size_t>(1, chunk_bytes / elem_bytes), 1};
  const size_t max_seg = (count + n - 1) / n;
  // Message numbers t*S + k must stay below kTagIndexLimit: widen slices if needed.
  const size_t max_slices = kTagIndexLimit / (2 * (n - 1));
  layout.slice_elems = std::max(layout.slice_elems, (max_seg + max_slices - 1) / max_slices);
  // No slice is longer than a segment (this sizes the staging slots; count > 0 here).
  layout.slice_elems = std::min(layout.slice_elems, max_seg);
  layout.slices = std::max<size_t>(1, (max_seg + layout.slice_elems - 1) / layout.slice_elems);
  return layout;
}

}  // namespace

plx_result_t ring_allreduce(Transport& transport, uint64_t tag_base, const CollArgs& args) {
  const void* sendbuf = args.sendbuf;
  void* recvbuf = args.recvbuf;
  const size_t count = args.count;
  const plx_datatype_t datatype = args.datatype;
  const plx_red_op_t op = args.op;
  const size_t chunk_bytes = args.chunk_bytes;
  const size_t elem = datatype_bytes(datatype);
  const size_t n = static_cast<size_t>(transport.size());
  const size_t r = static_cast<size_t>(transport.rank());
  auto* out = static_cast<unsigned char*>(recvbuf);
  const auto* in = static_cast<const unsigned char*>(sendbuf);
  const bool in_place = sendbuf == recvbuf;
  if (count == 0) return PLX_SUCCESS;
  if (n == 1) {  // the sum of one contribution; AVG divides by 1
    if (!in_place) std::memcpy(out, in, count * elem);
    return PLX_SUCCESS;
  }

  const RingLayout layout = make_layout(count, n, elem, chunk_bytes);
  const size_t S = layout.slices;
  const size_t messages = 2 * (n - 1) * S;
  const int next = static_cast<int>((r + 1) % n);
  const int prev = static_cast<int>((r + n - 1) % n);
  const auto send_seg = [&](size_t t) { return (r + n - t % n) % n; };
  const auto recv_seg = [&](size_t t) { return (r + 2 * n - t % n - 1) % n; };
  Pipeline pipe(transport, kSendDepth, kRecvDepth, layout.slice_elems * elem);  // staging slots

  // Message u = t*S + k: slice k of the segment of step t.
  const auto post_recv = [&](size_t u) {
    const size_t t = u / S, k = u % S, g = recv_seg(t);
    const size_t bytes = layout.slice_count(g, k) * elem;
    void* dst = t < n - 1 ? static_cast<void*>(pipe.staging(u))     // reduce-scatter: stage
                          : out + layout.slice_begin(g, k) * elem;  // allgather: in place
    return pipe.post_recv(prev, tag_base | u, dst, bytes);
  };
  const auto send = [&](size_t u) {
    const size_t t = u / S, k = u % S, g = send_seg(t);
    const unsigned char* src = t == 0 ? in : out;  // step 0: this rank's own segment
    return pipe.send(next, tag_base | u, src + layout.slice_begin(g, k) * elem,
                     layout.slice_count(g, k) * elem);
  };
  // Combines received message u with this rank's own segment into recvbuf (reduce-scatter).
  const auto reduce = [&](size_t u) {
    const size_t t = u / S, k = u % S, g = recv_seg(t);
    const size_t off = layout.slice_begin(g, k) * elem, len = layout.slice_count(g, k);
    reduce_copy(out + off, in + off, pipe.staging(u), len, datatype, op);  // in == out in place
    if (t == n - 2 && op == PLX_AVG) divide_by(out + off, len, datatype, n);
  };

  // Sends numbered below `ready` may be posted. Before waiting for receive u, every ready send
  // numbered <= u is posted (pipeline.h); later ready ones only while the window has room.
  size_t ready = S;  // step 0 sends its own segment
  size_t posted = 0;
  const auto post_ready_sends = [&](size_t u) -> plx_result_t {
    while (posted < ready) {
      if (posted > u) {
        bool room = false;
        PLX_CHECK(pipe.send_has_room(&room));
        if (!room) break;
      }
      PLX_CHECK(send(posted++));
    }
    return PLX_SUCCESS;
  };
  // The step primitives. Each waits for receive u, uses it, then posts receive u + kRecvDepth
  // (whose staging slot u has just freed) and makes message u + S (the same slice, one step
  // later) ready to send.
  const auto wait = [&](size_t u) -> plx_result_t {
    PLX_CHECK(post_ready_sends(u));
    return pipe.wait_recv();
  };
  const auto post_next = [&](size_t u) -> plx_result_t {
    if (u + kRecvDepth < messages) PLX_CHECK(post_recv(u + kRecvDepth));
    return PLX_SUCCESS;
  };
  const auto recv_reduce_send = [&](size_t u) -> plx_result_t {
    PLX_CHECK(wait(u));
    reduce(u);
    ready = u + S + 1;
    return post_next(u);
  };
  const auto recv_reduce_copy_send = recv_reduce_send;  // reduce() divides on step n-2 for AVG
  const auto recv_copy_send = [&](size_t u) -> plx_result_t {
    PLX_CHECK(wait(u));
    ready = u + S + 1;
    return post_next(u);
  };
  const auto recv = [&](size_t u) -> plx_result_t {
    PLX_CHECK(wait(u));
    return post_next(u);
  };

  for (size_t u = 0; u < std::min(kRecvDepth, messages); ++u) PLX_CHECK(post_recv(u));
  PLX_CHECK(post_ready_sends(0));  // send: step 0
  for (size_t u = 0; u < messages; ++u) {
    const size_t t = u / S;
    if (t < n - 2) {
      PLX_CHECK(recv_reduce_send(u));
    } else if (t == n - 2) {
      PLX_CHECK(recv_reduce_copy_send(u));
    } else if (t < 2 * n - 3) {
      PLX_CHECK(recv_copy_send(u));
    } else {
      PLX_CHECK(recv(u));
    }
  }
  PLX_CHECK(post_ready_sends(messages));
  return pipe.finish();
}

}  // namespace plexus::comm
