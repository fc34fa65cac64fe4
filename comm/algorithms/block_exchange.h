// block_exchange.h - the shared step of the recursive-halving/doubling algorithms: a vector cut
// into near-equal blocks, and one swap of element ranges between two ranks, in slices.
//
// Used by rabenseifner_allreduce.cpp, recursive_doubling_allreduce.cpp (exchange) and
// scatter_allgather_broadcast.cpp (Blocks only).
//
// exchange() sends send_count elements to `peer` and receives recv_count elements from it, both
// cut into slices of at most slice_elems (slice k of either direction is tagged first_tag + k,
// so the two ends agree as long as one's send_count is the other's recv_count). A received
// slice either lands in `recv` directly (copy), or in a staging slot and is then combined:
//   recv[i] = mine[i] op received[i]   (mine_first: this rank's operand is the left one)
//   recv[i] = received[i] op mine[i]   (otherwise)
// so both ends of a recursive-doubling step can put the LOWER rank's data first and compute
// bit-identical results. `mine` may equal `recv` exactly.
//
// The send range may be the receive range itself (recursive doubling in place): slice k is then
// combined into `recv` only once its own send has completed (one send in flight at a time).
// Other partial overlaps between the send and receive ranges are not allowed.
//
// Windows and deadlock freedom are Pipeline's (pipeline.h): kRecvDepth receives are posted
// ahead, and before waiting for received slice k every send numbered <= k has been posted.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "comm/transport/transport.h"
#include "plexus/plexus.h"

namespace plexus::comm {

// count elements in `parts` near-equal blocks: the first count % parts blocks hold one element
// more, and some blocks are empty when count < parts.
struct Blocks {
  size_t count;
  size_t parts;

  size_t begin(size_t b) const { return b * (count / parts) + std::min(b, count % parts); }
  size_t size(size_t b) const { return begin(b + 1) - begin(b); }
  // Elements of the blocks [first, last).
  size_t span(size_t first, size_t last) const { return begin(last) - begin(first); }
  size_t largest() const { return (count + parts - 1) / parts; }
};

// Number of slices of at most slice_elems (>= 1) in `elems` elements.
constexpr size_t slices_of(size_t elems, size_t slice_elems) {
  return (elems + slice_elems - 1) / slice_elems;
}

// Slice size, in elements, for an algorithm that tags slices as phase * phase_slices + k with up
// to `phases` phases of at most `max_phase_elems` elements each: at most chunk_bytes worth, and
// wide enough that every message index stays below kTagIndexLimit. Never 0.
size_t exchange_slice_elems(size_t chunk_bytes, size_t elem_bytes, size_t max_phase_elems,
                            size_t phases);

// Folding for non-powers of two (Thakur, Rabenseifner & Gropp 2005, section 4): with
// p = 2^floor(log2 n) and rem = n - p, the first 2*rem ranks pair up (2i, 2i+1); the odd one
// hands its vector to the even one and sits out, and the p survivors take new ranks
// v = r/2 (r < 2*rem) or r - rem (the others), which keep the order of the real ranks.
//
//   n = 6, p = 4, rem = 2:   real  0  1  2  3  4  5
//                            v     0  -  1  -  2  3
struct Fold {
  int n;
  int p;    // survivors, a power of two
  int rem;  // ranks folded away

  explicit Fold(int size) : n(size), p(1), rem(0) {
    while (p * 2 <= n) p *= 2;
    rem = n - p;
  }
  // Odd ranks below 2*rem send their vector to r-1 and receive the result back.
  bool folded_away(int r) const { return r < 2 * rem && r % 2 == 1; }
  // Even ranks below 2*rem combine the vector of r+1 into theirs and send the result back.
  bool absorbs(int r) const { return r < 2 * rem && r % 2 == 0; }
  int vrank(int r) const { return r < 2 * rem ? r / 2 : r - rem; }  // survivors only
  int real(int v) const { return v < rem ? 2 * v : v + rem; }
  int steps() const {  // log2(p)
    int s = 0;
    while ((1 << s) < p) ++s;
    return s;
  }
};

struct ExchangeStep {
  int peer = -1;
  uint64_t first_tag = 0;  // tag of slice 0; slice k is first_tag + k
  const void* send = nullptr;
  size_t send_count = 0;  // elements
  void* recv = nullptr;
  size_t recv_count = 0;       // elements
  const void* mine = nullptr;  // null: copy into recv; else combine with mine (see above)
  bool mine_first = true;      // mine is the left operand of op
};

struct ExchangeFormat {
  plx_datatype_t datatype;
  plx_red_op_t op;  // PLX_AVG combines as PLX_SUM; the caller divides
  size_t slice_elems;
};

plx_result_t exchange(Transport& transport, const ExchangeStep& step, const ExchangeFormat& fmt);

}  // namespace plexus::comm
