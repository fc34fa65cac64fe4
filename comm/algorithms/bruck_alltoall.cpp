// bruck_alltoall.cpp - Bruck's index algorithm: all-to-all in ceil(log2 n) steps, small blocks.
//
// J. Bruck, C.-T. Ho, S. Kipnis, E. Upfal and D. Weathersby, "Efficient algorithms for
// all-to-all communications in multiport message-passing systems", IEEE TPDS 8(11), 1997
// (the index algorithm, radix 2); MPICH uses it for short messages (Thakur et al. 2005).
//
// Rank r numbers its blocks by distance: block i is the one for rank r+i (mod n).
//   Phase 1, rotate: block i is copied out of sendbuf (block r+i there).
//   Phase 2, for k = 0 .. ceil(log2 n)-1: every block whose index i has bit k set moves 2^k
//     ranks forward: rank r packs them in index order, sends the pack to r+2^k and receives the
//     same set of indices from r-2^k, which replace its own. A block of index i moves by the
//     bits of i, i ranks in all, so at the end block i on rank r came from rank r-i.
//   Phase 3, rotate back: block i belongs in recvbuf block r-i.
// The three phases share one buffer: block i lives in recvbuf block r-i from the start, so
// phase 3 costs nothing, and phase 1 maps sendbuf block p to recvbuf block 2r-p (a reflection:
// in place it swaps pairs of blocks). n = 5, rank 0, blocks that move in each step:
//
//   index i     0   1   2   3   4          k = 0 (to r+1):  i = 1, 3
//   bit 0           x       x              k = 1 (to r+2):  i = 2, 3
//   bit 1               x   x              k = 2 (to r+4):  i = 4
//   bit 2                       x
//
// Tags: step k is tag_base | k. Each step sends one message of (the number of indices below n
// with bit k set) blocks, at most floor(n/2): ceil(log2 n) messages instead of the pairwise
// exchange's n-1, for about (n/2) log2 n blocks on the wire instead of n-1 (so it wins when
// blocks are small and latency dominates). Packing uses two scratch buffers of that many blocks.
#include <algorithm>
#include <cstring>

#include "comm/algorithms/algorithms.h"
#include "comm/algorithms/pipeline.h"
#include "comm/algorithms/staging_buffer.h"
#include "comm/base/error.h"
#include "comm/reduce/reduce.h"

namespace plexus::comm {
namespace {

// Number of indices i in 0..n-1 with (i & bit) != 0.
size_t indices_with_bit(size_t n, size_t bit) {
  return (n / (2 * bit)) * bit + (n % (2 * bit) > bit ? n % (2 * bit) - bit : 0);
}

}  // namespace

plx_result_t bruck_alltoall(Transport& transport, uint64_t tag_base, const CollArgs& args) {
  const size_t n = static_cast<size_t>(transport.size());
  const size_t r = static_cast<size_t>(transport.rank());
  const size_t block = args.count * datatype_bytes(args.datatype);
  if (block == 0) return PLX_SUCCESS;
  const auto* in = static_cast<const unsigned char*>(args.sendbuf);
  auto* out = static_cast<unsigned char*>(args.recvbuf);
  const auto at = [&](size_t i) { return out + (r + n - i) % n * block; };  // block i's home

  // Phase 1: block i (sendbuf block r+i) to recvbuf block r-i.
  if (in != out) {
    for (size_t i = 0; i < n; ++i) std::memcpy(at(i), in + (r + i) % n * block, block);
  } else {
    for (size_t p = 0; p < n; ++p) {
      const size_t q = (2 * r + n - p) % n;
      if (p < q) std::swap_ranges(out + p * block, out + (p + 1) * block, out + q * block);
    }
  }
  if (n == 1) return PLX_SUCCESS;

  size_t most = 0;
  for (size_t bit = 1; bit < n; bit <<= 1) most = std::max(most, indices_with_bit(n, bit));
  StagingBuffer packs(2 * most * block);
  unsigned char* send_pack = packs.data();
  unsigned char* recv_pack = packs.data() + most * block;
  Pipeline pipe(transport, 1, 1, 0);  // owns the two requests, even on failure

  // Phase 2.
  uint64_t k = 0;
  for (size_t bit = 1; bit < n; bit <<= 1, ++k) {
    size_t m = 0;
    for (size_t i = bit; i < n; ++i) {
      if (i & bit) std::memcpy(send_pack + m++ * block, at(i), block);
    }
    PLX_CHECK(
        pipe.post_recv(static_cast<int>((r + n - bit) % n), tag_base | k, recv_pack, m * block));
    PLX_CHECK(pipe.send(static_cast<int>((r + bit) % n), tag_base | k, send_pack, m * block));
    PLX_CHECK(pipe.finish());
    m = 0;
    for (size_t i = bit; i < n; ++i) {
      if (i & bit) std::memcpy(at(i), recv_pack + m++ * block, block);
    }
  }
  return packs.settle(PLX_SUCCESS);
}

}  // namespace plexus::comm
