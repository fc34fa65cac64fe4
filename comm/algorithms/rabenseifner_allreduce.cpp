// rabenseifner_allreduce.cpp - recursive-halving reduce-scatter, then recursive-doubling
// allgather.
//
// R. Rabenseifner, "Optimization of collective reduction operations", ICCS 2004, LNCS 3036; and
// R. Thakur, R. Rabenseifner and W. Gropp, "Optimization of collective communication operations
// in MPICH", IJHPCA 19(1), 2005, section 4 (MPICH's allreduce for long messages).
//
// Non-powers of two are folded first (Fold and AllreduceFold in block_exchange.h): the odd ranks
// below 2*rem hand their vector to r-1 and get the result back at the end; the p = 2^k survivors,
// with new ranks v, run the power-of-two algorithm on count elements cut into p near-equal blocks
// (Blocks).
//
// Reduce-scatter by recursive halving (Halving in block_exchange.h), distance p/2 first. Each rank
// holds a range of blocks (all p at the start); at distance d it splits the range in two, sends the
// half its partner v ^ d keeps, and combines the half it keeps with the partner's copy of it (the
// lower rank's operand on the left). After log2(p) steps rank v holds block v, fully reduced (for
// PLX_AVG it divides that block by n now).
//
//   p = 4     blocks  0 1 2 3
//   d = 2:    v0 <-> v2: v0 keeps 0 1, v2 keeps 2 3     v1 <-> v3: v1 keeps 0 1, v3 keeps 2 3
//   d = 1:    v0 <-> v1: v0 keeps 0,   v1 keeps 1       v2 <-> v3: v2 keeps 2,   v3 keeps 3
//
// Allgather by recursive doubling, distance 1 first: at distance d rank v swaps its aligned group
// of d final blocks with v ^ d, so the groups double to p blocks (the steps above in reverse).
//
// Phases, each a block_exchange.h exchange in slices of <= chunk_bytes:
//   phase 0                 fold: odd r < 2*rem sends its input to r-1, which combines it
//   phase 1+j               reduce-scatter step j (distance p/2^(j+1))
//   phase 1+log2(p)+j       allgather step j (distance 2^j)
//   phase 1+2*log2(p)       unfold: r-1 sends the result back to odd r
// Phase f's slice k is tagged tag_base | (f * phase_slices + k).
//
// Bytes on the wire: each survivor sends and receives (p-1)/p * count * elem_bytes in each of the
// two halves, 2(p-1)/p in all, in 2*log2(p) messages; a folded pair adds count * elem_bytes each
// way. Every element is combined on exactly one rank, so all ranks get the same bits.
#include <algorithm>

#include "comm/algorithms/algorithms.h"
#include "comm/algorithms/block_exchange.h"
#include "comm/algorithms/trivial_reduction.h"
#include "comm/base/error.h"
#include "comm/reduce/reduce.h"

namespace plexus::comm {

plx_result_t rabenseifner_allreduce(Transport& transport, uint64_t tag_base, const CollArgs& args) {
  if (reduce_trivially(args, transport.size())) return PLX_SUCCESS;
  const size_t count = args.count;
  const size_t elem = datatype_bytes(args.datatype);
  const int n = transport.size();
  const int r = transport.rank();
  const auto* in = static_cast<const unsigned char*>(args.sendbuf);
  auto* out = static_cast<unsigned char*>(args.recvbuf);

  const Fold fold(n);
  const int steps = fold.steps();
  const ExchangePhases phases(args, tag_base, count, 2 * steps + 2);
  const ExchangeFormat& fmt = phases.fmt;
  const AllreduceFold folding{transport, fold,          fmt,
                              count,     phases.tag(0), phases.tag(2 * steps + 1)};

  // Phase 0, fold.
  if (fold.folded_away(r)) return folding.sit_out(in, out);
  const unsigned char* cur = in;  // where this rank's partial blocks are
  if (fold.absorbs(r)) {
    PLX_CHECK(folding.absorb(in, out));
    cur = out;
  }

  const int v = fold.vrank(r);
  const Blocks blocks{count, static_cast<size_t>(fold.p)};
  const auto offset = [&](size_t block) { return blocks.begin(block) * elem; };  // bytes
  // Reduce-scatter: this rank holds blocks [lo, hi), halved each step.
  size_t lo = 0, hi = static_cast<size_t>(fold.p);
  for (int j = 0; j < steps; ++j) {
    const size_t mask = static_cast<size_t>(fold.p) >> (j + 1);
    const Halving h = halve(lo, static_cast<size_t>(v), mask);
    PLX_CHECK(exchange(transport,
                       {.peer = fold.real(v ^ static_cast<int>(mask)),
                        .first_tag = phases.tag(1 + j),
                        .send = cur + offset(h.give_lo),
                        .send_count = blocks.span(h.give_lo, h.give_hi),
                        .recv = out + offset(h.keep_lo),
                        .recv_count = blocks.span(h.keep_lo, h.keep_hi),
                        .mine = cur + offset(h.keep_lo),
                        .mine_first = h.lower},
                       fmt));
    lo = h.keep_lo;
    hi = h.keep_hi;
    cur = out;
  }
  if (args.op == PLX_AVG) {
    divide_by(out + offset(lo), blocks.size(lo), args.datatype, static_cast<size_t>(n));
  }

  // Allgather: this rank's group [lo, hi) of final blocks doubles each step.
  for (int j = 0; j < steps; ++j) {
    const size_t d = size_t{1} << j;
    const int partner = v ^ static_cast<int>(d);
    const size_t other_lo = v < partner ? hi : lo - d;
    PLX_CHECK(exchange(transport,
                       {.peer = fold.real(partner),
                        .first_tag = phases.tag(1 + steps + j),
                        .send = out + offset(lo),
                        .send_count = blocks.span(lo, hi),
                        .recv = out + offset(other_lo),
                        .recv_count = blocks.span(other_lo, other_lo + d)},
                       fmt));
    lo = std::min(lo, other_lo);
    hi = lo + 2 * d;
  }

  // Unfold.
  return fold.absorbs(r) ? folding.hand_back(out) : PLX_SUCCESS;
}

}  // namespace plexus::comm
