// shm_reduce_scatter.cpp - reduce-scatter through peer memory.
//
// sendbuf holds n blocks of count elements; rank r's result is block r reduced over the ranks.
// The blocks go through in pieces: piece g holds, in rank r's buffer g % 2, the same range
// [off, off + len) of every block, block q at q * len. Per piece, on rank r:
//
//   1. stage     copy range [off, off + len) of each of the n blocks into r's buffer;
//                publish arrived = g + 1
//   2. reduce    once every rank has arrived: recvbuf[off, off + len) = block r's range reduced
//                over every rank's buffer (divided by n for PLX_AVG)
//
// A call of one piece under kRegisteredMinBytes carries the argument check (shm_pieces.h's
// ride_or_check): the note goes with the staged piece and is judged once every rank arrived,
// before recvbuf is written.
//
// Memory traffic per rank: n blk copied in, (n-1) blk reduced. One wait per piece. In place
// (recvbuf == sendbuf + r * count) is safe: a range of block r is staged before it is written.
// When every rank's sendbuf is registered (plx_comm_register), calls from
// kRegisteredPullMinBytes (1 MiB) reduce straight out of the peers' sendbufs instead
// (shm_registered_pull.cpp).
#include "comm/algorithms/algorithms.h"
#include "comm/algorithms/shm_pieces.h"
#include "comm/algorithms/shm_registered.h"

#include <cstring>

namespace plexus::comm {

plx_result_t shm_reduce_scatter(Transport& transport, uint64_t tag_base, const CollArgs& args) {
  const int n = transport.size();
  const size_t elem = datatype_bytes(args.datatype);
  PeerMemory* peers = args.peers;
  if (!peers || peers->size() != n || n == 1 || peers->slot_bytes() / elem < size_t(n)) {
    const NoteCheck* none = nullptr;  // a check the call carries is judged apart first
    PLX_CHECK(ride_or_check(args, 0, "reduce_scatter:ring", &none));
    return ring_reduce_scatter(transport, tag_base, args);
  }
  constexpr const char* kOp = "reduce_scatter:shm";
  const int r = peers->rank();
  const size_t per_piece = peers->slot_bytes() / elem / static_cast<size_t>(n);
  const NoteCheck* riding = nullptr;
  bool done = false;
  PLX_CHECK(start_staged(*peers, args, args.count * elem * static_cast<size_t>(n),
                         kRegisteredPullMinBytes, shm_registered_reduce_scatter,
                         pieces_of(args.count, per_piece), kOp, &riding, &done));
  if (done) return PLX_SUCCESS;
  const PieceRun run(*peers, args.count, per_piece);
  const auto* in = static_cast<const unsigned char*>(args.sendbuf);
  auto* out = static_cast<unsigned char*>(args.recvbuf);
  for (size_t k = 0; k < run.size(); ++k) {
    const auto [g, off, len] = run[k];
    // 1. stage
    PLX_CHECK(peers->wait_writable(g, kOp));
    unsigned char* own = peers->slot(r, g);
    for (int q = 0; q < n; ++q) {
      std::memcpy(own + q * len * elem, in + (q * args.count + off) * elem, len * elem);
    }
    PLX_CHECK(arrive_riding(*peers, g, riding, kOp));
    // 2. reduce block r
    PLX_CHECK(peers->wait_all_arrived(g, kOp));
    reduce_slots(out + off * elem, *peers, g, r * len * elem, len, args.datatype, args.op);
  }
  return PLX_SUCCESS;
}

}  // namespace plexus::comm
