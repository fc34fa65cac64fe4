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
// flight; send u+1 depends only on receive u.
//
// Bytes on the wire: each rank sends and receives (n-1) * count * elem_bytes, the minimum for an
// allgather, in (n-1) * S messages.
#include <algorithm>
#include <cstring>

#include "comm/algorithms/algorithms.h"
#include "comm/algorithms/pipeline.h"
#include "comm/core/error.h"
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

  // Slices of at most chunk_bytes, widened so that message numbers stay below kTagIndexLimit.
  const size_t steps = n - 1;
  const size_t max_slices = kTagIndexLimit / steps;
  size_t slice_elems = std::max<size_t>(1, args.chunk_bytes / elem);
  slice_elems = std::max(slice_elems, (count + max_slices - 1) / max_slices);
  slice_elems = std::min(slice_elems, count);
  const size_t slices = (count + slice_elems - 1) / slice_elems;
  const size_t messages = slices * steps;
  const int next = static_cast<int>((r + 1) % n);
  const int prev = static_cast<int>((r + n - 1) % n);
  Pipeline pipe(transport, kSendDepth, kRecvDepth, 0);

  // Message u: slice k = u / steps of the block of step t = u % steps, in recvbuf.
  const auto slice_off = [&](size_t u) { return (u / steps) * slice_elems; };
  const auto slice_len = [&](size_t u) { return std::min(slice_elems, count - slice_off(u)); };
  const auto slice_at = [&](size_t block, size_t u) {
    return out + (block * count + slice_off(u)) * elem;
  };
  const auto post_recv = [&](size_t u) {
    const size_t block = (r + 2 * n - 1 - u % steps) % n;
    return pipe.post_recv(prev, tag_base | u, slice_at(block, u), slice_len(u) * elem);
  };
  const auto send = [&](size_t u) {
    const size_t block = (r + n - u % steps) % n;
    return pipe.send(next, tag_base | u, slice_at(block, u), slice_len(u) * elem);
  };

  // Send m is ready once receive m-1 is in recvbuf, or at once when it starts a slice (t = 0).
  // Before waiting for receive u every ready send numbered <= u is posted (pipeline.h); later
  // ready ones only while the window has room.
  size_t received = 0;  // receives completed so far
  size_t posted = 0;    // sends posted so far
  const auto post_ready_sends = [&](size_t u) -> plx_result_t {
    while (posted < messages && (posted % steps == 0 || posted <= received)) {
      if (posted > u) {
        bool room = false;
        PLX_CHECK(pipe.send_has_room(&room));
        if (!room) break;
      }
      PLX_CHECK(send(posted++));
    }
    return PLX_SUCCESS;
  };
  // recv_copy_send and recv: the slice lands in recvbuf (then, unless t = n-2, it is the next
  // ready send); receive u + kRecvDepth is posted behind it.
  const auto recv = [&](size_t u) -> plx_result_t {
    PLX_CHECK(post_ready_sends(u));
    PLX_CHECK(pipe.wait_recv());
    ++received;
    if (u + kRecvDepth < messages) PLX_CHECK(post_recv(u + kRecvDepth));
    return PLX_SUCCESS;
  };
  const auto recv_copy_send = recv;

  for (size_t u = 0; u < std::min(kRecvDepth, messages); ++u) PLX_CHECK(post_recv(u));
  PLX_CHECK(post_ready_sends(0));  // send: step 0 of the first slices
  for (size_t u = 0; u < messages; ++u) {
    PLX_CHECK(u % steps < steps - 1 ? recv_copy_send(u) : recv(u));
  }
  PLX_CHECK(post_ready_sends(messages));
  return pipe.finish();
}

}  // namespace plexus::comm
