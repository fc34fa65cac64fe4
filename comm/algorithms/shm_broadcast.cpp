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
// Memory traffic: m copied in by the root, m copied out by every other rank. One wait per
// piece per rank.
#include "comm/algorithms/algorithms.h"
#include "comm/algorithms/shm_pieces.h"

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
  const PieceRun run(*peers, args.count, per_piece);
  const auto* in = static_cast<const unsigned char*>(args.sendbuf);
  auto* out = static_cast<unsigned char*>(args.recvbuf);
  for (size_t k = 0; k < run.size(); ++k) {
    const auto [g, off, len] = run[k];
    if (r == root) {
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
