// shm_allreduce.cpp - allreduce through peer memory: every rank reads its peers' staging buffers
// directly (the host analogue of NCCL's NVLink peer-to-peer allreduce; the reduce-scatter +
// allgather split of Patarasuk & Yuan, JPDC 2009, with loads and stores instead of messages).
//
// The vector goes through in pieces of at most kShmPieceBytes of the slot (algorithms.h; slot:
// peer_memory.h), piece g in buffer g % 2, so
// staging piece g + 1 overlaps peers still reading piece g. Per piece, on rank r of n:
//
//   1. stage     copy the piece of sendbuf, all but part r (piece_part), into r's buffer;
//                publish arrived = g + 1
//   2. reduce    once every rank has arrived: part r of the piece from r's own sendbuf and
//                every peer's buffer, reduced into part r of r's own buffer (divided by n for
//                PLX_AVG); publish reduced = g + 1
//   3. gather    once every rank has reduced: copy part q of rank q's buffer into recvbuf, for
//                every q (only on the root, for reduce: shm_reduce.cpp)
//
//   rank 0 buffer  [ p0 | p1 | p2 ]      step 2: rank q reduces column q over every buffer,
//   rank 1 buffer  [ p0 | p1 | p2 ]      in place in its own buffer; step 3: every rank reads
//   rank 2 buffer  [ p0 | p1 | p2 ]      the diagonal (rank q's column q) into recvbuf.
//
// Memory traffic per rank: (n-1)/n m copied in, (n-1)/n m reduced from n-1 peers, m copied
// out (staging the own part too, as a first version did, cost another m/n of copies). Two
// waits per piece, no messages. Each part is reduced by one rank, so every rank holds the same
// bits.
//
// Calls of kRegisteredMinBytes or more first try shm_registered_allreduce.cpp, which skips the
// staging when every rank's buffers are registered (plx_comm_register).
#include "comm/algorithms/algorithms.h"
#include "comm/algorithms/shm_pieces.h"
#include "comm/algorithms/shm_registered.h"

#include <algorithm>
#include <cstring>

namespace plexus::comm {

plx_result_t shm_reduce_pieces(PeerMemory& peers, const CollArgs& args, int root,
                               const char* op_name) {
  const int n = peers.size(), r = peers.rank();
  const size_t elem = datatype_bytes(args.datatype);
  const size_t per_piece = std::min(peers.slot_bytes(), kShmPieceBytes) / elem;
  const PieceRun run(peers, args.count, per_piece);
  const auto* in = static_cast<const unsigned char*>(args.sendbuf);
  auto* out = static_cast<unsigned char*>(args.recvbuf);
  const bool gather = root < 0 || r == root;
  for (size_t k = 0; k < run.size(); ++k) {
    const auto [g, off, len] = run[k];
    unsigned char* own = peers.slot(r, g);
    // 1. stage the parts the peers reduce (this rank reads its own part from sendbuf in 2.)
    PLX_CHECK(peers.wait_writable(g, op_name));
    const PieceSpan mine = piece_part(len, n, r, elem);
    const size_t after = mine.begin + mine.count;
    std::memcpy(own, in + off * elem, mine.begin * elem);
    std::memcpy(own + after * elem, in + (off + after) * elem, (len - after) * elem);
    peers.arrive(g);
    // 2. reduce my part, from my input and the peers' slots, into my slot
    PLX_CHECK(peers.wait_all_arrived(g, op_name));
    reduce_with_peers(own + mine.begin * elem, in + (off + mine.begin) * elem, peers, g,
                      mine.begin * elem, mine.count, args.datatype, args.op,
                      static_cast<size_t>(n));
    peers.reduced(g);
    if (!gather) continue;
    // 3. gather every part
    for (int j = 0; j < n; ++j) {
      const int q = (r + j) % n;
      if (q != r) PLX_CHECK(peers.wait_reduced(q, g, op_name));
      const PieceSpan part = piece_part(len, n, q, elem);
      std::memcpy(out + (off + part.begin) * elem, peers.slot(q, g) + part.begin * elem,
                  part.count * elem);
    }
  }
  return PLX_SUCCESS;
}

plx_result_t shm_allreduce(Transport& transport, uint64_t tag_base, const CollArgs& args) {
  if (!args.peers || args.peers->size() != transport.size() || transport.size() == 1) {
    return ring_allreduce(transport, tag_base, args);
  }
  PeerMemory& peers = *args.peers;
  // Large calls first ask whether every rank's buffers are registered (a barrier more, skipped
  // when the argument check already found a rank unregistered; the same decision everywhere):
  // then no staging at all.
  if (registered_worth_trying(args, args.count * datatype_bytes(args.datatype))) {
    bool done = false;
    PLX_CHECK(shm_registered_allreduce(peers, args, &done));
    if (done) return PLX_SUCCESS;
  }
  return shm_reduce_pieces(peers, args, -1, "allreduce:shm");
}

}  // namespace plexus::comm
