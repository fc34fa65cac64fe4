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
//
// Single copy, for kSingleCopyMinBytes to kSingleCopyMaxBytes where the host allows it
// (PeerMemory::single_copy):
// one piece, no slot. The root posts its sendbuf's address as the piece's note and arrives;
// every other rank, once the root has arrived, reads the vector straight from the root's
// sendbuf into its recvbuf (process_vm_readv) and publishes reduced = g + 1; the root copies
// sendbuf to its own recvbuf meanwhile (out of place) and returns once every rank has read
// (its sendbuf must not change before). Memory traffic: m per non-root, m at the root out of
// place, none in place; the root's critical path is one copy instead of two.
#include "comm/algorithms/algorithms.h"
#include "comm/algorithms/shm_pieces.h"

#include <fmt/format.h>

#include <cstring>

namespace plexus::comm {
namespace {

constexpr const char* kOp = "broadcast:shm";

plx_result_t size_mismatch(const PeerMemory& peers, int peer, uint64_t theirs, size_t mine) {
  return set_error(PLX_ERROR_MISMATCH,
                   fmt::format("{}: rank {}: root rank {} broadcasts {} bytes, this rank expects "
                               "{} (PLEXUS_CHECK_ARGS=0 let mismatched counts through)",
                               kOp, peers.member_rank(peers.rank()), peers.member_rank(peer),
                               theirs, mine));
}

plx_result_t single_copy_broadcast(PeerMemory& peers, const CollArgs& args,
                                   const unsigned char* in, unsigned char* out, size_t elem) {
  const int r = peers.rank(), root = args.root;
  const size_t bytes = args.count * elem;
  const uint32_t g = peers.next_pieces(1);
  if (r == root) {
    PLX_CHECK(peers.wait_writable(g, kOp));
    const BufferNote note{reinterpret_cast<uintptr_t>(in), bytes};
    peers.post_note(g, &note, sizeof(note));
    peers.arrive(g);
    if (in != out) std::memcpy(out, in, bytes);
    return peers.wait_all_reduced(g, kOp);  // every rank has read sendbuf
  }
  peers.arrive(g);
  PLX_CHECK(peers.wait_arrived(root, g, kOp));
  BufferNote note;
  PLX_CHECK(peers.read_note(root, g, sizeof(note), &note, kOp));
  if (note.bytes != bytes) return size_mismatch(peers, root, note.bytes, bytes);
  PLX_CHECK(peers.read_from(root, note.address, out, bytes, kOp));
  peers.reduced(g);
  return PLX_SUCCESS;
}

}  // namespace

plx_result_t shm_broadcast(Transport& transport, uint64_t tag_base, const CollArgs& args) {
  const int n = transport.size();
  PeerMemory* peers = args.peers;
  if (!peers || peers->size() != n || n == 1) {
    return scatter_allgather_broadcast(transport, tag_base, args);
  }
  const int r = peers->rank(), root = args.root;
  const size_t elem = datatype_bytes(args.datatype);
  const size_t per_piece = peers->slot_bytes() / elem;
  const auto* in = static_cast<const unsigned char*>(args.sendbuf);
  auto* out = static_cast<unsigned char*>(args.recvbuf);
  if (use_single_copy(*peers, args.count * elem)) {
    return single_copy_broadcast(*peers, args, in, out, elem);
  }
  const PieceRun run(*peers, args.count, per_piece);
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
