// pairwise_alltoall.cpp - pairwise-exchange all-to-all and all-to-all-v.
//
// The long-message all-to-all of MPICH (R. Thakur, R. Rabenseifner and W. Gropp, "Optimization
// of collective communication operations in MPICH", IJHPCA 19(1), 2005), in its form for any
// n: in step s = 1..n-1, rank r sends its block for rank r+s to r+s and receives the block of
// rank r-s from r-s (mod n). Its own block is copied locally. n = 4:
//
//   step 1 (+1):  0->1  1->2  2->3  3->0      every rank sends one block and receives one
//   step 2 (+2):  0->2  1->3  2->0  3->1      block per step, so every link carries one
//   step 3 (+3):  0->3  1->0  2->1  3->2      message in each direction at a time.
//
// Each step posts its receive before its send, then waits for both (the transport may be
// rendezvous). Rank r's step s is matched by rank r+s's step s: the receiver of every message
// works on the same step, so the steps cannot deadlock. Each block is one message, whatever its
// size (the transport splits large ones).
//
// In place (alltoall only, sendbuf == recvbuf): block r-s is received at step s but sent at
// step n-s, and block r+s is sent at step s but received at step n-s. When 2s <= n the block
// arrives before (or, for 2s == n, while) the old one leaves, so the receive lands in a staging
// slot (s - 1) and is copied home right after step n-s has sent the old block; when 2s > n the
// old block has already left and the receive lands in place. floor(n/2) blocks of staging.
//
// alltoallv: block j is sendcounts[j] elements at sdispls[j] out and recvcounts[j] elements at
// rdispls[j] in; a block of 0 elements sends no message (both ends know its count is 0).
//
// Tags: step s is tag_base | s in both directions (each peer is met in one step only).
// Bytes on the wire: each rank sends and receives (n-1) blocks, the minimum; latency n-1 steps.
#include <cstring>
#include <string>

#include "comm/algorithms/algorithms.h"
#include "comm/algorithms/pipeline.h"
#include "comm/base/error.h"
#include "comm/reduce/reduce.h"

namespace plexus::comm {
namespace {

// Byte offsets and sizes of the block exchanged with each peer.
struct Blocks {
  size_t elem;
  size_t count;                 // alltoall: every block has count elements
  const CollArgs* v = nullptr;  // alltoallv: the counts and displacements

  size_t send_offset(int p) const { return (v ? v->sdispls[p] : p * count) * elem; }
  size_t send_bytes(int p) const { return (v ? v->sendcounts[p] : count) * elem; }
  size_t recv_offset(int p) const { return (v ? v->rdispls[p] : p * count) * elem; }
  size_t recv_bytes(int p) const { return (v ? v->recvcounts[p] : count) * elem; }
};

// Out of place: n-1 steps straight from sendbuf into recvbuf.
plx_result_t exchange(Transport& transport, uint64_t tag_base, const void* sendbuf, void* recvbuf,
                      const Blocks& blocks) {
  const int n = transport.size();
  const int r = transport.rank();
  const auto* in = static_cast<const unsigned char*>(sendbuf);
  auto* out = static_cast<unsigned char*>(recvbuf);
  if (blocks.send_bytes(r) > 0) {  // own block
    std::memcpy(out + blocks.recv_offset(r), in + blocks.send_offset(r), blocks.send_bytes(r));
  }
  Pipeline pipe(transport, 1, 1, 0);  // owns the two requests, even on failure
  for (int s = 1; s < n; ++s) {
    const int dst = (r + s) % n;
    const int src = (r - s + n) % n;
    const uint64_t tag = tag_base | static_cast<uint64_t>(s);
    if (blocks.recv_bytes(src) > 0) {
      PLX_CHECK(pipe.post_recv(src, tag, out + blocks.recv_offset(src), blocks.recv_bytes(src)));
    }
    if (blocks.send_bytes(dst) > 0) {
      PLX_CHECK(pipe.send(dst, tag, in + blocks.send_offset(dst), blocks.send_bytes(dst)));
    }
    PLX_CHECK(pipe.finish());
  }
  return PLX_SUCCESS;
}

// In place: as exchange(), with the receives of steps 2s <= n staged (see the file comment).
plx_result_t exchange_in_place(Transport& transport, uint64_t tag_base, void* buf,
                               size_t block_bytes) {
  const int n = transport.size();
  const int r = transport.rank();
  auto* data = static_cast<unsigned char*>(buf);
  const size_t held = static_cast<size_t>(n / 2);
  // Staging slot s-1 holds the block received at step s; the pipeline owns the slots, so they
  // leak with the requests if a wait fails.
  Pipeline pipe(transport, 1, held, block_bytes);
  for (int s = 1; s < n; ++s) {
    const int dst = (r + s) % n;
    const int src = (r - s + n) % n;
    const uint64_t tag = tag_base | static_cast<uint64_t>(s);
    const bool stage = 2 * s <= n;
    void* landing = stage ? static_cast<void*>(pipe.staging(s - 1)) : data + src * block_bytes;
    PLX_CHECK(pipe.post_recv(src, tag, landing, block_bytes));
    PLX_CHECK(pipe.send(dst, tag, data + dst * block_bytes, block_bytes));
    PLX_CHECK(pipe.finish());
    // Block dst has left; its replacement arrived at step n-s if that step was staged.
    if (2 * s >= n) std::memcpy(data + dst * block_bytes, pipe.staging(n - s - 1), block_bytes);
  }
  return PLX_SUCCESS;
}

}  // namespace

plx_result_t pairwise_alltoall(Transport& transport, uint64_t tag_base, const CollArgs& args) {
  const size_t elem = datatype_bytes(args.datatype);
  const size_t block_bytes = args.count * elem;
  if (block_bytes == 0) return PLX_SUCCESS;
  if (args.sendbuf == args.recvbuf) {
    return exchange_in_place(transport, tag_base, args.recvbuf, block_bytes);
  }
  return exchange(transport, tag_base, args.sendbuf, args.recvbuf, Blocks{elem, args.count});
}

plx_result_t pairwise_alltoallv(Transport& transport, uint64_t tag_base, const CollArgs& args) {
  const int r = transport.rank();
  if (args.sendbuf != nullptr && args.sendbuf == args.recvbuf) {
    return set_error(PLX_ERROR_INVALID_ARGUMENT,
                     "pairwise_alltoallv: rank " + std::to_string(r) +
                         ": sendbuf == recvbuf (in place) is not supported for alltoallv");
  }
  if (args.sendcounts[r] != args.recvcounts[r]) {
    return set_error(
        PLX_ERROR_INVALID_ARGUMENT,
        "pairwise_alltoallv: rank " + std::to_string(r) + ": sendcounts[" + std::to_string(r) +
            "] = " + std::to_string(args.sendcounts[r]) + " but recvcounts[" + std::to_string(r) +
            "] = " + std::to_string(args.recvcounts[r]) + "; a rank's own block must match");
  }
  return exchange(transport, tag_base, args.sendbuf, args.recvbuf,
                  Blocks{datatype_bytes(args.datatype), 0, &args});
}

}  // namespace plexus::comm
