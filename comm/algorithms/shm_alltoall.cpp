// shm_alltoall.cpp - all-to-all through peer memory: every rank stages the blocks it sends,
// every rank copies the block meant for it straight out of each peer's staging buffer (the
// host analogue of a pairwise exchange, with loads and stores instead of messages).
//
// The blocks go through in rounds: round k carries elements [k w, (k+1) w) of every block,
// w = floor(P / (n e)) elements for pieces of P bytes (the slot, at most kShmPieceBytes) and
// elements of e bytes, so round k of the n blocks fills one piece. Per round g on rank r:
//
//   1. stage    once its buffer is free again (every peer arrived at g - 1): round k of every
//               block q != r of sendbuf at position q of r's buffer; publish arrived = g + 1
//   2. gather   for each peer q, once q has arrived: position r of q's buffer (the block q
//               sends to r) into block q of recvbuf; block r of sendbuf into block r of recvbuf
//               directly
//
//   rank r's buffer, round k:  [ to 0 | to 1 | ... | to n-1 ]   (w elements each; its own unused)
//
// A call of one round under kRegisteredMinBytes carries the argument check (shm_pieces.h's
// ride_or_check): the note goes with the staged round, and every rank waits for all and judges
// the notes before it writes recvbuf.
//
// Memory traffic per rank: (n-1) blocks copied in, (n-1) copied out, one copied locally; one
// wait per peer and round, no messages. In place (sendbuf == recvbuf): every block this rank
// sends is staged before any block lands in recvbuf (step 1 of a round precedes step 2, and a
// round's blocks land only in its own element range), so nothing is overwritten before it is
// read; the own block stays where it is. When every rank's sendbuf is registered
// (plx_comm_register) and no rank is in place, calls from kRegisteredPullMinBytes (1 MiB)
// copy straight out of the peers' sendbufs instead (shm_registered_pull.cpp).
#include "comm/algorithms/algorithms.h"
#include "comm/algorithms/shm_pieces.h"
#include "comm/algorithms/shm_registered.h"

#include <algorithm>
#include <cstring>

namespace plexus::comm {

plx_result_t shm_alltoall(Transport& transport, uint64_t tag_base, const CollArgs& args) {
  const int n = transport.size();
  PeerMemory* peers = args.peers;
  const size_t elem = datatype_bytes(args.datatype);
  const size_t piece = std::min(peers ? peers->slot_bytes() : 0, kShmPieceBytes);
  // Member i is rank i in a one-host segment (PeerMemory::open over every rank); checked
  // anyway, alike on every rank.
  if (!peers || peers->size() != n || n == 1 || peers->rank() != transport.rank() ||
      piece / elem < static_cast<size_t>(n)) {
    const NoteCheck* none = nullptr;  // a check the call carries is judged apart first
    PLX_CHECK(ride_or_check(args, 0, "alltoall:pairwise", &none));
    return pairwise_alltoall(transport, tag_base, args);
  }
  constexpr const char* kOp = "alltoall:shm";
  const int r = peers->rank();
  const size_t per_block = piece / elem / static_cast<size_t>(n);  // w: elements per block
  const NoteCheck* riding = nullptr;
  bool done = false;
  PLX_CHECK(start_staged(*peers, args, args.count * elem * static_cast<size_t>(n),
                         kRegisteredPullMinBytes, shm_registered_alltoall,
                         pieces_of(args.count, per_block), kOp, &riding, &done));
  if (done) return PLX_SUCCESS;
  const PieceRun run(*peers, args.count, per_block);
  const auto* in = static_cast<const unsigned char*>(args.sendbuf);
  auto* out = static_cast<unsigned char*>(args.recvbuf);
  const size_t block_bytes = args.count * elem;
  const size_t w_bytes = per_block * elem;
  for (size_t k = 0; k < run.size(); ++k) {
    const auto [g, off, len] = run[k];
    // 1. stage what this rank sends, round k of every block but its own
    PLX_CHECK(peers->wait_writable(g, kOp));
    unsigned char* own = peers->slot(r, g);
    for (int q = 0; q < n; ++q) {
      if (q != r) std::memcpy(own + q * w_bytes, in + q * block_bytes + off * elem, len * elem);
    }
    PLX_CHECK(arrive_riding(*peers, g, riding, kOp));
    // 2. gather what each peer sends this rank
    for (int j = 1; j < n; ++j) {
      const int q = (r + j) % n;
      PLX_CHECK(peers->wait_arrived(q, g, kOp));
      std::memcpy(out + q * block_bytes + off * elem, peers->slot(q, g) + r * w_bytes,
                  len * elem);
    }
  }
  // The own block last: nothing is written to recvbuf before a riding check's verdict.
  if (in != out) std::memcpy(out + r * block_bytes, in + r * block_bytes, block_bytes);
  return PLX_SUCCESS;
}

}  // namespace plexus::comm
