// shm_broadcast.cpp - broadcast through peer memory: the root stages the vector in pieces, every
// other rank copies each piece straight out of the root's buffer.
//
// Piece g uses buffer g % 2 of the root's slot. Per piece:
//
//   root         wait until every rank has arrived at piece g - 1 (so all are done reading
//                piece g - 2, the last user of this buffer); copy the piece in; publish
//                arrived = g + 1
//   other ranks  publish arrived = g + 1 (done with every earlier piece); wait until the root
//                has arrived at g; copy its buffer into recvbuf
//
// A call of one piece under kRegisteredMinBytes carries the argument check (shm_pieces.h's
// ride_or_check): every rank then waits until the piece is writable, posts its note, arrives,
// and waits for every rank, judging the notes before it writes recvbuf.
//
// Memory traffic: m copied in by the root, m copied out by every other rank. One wait per
// piece per rank. When the root's sendbuf is registered (plx_comm_register), calls from
// kRegisteredPullMinBytes (1 MiB) copy straight out of it instead (shm_registered_pull.cpp).
#include "comm/algorithms/algorithms.h"
#include "comm/algorithms/shm_pieces.h"
#include "comm/algorithms/shm_registered.h"

#include <algorithm>
#include <cstring>

namespace plexus::comm {

plx_result_t shm_broadcast(Transport& transport, uint64_t tag_base, const CollArgs& args) {
  const int n = transport.size();
  PeerMemory* peers = args.peers;
  if (!peers || peers->size() != n || n == 1) {
    return scatter_allgather_broadcast(transport, tag_base, args);
  }
  constexpr const char* kOp = "broadcast:shm";
  const int r = peers->rank(), root = args.root;
  const size_t elem = datatype_bytes(args.datatype);
  const size_t per_piece = std::min(peers->slot_bytes(), kShmPieceBytes) / elem;
  const NoteCheck* riding = nullptr;
  bool done = false;
  PLX_CHECK(start_staged(*peers, args, args.count * elem, kRegisteredPullMinBytes,
                         shm_registered_broadcast, pieces_of(args.count, per_piece), kOp,
                         &riding, &done));
  if (done) return PLX_SUCCESS;
  const PieceRun run(*peers, args.count, per_piece);
  const auto* in = static_cast<const unsigned char*>(args.sendbuf);
  auto* out = static_cast<unsigned char*>(args.recvbuf);
  for (size_t k = 0; k < run.size(); ++k) {
    const auto [g, off, len] = run[k];
    if (riding) {
      // The one piece, with the argument check: every rank posts its note and reads all.
      PLX_CHECK(peers->wait_writable(g, kOp));
      if (r == root) std::memcpy(peers->slot(r, g), in + off * elem, len * elem);
      PLX_CHECK(arrive_riding(*peers, g, riding, kOp));
      if (r != root) std::memcpy(out + off * elem, peers->slot(root, g), len * elem);
    } else if (r == root) {
      PLX_CHECK(peers->wait_writable(g, kOp));
      std::memcpy(peers->slot(r, g), in + off * elem, len * elem);
      peers->arrive(g);
    } else {
      peers->arrive(g);
      PLX_CHECK(peers->wait_arrived(root, g, kOp));
      std::memcpy(out + off * elem, peers->slot(root, g), len * elem);
    }
  }
  if (r == root && in != out) std::memcpy(out, in, args.count * elem);
  return PLX_SUCCESS;
}

}  // namespace plexus::comm
