// recursive_halving_reduce_scatter.cpp - recursive-halving reduce-scatter, any n.
//
// R. Thakur, R. Rabenseifner and W. Gropp, "Optimization of collective communication operations
// in MPICH", IJHPCA 19(1), 2005, section 4.3 (commutative ops); MPICH's
// MPIR_Reduce_scatter_block_intra_recursive_halving.
//
// Let p = 2^floor(log2 n) and rem = n - p.
// Fold: among the first 2*rem ranks, each even rank sends its whole sendbuf (n blocks) to the odd
//   rank above it, which adds it to its own and takes part for both; the even ranks then wait.
//   The p ranks left get virtual ranks v: odd r < 2*rem is v = r/2, r >= 2*rem is v = r - rem.
//   Virtual rank v owns the result blocks of the real ranks it stands for: blocks 2v and 2v+1
//   for v < rem, block v + rem otherwise (contiguous, in order).
// Halving, steps mask = p/2, p/4, ..., 1: v and its partner v ^ mask split the range of virtual
//   ranks they still hold; the lower keeps the lower half. Each sends the half it gives away and
//   receives the partner's partial sums of the half it keeps, adding them in. After the last
//   step v holds its own blocks, fully reduced.
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
// Pipelining: every exchange is cut into slices of at most chunk_bytes; kRecvDepth slices are
// received ahead into staging and reduced as they land, while up to kSendDepth are sent. Phase
// q (0 fold, 1..log2 p halving steps, log2 p + 1 hand-back) tags slice k as
// tag_base | (q * P + k), where P is the most slices any phase has. Each phase ends with every
// request complete. The sends read the accumulator, which is the staging of the send-side
// Pipeline so that it is leaked with them if a wait fails (pipeline.h).
//
// Bytes on the wire: each of the p ranks sends and receives about (p-1)/p * n * count *
// elem_bytes in log2 p steps (exactly that when n = p); the fold adds n * count * elem_bytes and
// the hand-back count * elem_bytes on the 2*rem folded ranks.
#include <algorithm>
#include <cstring>

#include "comm/algorithms/algorithms.h"
#include "comm/algorithms/pipeline.h"
#include "comm/core/error.h"
#include "comm/reduce/reduce.h"

namespace plexus::comm {
namespace {

constexpr size_t kSendDepth = 4;
constexpr size_t kRecvDepth = 2;

}  // namespace

plx_result_t recursive_halving_reduce_scatter(Transport& transport, uint64_t tag_base,
                                              const CollArgs& args) {
  const size_t count = args.count;
  const plx_datatype_t datatype = args.datatype;
  const plx_red_op_t op = args.op;
  const size_t elem = datatype_bytes(datatype);
  const size_t n = static_cast<size_t>(transport.size());
  const size_t r = static_cast<size_t>(transport.rank());
  const auto* in = static_cast<const unsigned char*>(args.sendbuf);
  auto* out = static_cast<unsigned char*>(args.recvbuf);
  if (count == 0) return PLX_SUCCESS;
  if (n == 1) {  // the sum of one contribution; AVG divides by 1
    if (out != in) std::memcpy(out, in, count * elem);
    return PLX_SUCCESS;
  }

  size_t p = 1, log2p = 0;
  while (p * 2 <= n) p *= 2, ++log2p;
  const size_t rem = n - p;
  const bool folded = r < 2 * rem;          // takes part in the fold
  const bool waits = folded && r % 2 == 0;  // sends its vector away and waits for its block
  const size_t v = folded ? r / 2 : r - rem;
  // First block of virtual rank w (w = p gives n), and the real rank of w.
  const auto first_block = [&](size_t w) { return w < rem ? 2 * w : w + rem; };
  const auto real = [&](size_t w) { return static_cast<int>(w < rem ? 2 * w + 1 : w + rem); };

  // Slices of at most chunk_bytes, widened so that q * P + k stays below kTagIndexLimit.
  const size_t total = n * count;
  const size_t phases = log2p + 2;
  const size_t max_slices = kTagIndexLimit / phases;
  size_t slice_elems = std::max<size_t>(1, args.chunk_bytes / elem);
  slice_elems = std::max(slice_elems, (total + max_slices - 1) / max_slices);
  slice_elems = std::min(slice_elems, total);
  const size_t P = (total + slice_elems - 1) / slice_elems;

  // The accumulator covers elements [acc_lo, acc_lo + acc_len) of the n*count vector.
  size_t acc_lo = 0, acc_len = 0;
  if (folded && !waits) {
    acc_len = total;
  } else if (!folded) {
    const bool upper = v >= p / 2;
    acc_lo = first_block(upper ? p / 2 : 0) * count;
    acc_len = first_block(upper ? p : p / 2) * count - acc_lo;
  }
  Pipeline tx(transport, kSendDepth, 1, acc_len * elem);      // sends; its staging: the accumulator
  Pipeline rx(transport, 1, kRecvDepth, slice_elems * elem);  // receives, into staging
  unsigned char* const acc = tx.staging(0);
  const auto acc_at = [&](size_t e) { return acc + (e - acc_lo) * elem; };
  bool acc_valid = false;  // false until the first reduction: partial sums are still sendbuf

  // One phase with `peer`: sends send_elems from src, receives recv_elems. A received slice
  // lands in `direct` (if given) or in staging, where use(first element, elements, data)
  // consumes it.
  const auto exchange = [&](int peer, size_t phase, const unsigned char* src, size_t send_elems,
                            size_t recv_elems, unsigned char* direct, auto&& use) -> plx_result_t {
    const auto slices = [&](size_t elems) { return (elems + slice_elems - 1) / slice_elems; };
    const auto len = [&](size_t elems, size_t k) {
      return std::min(slice_elems, elems - k * slice_elems);
    };
    const size_t sends = slices(send_elems), recvs = slices(recv_elems);
    const auto tag = [&](size_t k) { return tag_base | (phase * P + k); };
    const auto post_recv = [&](size_t k) {
      void* dst = direct ? direct + k * slice_elems * elem : rx.staging(k);
      return rx.post_recv(peer, tag(k), dst, len(recv_elems, k) * elem);
    };
    // Every send is ready: those numbered <= k are posted before receive k is waited for
    // (pipeline.h), later ones while the window has room.
    size_t posted = 0;
    const auto post_sends = [&](size_t k) -> plx_result_t {
      while (posted < sends) {
        if (posted > k) {
          bool room = false;
          PLX_CHECK(tx.send_has_room(&room));
          if (!room) break;
        }
        PLX_CHECK(tx.send(peer, tag(posted), src + posted * slice_elems * elem,
                          len(send_elems, posted) * elem));
        ++posted;
      }
      return PLX_SUCCESS;
    };
    for (size_t k = 0; k < std::min(kRecvDepth, recvs); ++k) PLX_CHECK(post_recv(k));
    for (size_t k = 0; k < recvs; ++k) {
      PLX_CHECK(post_sends(k));
      PLX_CHECK(rx.wait_recv());
      if (!direct) use(k * slice_elems, len(recv_elems, k), rx.staging(k));
      if (k + kRecvDepth < recvs) PLX_CHECK(post_recv(k + kRecvDepth));
    }
    PLX_CHECK(post_sends(sends));
    PLX_CHECK(rx.finish());
    return tx.finish();
  };
  const auto none = [](size_t, size_t, const unsigned char*) {};
  // Adds received partial sums of elements [first, first + len) into the accumulator.
  const auto reduce_at = [&](size_t first) {
    return [&, first](size_t off, size_t len, const unsigned char* data) {
      const size_t e = first + off;
      const unsigned char* mine = acc_valid ? acc_at(e) : in + e * elem;
      reduce_copy(acc_at(e), mine, data, len, datatype, op);
    };
  };
  const size_t hand_back = log2p + 1;

  // Fold.
  if (waits) {
    PLX_CHECK(exchange(static_cast<int>(r + 1), 0, in, total, 0, nullptr, none));
    PLX_CHECK(exchange(static_cast<int>(r + 1), hand_back, nullptr, 0, count, out, none));
  } else {
    if (folded) {
      PLX_CHECK(exchange(static_cast<int>(r - 1), 0, nullptr, 0, total, nullptr, reduce_at(0)));
      acc_valid = true;
    }
    // Halving over the virtual ranks [lo, hi).
    size_t lo = 0, hi = p, phase = 1;
    for (size_t mask = p / 2; mask >= 1; mask /= 2, ++phase) {
      const size_t mid = lo + mask;
      const bool lower = (v & mask) == 0;
      const size_t keep_lo = lower ? lo : mid, keep_hi = lower ? mid : hi;
      const size_t give_lo = lower ? mid : lo, give_hi = lower ? hi : mid;
      const size_t send_first = first_block(give_lo) * count;
      const size_t send_elems = first_block(give_hi) * count - send_first;
      const size_t recv_first = first_block(keep_lo) * count;
      const size_t recv_elems = first_block(keep_hi) * count - recv_first;
      const unsigned char* src = acc_valid ? acc_at(send_first) : in + send_first * elem;
      PLX_CHECK(exchange(real(v ^ mask), phase, src, send_elems, recv_elems, nullptr,
                         reduce_at(recv_first)));
      acc_valid = true;
      lo = keep_lo;
      hi = keep_hi;
    }
    // Hand-back, then this rank's own block.
    if (folded) {
      PLX_CHECK(exchange(static_cast<int>(r - 1), hand_back, acc_at((r - 1) * count), count, 0,
                         nullptr, none));
    }
    std::memcpy(out, acc_at(r * count), count * elem);
  }
  if (op == PLX_AVG) divide_by(out, count, datatype, n);
  return PLX_SUCCESS;
}

}  // namespace plexus::comm
