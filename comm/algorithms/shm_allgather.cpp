// shm_allgather.cpp - allgather through peer memory.
//
// Each rank's block goes through in pieces of slot_bytes, piece g in buffer g % 2. Per piece,
// on rank r:
//
//   1. stage     copy range [off, off + len) of sendbuf into r's buffer; publish arrived = g + 1
//   2. gather    for each peer q, as soon as q has arrived: copy q's buffer into block q of
//                recvbuf at off; block r comes from sendbuf (nothing to copy in place)
//
// Memory traffic per rank: blk copied in, (n-1) blk copied out (plus blk out of place).
// One wait per peer and piece, no messages.
//
// Single copy, for blocks of kSingleCopyMinBytes to kSingleCopyMaxBytes where the host allows it
// (PeerMemory::single_copy): one piece, no slot. Every rank posts its sendbuf's address as the
// piece's note and arrives; copies its own block (out of place); reads each peer's block
// straight from the peer's sendbuf into recvbuf as soon as that peer has arrived
// (process_vm_readv); publishes reduced = g + 1; and returns once every rank has (its sendbuf
// is read by the others until then). Memory traffic per rank: (n-1) blk, plus blk out of place.
#include "comm/algorithms/algorithms.h"
#include "comm/algorithms/shm_pieces.h"

#include <fmt/format.h>

#include <cstring>

namespace plexus::comm {
namespace {

constexpr const char* kOp = "allgather:shm";

plx_result_t single_copy_allgather(PeerMemory& peers, const unsigned char* in, unsigned char* out,
                                   size_t block_bytes) {
  const int n = peers.size(), r = peers.rank();
  const uint32_t g = peers.next_pieces(1);
  PLX_CHECK(peers.wait_writable(g, kOp));
  const BufferNote note{reinterpret_cast<uintptr_t>(in), block_bytes};
  peers.post_note(g, &note, sizeof(note));
  peers.arrive(g);
  if (in != out + r * block_bytes) std::memcpy(out + r * block_bytes, in, block_bytes);
  for (int j = 1; j < n; ++j) {
    const int q = (r + j) % n;
    PLX_CHECK(peers.wait_arrived(q, g, kOp));
    BufferNote theirs;
    PLX_CHECK(peers.read_note(q, g, sizeof(theirs), &theirs, kOp));
    if (theirs.bytes != block_bytes) {
      return set_error(PLX_ERROR_MISMATCH,
                       fmt::format("{}: rank {}: rank {} gives a block of {} bytes, this rank "
                                   "{} (PLEXUS_CHECK_ARGS=0 let mismatched counts through)",
                                   kOp, peers.member_rank(r), peers.member_rank(q), theirs.bytes,
                                   block_bytes));
    }
    PLX_CHECK(peers.read_from(q, theirs.address, out + q * block_bytes, block_bytes, kOp));
  }
  peers.reduced(g);
  return peers.wait_all_reduced(g, kOp);  // every rank has read this rank's sendbuf
}

}  // namespace

plx_result_t shm_allgather(Transport& transport, uint64_t tag_base, const CollArgs& args) {
  const int n = transport.size();
  PeerMemory* peers = args.peers;
  if (!peers || peers->size() != n || n == 1) return ring_allgather(transport, tag_base, args);
  const int r = peers->rank();
  const size_t elem = datatype_bytes(args.datatype);
  const auto* in = static_cast<const unsigned char*>(args.sendbuf);
  auto* out = static_cast<unsigned char*>(args.recvbuf);
  const size_t block_bytes = args.count * elem;
  if (use_single_copy(*peers, block_bytes)) {
    return single_copy_allgather(*peers, in, out, block_bytes);
  }
  const size_t per_piece = peers->slot_bytes() / elem;
  const PieceRun run(*peers, args.count, per_piece);
  if (in != out + r * block_bytes) std::memcpy(out + r * block_bytes, in, block_bytes);
  for (size_t k = 0; k < run.size(); ++k) {
    const auto [g, off, len] = run[k];
    // 1. stage
    PLX_CHECK(peers->wait_writable(g, kOp));
    std::memcpy(peers->slot(r, g), in + off * elem, len * elem);
    peers->arrive(g);
    // 2. gather
    for (int j = 1; j < n; ++j) {
      const int q = (r + j) % n;
      PLX_CHECK(peers->wait_arrived(q, g, kOp));
      std::memcpy(out + q * block_bytes + off * elem, peers->slot(q, g), len * elem);
    }
  }
  return PLX_SUCCESS;
}

}  // namespace plexus::comm
