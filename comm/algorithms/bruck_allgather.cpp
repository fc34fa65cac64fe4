// bruck_allgather.cpp - Bruck's allgather: ceil(log2 n) steps for any n, for small messages.
//
// J. Bruck, C.-T. Ho, S. Kipnis, E. Upfal and D. Weathersby, "Efficient algorithms for all-to-all
// communications in multiport message-passing systems", IEEE TPDS 8(11), 1997 (the concatenation
// algorithm); also MPICH's MPIR_Allgather_intra_brucks.
//
// Rank r works in recvbuf with its blocks rotated: position i holds the block of rank (r + i)
// mod n. It starts with its own block at position 0. In step j, with distance d = 2^j, rank r
// sends its first m = min(d, n - d) blocks to rank r - d and receives m blocks from rank r + d
// into positions d .. d+m-1: rank r + d's positions 0..m-1 are the blocks of ranks r+d .. r+d+m-1,
// exactly rank r's positions d .. d+m-1. After ceil(log2 n) steps all n positions are filled,
// and a final local rotation by r blocks puts block g at position g. n = 5, rank 0:
//
//   start          [0]                       positions hold ranks (0 + i) mod 5
//   step 0 (d=1)   [0 1]                     block of rank 1 from rank 1
//   step 1 (d=2)   [0 1 2 3]                 blocks of ranks 2, 3 from rank 2
//   step 2 (d=4)   [0 1 2 3 4]               m = min(4, 1) = 1 block from rank 4
//   rotate by r    [0 1 2 3 4]               (rank 2 would hold [2 3 4 0 1] and rotate it)
//
// Step j's one message is tagged tag_base | j. The messages are not sliced: this algorithm is
// chosen for its ceil(log2 n) latency, for blocks well below chunk_bytes (the transport splits a
// message it cannot send whole).
//
// Bytes on the wire: each rank sends and receives (n-1) * count * elem_bytes in ceil(log2 n)
// messages, then moves (n - 1) * count * elem_bytes locally for the rotation (none on rank 0).
#include <algorithm>
#include <cstring>

#include "comm/algorithms/algorithms.h"
#include "comm/algorithms/pipeline.h"
#include "comm/base/error.h"
#include "comm/reduce/reduce.h"

namespace plexus::comm {

plx_result_t bruck_allgather(Transport& transport, uint64_t tag_base, const CollArgs& args) {
  const size_t n = static_cast<size_t>(transport.size());
  const size_t r = static_cast<size_t>(transport.rank());
  const size_t block_bytes = args.count * datatype_bytes(args.datatype);
  const auto* in = static_cast<const unsigned char*>(args.sendbuf);
  auto* out = static_cast<unsigned char*>(args.recvbuf);
  if (block_bytes == 0) return PLX_SUCCESS;
  // Own block to position 0. In place it sits at position r (a different block unless r = 0).
  if (in != out) std::memcpy(out, in, block_bytes);

  uint64_t step = 0;
  for (size_t d = 1; d < n; d *= 2, ++step) {
    const size_t m = std::min(d, n - d);
    Pipeline pipe(transport, 1, 1, 0);  // owns the two requests, even on failure
    PLX_CHECK(pipe.post_recv(static_cast<int>((r + d) % n), tag_base | step, out + d * block_bytes,
                             m * block_bytes));
    PLX_CHECK(pipe.send(static_cast<int>((r + n - d) % n), tag_base | step, out, m * block_bytes));
    PLX_CHECK(pipe.finish());
  }
  // Position i holds rank (r + i) mod n: rotate right by r blocks.
  std::rotate(out, out + (n - r) * block_bytes, out + n * block_bytes);
  return PLX_SUCCESS;
}

}  // namespace plexus::comm
