// recursive_halving_reduce_scatter.cpp - recursive-halving reduce-scatter, any n.
//
// R. Thakur, R. Rabenseifner and W. Gropp, "Optimization of collective communication operations
// in MPICH", IJHPCA 19(1), 2005, section 4.3 (commutative ops); MPICH's
// MPIR_Reduce_scatter_block_intra_recursive_halving.
//
// Let p = 2^floor(log2 n) and rem = n - p (Fold in block_exchange.h, the odd rank surviving).
// Fold: among the first 2*rem ranks, each even rank sends its whole sendbuf (n blocks) to the odd
//   rank above it, which adds it to its own and takes part for both; the even ranks then wait.
//   The p ranks left get virtual ranks v: odd r < 2*rem is v = r/2, r >= 2*rem is v = r - rem.
//   Virtual rank v owns the result blocks of the real ranks it stands for: blocks 2v and 2v+1
//   for v < rem, block v + rem otherwise (contiguous, in order).
// Halving, steps mask = p/2, p/4, ..., 1: v and its partner v ^ mask split the range of virtual
//   ranks they still hold; the lower keeps the lower half (Halving in block_exchange.h). Each sends
//   the half it gives away and receives the partner's partial sums of the half it keeps, adding
//   them in. After the last step v holds its own blocks, fully reduced.
// Hand-back: an odd folded rank sends block r-1 to its even partner; every rank has its block.
// n = 6 (p = 4, rem = 2), virtual ranks v0..v3 = real ranks 1, 3, 4, 5:
//
//   fold       0 -> 1   2 -> 3                    (whole vectors)
//   mask 2     v0 <-> v2, v1 <-> v3               (v0, v1 keep blocks 0..3; v2, v3 blocks 4, 5)
//   mask 1     v0 <-> v1, v2 <-> v3               (v0: 0,1  v1: 2,3  v2: 4  v3: 5)
//   hand-back  1 -> 0   3 -> 2                    (blocks 0 and 2)
//
// The partial sums live in an accumulator covering the first range this rank reduces into (all
// n blocks for an odd folded rank, the first kept half otherwise): the first reduction reads
// sendbuf, later ones the accumulator, and sendbuf is never written. recvbuf is written only at
// the end (in place it is block r of sendbuf, read until then). PLX_AVG divides it by n last.
//
// Pipelining: every phase is one exchange() (block_exchange.h), cut into slices of at most
// chunk_bytes; received slices are staged and added into the accumulator as they arrive (this
// rank's operand first), while the sends go on. Phase q (0 fold, 1..log2 p halving
// steps, log2 p + 1 hand-back) tags slice k as tag_base | (q * P + k), where P is the most slices
// any phase has. Each phase ends with every request complete. The sends read the accumulator, a
// StagingBuffer, so that it is leaked with them if a wait fails (pipeline.h).
//
// Bytes on the wire: each of the p ranks sends and receives about (p-1)/p * n * count *
// elem_bytes in log2 p steps (exactly that when n = p); the fold adds n * count * elem_bytes and
// the hand-back count * elem_bytes on the 2*rem folded ranks.
#include <cstring>

#include "comm/algorithms/algorithms.h"
#include "comm/algorithms/block_exchange.h"
#include "comm/algorithms/staging_buffer.h"
#include "comm/algorithms/trivial_reduction.h"
#include "comm/base/error.h"
#include "comm/reduce/reduce.h"

namespace plexus::comm {

plx_result_t recursive_halving_reduce_scatter(Transport& transport, uint64_t tag_base,
                                              const CollArgs& args) {
  if (reduce_trivially(args, transport.size())) return PLX_SUCCESS;
  const size_t count = args.count;
  const size_t elem = datatype_bytes(args.datatype);
  const int n = transport.size();
  const int r = transport.rank();
  const auto* in = static_cast<const unsigned char*>(args.sendbuf);
  auto* out = static_cast<unsigned char*>(args.recvbuf);

  const Fold fold(n, Fold::Survivor::Odd);
  const size_t p = static_cast<size_t>(fold.p);
  const size_t hand_back = static_cast<size_t>(fold.steps()) + 1;  // the last phase
  const size_t total = static_cast<size_t>(n) * count;
  const ExchangePhases phases(args, tag_base, total, hand_back + 1);
  const ExchangeFormat& fmt = phases.fmt;
  // The first element of virtual rank w's blocks (w = p gives n * count).
  const auto first_elem = [&](size_t w) {
    return static_cast<size_t>(fold.first_rank(static_cast<int>(w))) * count;
  };

  if (fold.folded_away(r)) {  // fold, then wait for this rank's block
    PLX_CHECK(exchange(transport,
                       {.peer = r + 1, .first_tag = phases.tag(0), .send = in, .send_count = total},
                       fmt));
    PLX_CHECK(exchange(
        transport,
        {.peer = r + 1, .first_tag = phases.tag(hand_back), .recv = out, .recv_count = count},
        fmt));
    if (args.op == PLX_AVG) divide_by(out, count, args.datatype, static_cast<size_t>(n));
    return PLX_SUCCESS;
  }

  // The accumulator covers elements [acc_lo, acc_lo + acc_len) of the n*count vector.
  const size_t v = static_cast<size_t>(fold.vrank(r));
  size_t acc_lo = 0, acc_len = total;
  if (!fold.absorbs(r)) {
    const bool upper = v >= p / 2;
    acc_lo = first_elem(upper ? p / 2 : 0);
    acc_len = first_elem(upper ? p : p / 2) - acc_lo;
  }
  StagingBuffer acc(acc_len * elem);
  const auto acc_at = [&](size_t e) { return acc.data() + (e - acc_lo) * elem; };
  bool acc_valid = false;  // false until the first reduction: partial sums are still sendbuf
  const auto partial = [&](size_t e) { return acc_valid ? acc_at(e) : in + e * elem; };

  // Fold: add the even partner's whole vector.
  if (fold.absorbs(r)) {
    PLX_CHECK(exchange(transport,
                       {.peer = r - 1,
                        .first_tag = phases.tag(0),
                        .recv = acc_at(0),
                        .recv_count = total,
                        .mine = in},
                       fmt));
    acc_valid = true;
  }
  // Halving over the virtual ranks [lo, lo + 2*mask): send the partial sums of the half given
  // away, add the partner's to the half kept.
  size_t lo = 0;
  size_t phase = 1;
  for (size_t mask = p / 2; mask >= 1; mask /= 2, ++phase) {
    const Halving h = halve(lo, v, mask);
    const size_t send_first = first_elem(h.give_lo), recv_first = first_elem(h.keep_lo);
    PLX_CHECK(exchange(transport,
                       {.peer = fold.real(static_cast<int>(v ^ mask)),
                        .first_tag = phases.tag(phase),
                        .send = partial(send_first),
                        .send_count = first_elem(h.give_hi) - send_first,
                        .recv = acc_at(recv_first),
                        .recv_count = first_elem(h.keep_hi) - recv_first,
                        .mine = partial(recv_first)},
                       fmt));
    acc_valid = true;
    lo = h.keep_lo;
  }
  // Hand-back, then this rank's own block.
  if (fold.absorbs(r)) {
    PLX_CHECK(exchange(transport,
                       {.peer = r - 1,
                        .first_tag = phases.tag(hand_back),
                        .send = acc_at(static_cast<size_t>(r - 1) * count),
                        .send_count = count},
                       fmt));
  }
  std::memcpy(out, acc_at(static_cast<size_t>(r) * count), count * elem);
  if (args.op == PLX_AVG) divide_by(out, count, args.datatype, static_cast<size_t>(n));
  return acc.settle(PLX_SUCCESS);
}

}  // namespace plexus::comm
