// block_exchange.h - what the recursive-halving/doubling algorithms share: the fold of a
// non-power-of-two number of ranks onto a power of two, the halving of a range between partners,
// and one swap of element ranges between two ranks, in slices.
//
// Used by rabenseifner_allreduce.cpp, recursive_doubling_allreduce.cpp,
// recursive_halving_reduce_scatter.cpp and scatter_allgather_broadcast.cpp (no fold there).
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
// Windows and deadlock freedom are Pipeline::run()'s (pipeline.h): kRecvDepth receives are posted
// ahead, and before waiting for received slice k every send numbered <= k has been posted.
#pragma once

#include <cstddef>
#include <cstdint>

#include "comm/algorithms/algorithms.h"
#include "comm/algorithms/slices.h"
#include "comm/reduce/reduce.h"
#include "comm/transport/transport.h"
#include "plexus/plexus.h"

namespace plexus::comm {

// Folding for non-powers of two (Thakur, Rabenseifner & Gropp 2005, section 4): with
// p = 2^floor(log2 n) and rem = n - p, the first 2*rem ranks pair up (2i, 2i+1); one of each
// pair hands its data to the other (its partner) and sits out, and the p survivors take new ranks
// v = r/2 (r < 2*rem) or r - rem (the others), which keep the order of the real ranks. Virtual
// rank v stands for the real ranks first_rank(v) .. first_rank(v + 1) - 1.
//
//   n = 6, p = 4, rem = 2:         real  0  1  2  3  4  5
//   the even rank survives:        v     0  -  1  -  2  3    (Rabenseifner, recursive doubling)
//   the odd rank survives:         v     -  0  -  1  2  3    (recursive halving, as MPICH)
struct Fold {
  enum class Survivor { Even, Odd };

  int n;
  int p;    // survivors, a power of two
  int rem;  // ranks folded away
  int survivor_parity;

  explicit Fold(int size, Survivor survivor = Survivor::Even)
      : n(size), p(1), rem(0), survivor_parity(survivor == Survivor::Odd ? 1 : 0) {
    while (p * 2 <= n) p *= 2;
    rem = n - p;
  }
  // Hands its data to its partner and sits out.
  bool folded_away(int r) const { return r < 2 * rem && r % 2 != survivor_parity; }
  // Takes its partner's data in and stands for both.
  bool absorbs(int r) const { return r < 2 * rem && r % 2 == survivor_parity; }
  int partner(int r) const { return r ^ 1; }                        // of a rank below 2*rem
  int vrank(int r) const { return r < 2 * rem ? r / 2 : r - rem; }  // survivors only
  int real(int v) const { return v < rem ? 2 * v + survivor_parity : v + rem; }
  int first_rank(int v) const { return v < rem ? 2 * v : v + rem; }  // v = p gives n
  int steps() const {                                                // log2(p)
    int s = 0;
    while ((1 << s) < p) ++s;
    return s;
  }
};

// One step of recursive halving among the p survivors: v and its partner v ^ mask both hold the
// range [lo, lo + 2*mask) (of blocks, or of virtual ranks) and split it; the lower one keeps the
// lower half. The steps run mask = p/2, p/4, ..., 1, each from the kept half of the one before.
struct Halving {
  size_t keep_lo, keep_hi;  // what this rank keeps, and receives the partner's part of
  size_t give_lo, give_hi;  // what it sends away
  bool lower;               // this rank is the lower of the two
};

inline Halving halve(size_t lo, size_t v, size_t mask) {
  const size_t mid = lo + mask, hi = lo + 2 * mask;
  if ((v & mask) == 0) return {lo, mid, mid, hi, true};
  return {mid, hi, lo, mid, false};
}

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

// An algorithm made of up to `phases` exchange()s of at most max_elems elements each: their
// format (args' datatype and op, slices of at most args.chunk_bytes), and phase q's first tag,
// tag_base | (q * phase_slices), phase_slices being the most slices a phase has (slices.h).
struct ExchangePhases {
  ExchangeFormat fmt;
  uint64_t tag_base;
  size_t phase_slices;

  ExchangePhases(const CollArgs& args, uint64_t base, size_t max_elems, size_t phases)
      : fmt{args.datatype, args.op,
            slice_elems_for(args.chunk_bytes, datatype_bytes(args.datatype), max_elems, phases)},
        tag_base(base),
        phase_slices(slices_of(max_elems, fmt.slice_elems)) {}
  uint64_t tag(size_t phase) const { return tag_base | (phase * phase_slices); }
};

// The fold of an allreduce of the whole vector (count elements, Survivor::Even), one exchange()
// each way: at the start the rank folded away sends its input to its partner, which combines it
// into out, the lower rank's (its own) operand first, and takes part for both; at the end the
// partner sends the result back.
struct AllreduceFold {
  Transport& transport;
  const Fold& fold;
  ExchangeFormat fmt;
  size_t count;
  uint64_t fold_tag;    // first tag of the fold
  uint64_t unfold_tag;  // first tag of the unfold

  // All that a rank folded away does: hands `in` over, then receives the result into `out`.
  plx_result_t sit_out(const void* in, void* out) const;
  // The partner's fold: out = in op the partner's input.
  plx_result_t absorb(const void* in, void* out) const;
  // The partner's unfold: sends the result back.
  plx_result_t hand_back(const void* out) const;
};

}  // namespace plexus::comm
