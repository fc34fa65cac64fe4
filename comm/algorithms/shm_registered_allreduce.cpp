// shm_registered_allreduce.cpp - allreduce straight between the ranks' registered buffers
// (plx_mem_alloc + plx_comm_register): no staging copies, as NCCL does with user-buffer
// registration on NVLink (each rank maps its peers' buffers and reduces from and writes to them
// directly). The split is the reduce-scatter + allgather of Patarasuk & Yuan (JPDC 2009), both
// done in one pass by loads and stores.
//
// The handshake (announce, mapped, done) is shm_registered.h's, needing every rank's sendbuf and
// recvbuf. Between mapped and done, rank r reduces part r (piece_part over the whole vector)
// from every rank's sendbuf, in the order r, r+1, .., r-1 (a chunk at a time, into its own
// recvbuf), and copies the chunk into every peer's recvbuf.
//
// Memory traffic per rank: m/n read from each of n sendbufs and m/n written to each of n
// recvbufs, 2m in all, against about 4.5m for the staged path. In place works: only rank r
// reads or writes part r of any rank's buffers, and it reads a chunk before writing it.
//
// Decisions are the same on every rank: each reads the same published flags.
#include <algorithm>
#include <cstring>

#include "comm/algorithms/algorithms.h"
#include "comm/algorithms/shm_pieces.h"
#include "comm/algorithms/shm_registered.h"

namespace plexus::comm {
namespace {

constexpr size_t kChunkBytes = size_t{32} << 10;  // reduced in L1/L2 before the copies

}  // namespace

plx_result_t shm_registered_allreduce(PeerMemory& peers, const CollArgs& args, bool* done) {
  const int n = peers.size(), r = peers.rank();
  const size_t elem = datatype_bytes(args.datatype);
  const uint64_t bytes = static_cast<uint64_t>(args.count) * elem;
  RegisteredNeeds needs;
  needs.send_all = needs.recv_all = true;
  return run_registered(
      peers, args, bytes, bytes, needs, "allreduce:shm", done, [&](const RegisteredCall& call) {
        const PieceSpan part = piece_part(args.count, n, r, elem);
        const size_t per_chunk = std::max<size_t>(1, kChunkBytes / elem);
        for (size_t begin = part.begin; begin < part.begin + part.count; begin += per_chunk) {
          const size_t count = std::min(per_chunk, part.begin + part.count - begin);
          const size_t at = begin * elem;
          unsigned char* dst = call.recv[r] + at;
          reduce_registered(dst, call, at, count, r, n, args);
          for (int j = 1; j < n; ++j) std::memcpy(call.recv[(r + j) % n] + at, dst, count * elem);
        }
      });
}

}  // namespace plexus::comm
