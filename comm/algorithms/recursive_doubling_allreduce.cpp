// recursive_doubling_allreduce.cpp - log2(n) full-vector exchanges, for small messages.
//
// R. Thakur, R. Rabenseifner and W. Gropp, "Optimization of collective communication operations
// in MPICH", IJHPCA 19(1), 2005, section 4 (MPICH's allreduce for short messages). Non-powers of
// two are folded first (Fold and AllreduceFold in block_exchange.h): p = 2^floor(log2 n)
// survivors with new ranks v.
//
//   step j = 0..log2(p)-1: v swaps its whole vector with v ^ 2^j and combines the two.
//
//   p = 4:   v0 <-> v1   v2 <-> v3        (step 0)
//            v0 <-> v2   v1 <-> v3        (step 1)   every v now holds the full reduction
//
// Bit-identical results: after step j every member of a group of 2^(j+1) ranks holds the same
// partial result; both ends of an exchange compute lower op higher (the lower rank's operand on
// the left, reduce_copy(out, lower, higher)), so they compute the very same bits, also where the
// order decides the value (MIN/MAX with one NaN operand). One exception: when two NaNs with
// different payloads meet in a sum or product, which payload survives is up to the compiler's
// operand order for the commutative op (reduce.cpp); every rank still gets a NaN there.
//
// Phases, each a block_exchange.h exchange of `count` elements in slices of <= chunk_bytes:
//   phase 0           fold: odd r < 2*rem sends its input to r-1, which combines (r-1 first)
//   phase 1+j         step j above (send: the current vector; receive: the partner's, combined)
//   phase log2(p)+1   unfold: r-1 sends the result back to odd r
// Phase f's slice k is tagged tag_base | (f * phase_slices + k). PLX_AVG divides once, after the
// last step, on each survivor.
//
// Bytes on the wire: every survivor sends and receives log2(p) * count * elem_bytes; a folded
// pair adds count * elem_bytes each way. Latency: log2(p) (+2 when folded) messages: the choice
// for small vectors, while Rabenseifner's halving/doubling moves only 2(p-1)/p of the vector.
#include "comm/algorithms/algorithms.h"
#include "comm/algorithms/block_exchange.h"
#include "comm/algorithms/trivial_reduction.h"
#include "comm/base/error.h"
#include "comm/reduce/reduce.h"

namespace plexus::comm {

plx_result_t recursive_doubling_allreduce(Transport& transport, uint64_t tag_base,
                                          const CollArgs& args) {
  if (reduce_trivially(args, transport.size())) return PLX_SUCCESS;
  const size_t count = args.count;
  const int n = transport.size();
  const int r = transport.rank();
  const auto* in = static_cast<const unsigned char*>(args.sendbuf);
  auto* out = static_cast<unsigned char*>(args.recvbuf);

  const Fold fold(n);
  const int steps = fold.steps();
  const ExchangePhases phases(args, tag_base, count, steps + 2);
  const AllreduceFold folding{transport, fold,          phases.fmt,
                              count,     phases.tag(0), phases.tag(steps + 1)};

  // Phase 0, fold.
  if (fold.folded_away(r)) return folding.sit_out(in, out);
  const unsigned char* cur = in;  // this rank's partial result so far
  if (fold.absorbs(r)) {
    PLX_CHECK(folding.absorb(in, out));
    cur = out;
  }

  // Phases 1..steps: swap and combine with v ^ 2^j, lower rank's operand first.
  const int v = fold.vrank(r);
  for (int j = 0; j < steps; ++j) {
    const int partner = v ^ (1 << j);
    PLX_CHECK(exchange(transport,
                       {.peer = fold.real(partner),
                        .first_tag = phases.tag(1 + j),
                        .send = cur,
                        .send_count = count,
                        .recv = out,
                        .recv_count = count,
                        .mine = cur,
                        .mine_first = v < partner},
                       phases.fmt));
    cur = out;
  }
  if (args.op == PLX_AVG) divide_by(out, count, args.datatype, static_cast<size_t>(n));

  // Phase steps+1, unfold.
  return fold.absorbs(r) ? folding.hand_back(out) : PLX_SUCCESS;
}

}  // namespace plexus::comm
