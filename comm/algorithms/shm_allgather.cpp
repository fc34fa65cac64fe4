// shm_allgather.cpp - allgather through peer memory.
//
// Each rank's block goes through in pieces of at most kShmPieceBytes of the slot, piece g in
// buffer g % 2. Per piece,
// on rank r:
//
//   1. stage     copy range [off, off + len) of sendbuf into r's buffer; publish arrived = g + 1
//   2. gather    for each peer q, as soon as q has arrived: copy q's buffer into block q of
//                recvbuf at off; block r comes from sendbuf (nothing to copy in place)
//
// A call of one piece under kRegisteredMinBytes carries the argument check (shm_pieces.h's
// ride_or_check): the note goes with the staged piece, and every rank waits for all and judges
// the notes before it writes recvbuf.
//
// Memory traffic per rank: blk copied in, (n-1) blk copied out (plus blk out of place).
// One wait per peer and piece, no messages. When every rank's sendbuf is registered
// (plx_comm_register), calls from kRegisteredPullMinBytes (1 MiB) copy straight out of the
// peers' sendbufs instead (shm_registered_pull.cpp).
#include "comm/algorithms/algorithms.h"
#include "comm/algorithms/shm_pieces.h"
#include "comm/algorithms/shm_registered.h"

#include <algorithm>
#include <cstring>

namespace plexus::comm {

plx_result_t shm_allgather(Transport& transport, uint64_t tag_base, const CollArgs& args) {
  const int n = transport.size();
  PeerMemory* peers = args.peers;
  if (!peers || peers->size() != n || n == 1) return ring_allgather(transport, tag_base, args);
  constexpr const char* kOp = "allgather:shm";
  const int r = peers->rank();
  const size_t elem = datatype_bytes(args.datatype);
  const size_t per_piece = std::min(peers->slot_bytes(), kShmPieceBytes) / elem;
  const NoteCheck* riding = nullptr;
  bool done = false;
  PLX_CHECK(start_staged(*peers, args, args.count * elem * static_cast<size_t>(n),
                         kRegisteredPullMinBytes, shm_registered_allgather,
                         pieces_of(args.count, per_piece), kOp, &riding, &done));
  if (done) return PLX_SUCCESS;
  const PieceRun run(*peers, args.count, per_piece);
  const auto* in = static_cast<const unsigned char*>(args.sendbuf);
  auto* out = static_cast<unsigned char*>(args.recvbuf);
  const size_t block_bytes = args.count * elem;
  for (size_t k = 0; k < run.size(); ++k) {
    const auto [g, off, len] = run[k];
    // 1. stage
    PLX_CHECK(peers->wait_writable(g, kOp));
    std::memcpy(peers->slot(r, g), in + off * elem, len * elem);
    PLX_CHECK(arrive_riding(*peers, g, riding, kOp));
    // 2. gather
    for (int j = 1; j < n; ++j) {
      const int q = (r + j) % n;
      PLX_CHECK(peers->wait_arrived(q, g, kOp));
      std::memcpy(out + q * block_bytes + off * elem, peers->slot(q, g), len * elem);
    }
  }
  // The own block last: nothing is written to recvbuf before a riding check's verdict.
  if (in != out + r * block_bytes) std::memcpy(out + r * block_bytes, in, block_bytes);
  return PLX_SUCCESS;
}

}  // namespace plexus::comm
