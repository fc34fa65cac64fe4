// shm_oneshot_allreduce.cpp - allreduce of small vectors through peer memory in one step: every
// rank copies its whole vector into its staging buffer, and once every rank has, each reduces
// all the buffers into its own recvbuf. The "one-shot" allreduce of GPU libraries (TensorRT-LLM's
// custom all-reduce, PyTorch's symmetric-memory one_shot_all_reduce) with loads and stores in
// the host's segment (comm/transport/peer_memory/peer_memory.h).
//
// Per piece g (kShmPieceBytes of the vector, algorithms.h, or the slot if smaller), on rank r
// of n:
//
//   1. stage    once its buffer is free again (every peer arrived at g - 1): the piece of
//               sendbuf into r's buffer; publish arrived = g + 1
//   2. reduce   once every rank has arrived: the buffers of ranks 0, 1, .., n-1, in that order,
//               into recvbuf (divided by n for PLX_AVG)
//
// One wait per piece where shm_allreduce.cpp (the "two-shot": each rank reduces 1/n, then
// every rank gathers) needs two: what decides a small allreduce on one host, where a wait is a
// cache line crossing cores (or, oversubscribed, a context switch). The price is memory
// traffic: each rank reads every buffer, n m in all against shm_allreduce's 2m, so the cost
// model (comm/tuning/shm_cost.h) gives it the small sizes. Every rank adds in the same order,
// so all hold the same bits. In place is safe: sendbuf is read only in step 1.
//
// The call's argument check rides step 1 (args.check, algorithms.h's NoteCheck): each rank's
// signature is posted beside its piece and judged once all have arrived, before recvbuf is
// touched, so the check costs no wait of its own (comm/core/signature.h).
#include "comm/algorithms/algorithms.h"
#include "comm/algorithms/shm_pieces.h"

#include <algorithm>
#include <cstddef>
#include <cstring>

namespace plexus::comm {

plx_result_t shm_oneshot_allreduce(Transport& transport, uint64_t tag_base,
                                   const CollArgs& args) {
  if (!args.peers || args.peers->size() != transport.size() || transport.size() == 1) {
    return recursive_doubling_allreduce(transport, tag_base, args);
  }
  PeerMemory& peers = *args.peers;
  const int n = peers.size(), r = peers.rank();
  const size_t elem = datatype_bytes(args.datatype);
  const char* name = "allreduce:shm_oneshot";
  const size_t per_piece = std::min(peers.slot_bytes(), kShmPieceBytes) / elem;
  const NoteCheck* check = nullptr;
  PLX_CHECK(ride_or_check(args, pieces_of(args.count, per_piece), name, &check));
  const PieceRun run(peers, args.count, per_piece);
  const auto* in = static_cast<const unsigned char*>(args.sendbuf);
  auto* out = static_cast<unsigned char*>(args.recvbuf);
  for (size_t k = 0; k < run.size(); ++k) {
    const auto [g, off, len] = run[k];
    // 1. stage
    PLX_CHECK(peers.wait_writable(g, name));
    std::memcpy(peers.slot(r, g), in + off * elem, len * elem);
    PLX_CHECK(arrive_riding(peers, g, check, name));
    // 2. reduce every buffer, in rank order
    PLX_CHECK(peers.wait_all_arrived(g, name));
    unsigned char* dst = out + off * elem;
    reduce_copy(dst, peers.slot(0, g), peers.slot(1, g), len, args.datatype, args.op);
    for (int q = 2; q < n; ++q) reduce_into(dst, peers.slot(q, g), len, args.datatype, args.op);
    if (args.op == PLX_AVG) divide_by(dst, len, args.datatype, static_cast<size_t>(n));
  }
  return PLX_SUCCESS;
}

}  // namespace plexus::comm
