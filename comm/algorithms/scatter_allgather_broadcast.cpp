// scatter_allgather_broadcast.cpp - van de Geijn's broadcast for long messages: binomial scatter
// of n blocks from the root, then a ring allgather of the blocks.
//
// M. Barnett, S. Gupta, D. Payne, L. Shuler, R. van de Geijn and J. Watts, "Interprocessor
// collective communication library (InterCom)", SHPCC 1994; R. Thakur, R. Rabenseifner and
// W. Gropp, "Optimization of collective communication operations in MPICH", IJHPCA 19(1), 2005,
// section 3 (MPICH's broadcast for long messages).
//
// Ranks are renumbered relative to the root, v = (rank - root) mod n, and the count elements are
// cut into n near-equal blocks (Blocks in slices.h); block b is relative rank b's.
//
// Phase 1, binomial scatter. The tree is the binomial broadcast's (binomial_tree.h): v receives
// from v minus its lowest set bit, and its subtree is the ranks [v, v + extent(v)), extent(v) =
// min(lowbit(v), n - v) (n at the root). Each rank receives the blocks of its whole subtree from
// its parent and passes each child the child's subtree blocks, largest subtree first. n = 7:
//
//             0 [0..6]                     root sends blocks 4..6 to v4, 2..3 to v2, 1 to v1
//       +-------+-------+                  v4 sends block 6 to v6, 5 to v5
//    4 [4..6]  2 [2..3]  1 [1]             v2 sends block 3 to v3
//    +--+--+      |
//  6 [6]  5 [5]  3 [3]
//
// Phase 2, ring allgather around v -> v+1 (ring.h), steps t = 0..n-2: v sends block (v - t) mod n
// to v+1 and receives block (v - t - 1) mod n from v-1, which is what it forwards at step t+1. A
// block the receiver already holds from the scatter (its subtree's, or all of them at the root) is
// neither sent nor received, so the root receives nothing.
//
// Messages are cut into slices of at most chunk_bytes. Scatter slice k is tag_base | k (a rank
// receives one scatter message); ring step t, slice k is message u = t*S + k (S slices per
// block), tagged tag_base | (phase_slices + u); empty slices are skipped. Ring receives land in
// recvbuf directly, kRecvDepth posted ahead, up to kSendDepth sends in flight (pipeline.h).
//
// Bytes on the wire: the root sends (n-1)/n of the message in the scatter; in the ring every rank
// sends at most (n-1)/n of it; in all about 2(n-1)/n * count * elem_bytes per rank instead of
// the binomial tree's log2(n) * count * elem_bytes at the root, for ceil(log2 n) + n-1 steps.
#include <algorithm>
#include <cstring>
#include <deque>

#include "comm/algorithms/algorithms.h"
#include "comm/algorithms/binomial_tree.h"
#include "comm/algorithms/block_exchange.h"
#include "comm/algorithms/pipeline.h"
#include "comm/algorithms/ring.h"
#include "comm/algorithms/slices.h"
#include "comm/base/error.h"
#include "comm/reduce/reduce.h"

namespace plexus::comm {
namespace {

constexpr size_t kSendDepth = 4;
constexpr size_t kRecvDepth = 4;

}  // namespace

plx_result_t scatter_allgather_broadcast(Transport& transport, uint64_t tag_base,
                                         const CollArgs& args) {
  const size_t count = args.count;
  const size_t elem = datatype_bytes(args.datatype);
  const BinomialTree tree(transport.size(), args.root, transport.rank());
  const size_t n = tree.n, v = tree.v;
  auto* out = static_cast<unsigned char*>(args.recvbuf);
  if (count == 0) return PLX_SUCCESS;
  if (v == 0 && args.sendbuf != args.recvbuf) std::memcpy(out, args.sendbuf, count * elem);
  if (n == 1) return PLX_SUCCESS;

  const ExchangePhases phases(args, tag_base, count, n);  // the scatter, then the ring's steps
  const ExchangeFormat& fmt = phases.fmt;
  const size_t phase_slices = phases.phase_slices;
  const SlicedBlocks blocks(Blocks{count, n}, fmt.slice_elems);
  const auto holds = [&](size_t w, size_t b) { return b >= w && b < w + tree.extent(w); };
  const auto subtree_count = [&](size_t w) { return blocks.blocks.span(w, w + tree.extent(w)); };
  const auto at = [&](size_t b) { return out + blocks.blocks.begin(b) * elem; };

  // Phase 1: scatter. Receive the subtree's blocks from the parent, then feed the children.
  if (v != 0) {
    PLX_CHECK(exchange(transport,
                       {.peer = tree.parent(),
                        .first_tag = tag_base,
                        .recv = at(v),
                        .recv_count = subtree_count(v)},
                       fmt));
  }
  for (size_t bit = tree.mask() >> 1; bit > 0; bit >>= 1) {  // the children v + bit
    if (v + bit >= n) continue;
    PLX_CHECK(exchange(transport,
                       {.peer = tree.real(v + bit),
                        .first_tag = tag_base,
                        .send = at(v + bit),
                        .send_count = subtree_count(v + bit)},
                       fmt));
  }

  // Phase 2: ring allgather. Message u = t*S + k is slice k of the block of step t.
  const size_t S = blocks.slices;
  const size_t messages = (n - 1) * S;
  const Ring ring{n, v, v};  // in relative ranks: step t sends block (v - t) mod n
  const size_t next = static_cast<size_t>(ring.next());
  const auto sent_block = [&](size_t u) { return ring.send_block(u / S); };
  const auto recv_block = [&](size_t u) { return ring.recv_block(u / S); };
  const auto is_sent = [&](size_t u) {
    return !holds(next, sent_block(u)) && blocks.slice_count(sent_block(u), u % S) > 0;
  };
  const auto is_received = [&](size_t u) {
    return !holds(v, recv_block(u)) && blocks.slice_count(recv_block(u), u % S) > 0;
  };
  const auto where = [&](size_t b, size_t k) { return out + blocks.slice_begin(b, k) * elem; };
  const int to = tree.real(next), from = tree.real(ring.prev());
  Pipeline pipe(transport, kSendDepth, kRecvDepth, 0);

  size_t used = 0;            // every receive numbered below `used` has landed (or is skipped)
  size_t to_post = 0;         // next receive number to consider posting
  std::deque<size_t> posted;  // receives in flight, oldest first
  const auto post_recvs = [&]() -> plx_result_t {
    for (; to_post < messages && posted.size() < kRecvDepth; ++to_post) {
      if (!is_received(to_post)) continue;
      const size_t b = recv_block(to_post), k = to_post % S;
      PLX_CHECK(pipe.post_recv(from, tag_base | (phase_slices + to_post), where(b, k),
                               blocks.slice_count(b, k) * elem));
      posted.push_back(to_post);
    }
    return PLX_SUCCESS;
  };
  // A send is ready once its block is here: held since the scatter, or received as message u-S.
  // Sends the receivers skip are skipped here too, so they take no room in the window.
  size_t next_send = 0;
  const auto post_sends = [&](size_t last) -> plx_result_t {
    for (; next_send < messages; ++next_send) {
      const size_t u = next_send, b = sent_block(u);
      if (!is_sent(u)) continue;
      if (!holds(v, b) && u - S >= used) break;  // not here yet (u >= S: step 0 sends block v)
      if (u > last) {
        bool room = false;
        PLX_CHECK(pipe.send_has_room(&room));
        if (!room) break;
      }
      PLX_CHECK(pipe.send(to, tag_base | (phase_slices + u), where(b, u % S),
                          blocks.slice_count(b, u % S) * elem));
    }
    return PLX_SUCCESS;
  };

  PLX_CHECK(post_recvs());
  while (!posted.empty()) {
    const size_t u = posted.front();
    PLX_CHECK(post_sends(u));  // every send numbered <= u is ready: it needs receives < u
    PLX_CHECK(pipe.wait_recv());
    posted.pop_front();
    used = u + 1;
    PLX_CHECK(post_recvs());
  }
  used = messages;
  PLX_CHECK(post_sends(messages));
  return pipe.finish();
}

}  // namespace plexus::comm
