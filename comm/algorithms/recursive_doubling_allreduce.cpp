// recursive_doubling_allreduce.cpp - log2(n) full-vector exchanges, for small messages.
//
// R. Thakur, R. Rabenseifner and W. Gropp, "Optimization of collective communication operations
// in MPICH", IJHPCA 19(1), 2005, section 4 (MPICH's allreduce for short messages). Non-powers of
// two are folded first (Fold in block_exchange.h): p = 2^floor(log2 n) survivors with new ranks v.
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
#include <cstring>

#include "comm/algorithms/algorithms.h"
#include "comm/algorithms/block_exchange.h"
#include "comm/core/error.h"
#include "comm/reduce/reduce.h"

namespace plexus::comm {

plx_result_t recursive_doubling_allreduce(Transport& transport, uint64_t tag_base,
                                          const CollArgs& args) {
  const size_t count = args.count;
  const size_t elem = datatype_bytes(args.datatype);
  const int n = transport.size();
  const int r = transport.rank();
  const auto* in = static_cast<const unsigned char*>(args.sendbuf);
  auto* out = static_cast<unsigned char*>(args.recvbuf);
  if (count == 0) return PLX_SUCCESS;
  if (n == 1) {  // the sum of one contribution; AVG divides by 1
    if (in != out) std::memcpy(out, in, count * elem);
    return PLX_SUCCESS;
  }

  const Fold fold(n);
  const int steps = fold.steps();
  const size_t phases = static_cast<size_t>(steps) + 2;
  const ExchangeFormat fmt{args.datatype, args.op,
                           exchange_slice_elems(args.chunk_bytes, elem, count, phases)};
  const size_t phase_slices = slices_of(count, fmt.slice_elems);
  const auto tag = [&](int phase) {
    return tag_base | (static_cast<uint64_t>(phase) * phase_slices);
  };
  const int unfold_phase = steps + 1;

  // Phase 0, fold.
  const unsigned char* cur = in;  // this rank's partial result so far
  if (fold.folded_away(r)) {
    PLX_CHECK(exchange(transport,
                       {.peer = r - 1, .first_tag = tag(0), .send = in, .send_count = count}, fmt));
    return exchange(
        transport,
        {.peer = r - 1, .first_tag = tag(unfold_phase), .recv = out, .recv_count = count}, fmt);
  }
  if (fold.absorbs(r)) {
    PLX_CHECK(exchange(transport,
                       {.peer = r + 1,
                        .first_tag = tag(0),
                        .recv = out,
                        .recv_count = count,
                        .mine = in,
                        .mine_first = true},
                       fmt));
    cur = out;
  }

  // Phases 1..steps: swap and combine with v ^ 2^j, lower rank's operand first.
  const int v = fold.vrank(r);
  for (int j = 0; j < steps; ++j) {
    const int partner = v ^ (1 << j);
    PLX_CHECK(exchange(transport,
                       {.peer = fold.real(partner),
                        .first_tag = tag(1 + j),
                        .send = cur,
                        .send_count = count,
                        .recv = out,
                        .recv_count = count,
                        .mine = cur,
                        .mine_first = v < partner},
                       fmt));
    cur = out;
  }
  if (args.op == PLX_AVG) divide_by(out, count, args.datatype, static_cast<size_t>(n));

  // Phase steps+1, unfold.
  if (fold.absorbs(r)) {
    PLX_CHECK(exchange(
        transport,
        {.peer = r + 1, .first_tag = tag(unfold_phase), .send = out, .send_count = count}, fmt));
  }
  return PLX_SUCCESS;
}

}  // namespace plexus::comm
