// shm_registered_pull.cpp - broadcast, allgather, reduce-scatter and all-to-all straight out of
// the peers' registered sendbufs (plx_mem_alloc + plx_comm_register): every rank pulls what it
// needs with loads from its peers' buffers, mapped into its own process, and writes only its own
// recvbuf. No staging copy, so each byte is copied once, where the staged paths of
// shm_broadcast.cpp, shm_allgather.cpp, shm_reduce_scatter.cpp and shm_alltoall.cpp copy it in
// and out of a slot: NCCL's user-buffer registration on NVLink, and the single-copy
// (CMA/XPMEM) paths of Open MPI's and MPICH's shared-memory transports, work the same way.
//
// The handshake (announce, mapped, done) is shm_registered.h's, needing only sendbufs (the
// root's for broadcast). After "done" no rank reads another's buffers, so every rank may
// return. Per rank r, with m the vector (broadcast), blk a rank's block:
//
//   broadcast       r != root copies the root's sendbuf into its recvbuf (m); the root copies
//                   its own sendbuf when out of place
//   allgather       block q of recvbuf from rank q's sendbuf, q = r+1, .., r-1 (so that the
//                   ranks start on different peers), then its own block when out of place
//   reduce-scatter  recvbuf = block r reduced over every rank's sendbuf, in the order r, r+1,
//                   .., r-1 (every rank's part in the same order as the staged path, a chunk at
//                   a time; divided by n for PLX_AVG)
//   all-to-all      block q of recvbuf from block r of rank q's sendbuf
//
// In place: broadcast, allgather (sendbuf = block r of recvbuf: r writes only the other blocks,
// which no peer reads) and reduce-scatter (recvbuf = block r of sendbuf: only r reads block r of
// anyone's sendbuf, and it reads a chunk before writing it) are safe. An in-place all-to-all
// would overwrite blocks its peers have yet to read: such a rank announces itself unregistered
// (run_task.cpp) and the staged path runs.
#include <algorithm>
#include <cstring>

#include "comm/algorithms/shm_registered.h"

namespace plexus::comm {
namespace {

constexpr size_t kChunkBytes = size_t{32} << 10;  // reduced in L1/L2 chunk by chunk

}  // namespace

plx_result_t shm_registered_broadcast(PeerMemory& peers, const CollArgs& args, bool* done) {
  const int r = peers.rank(), root = args.root;
  const uint64_t bytes = static_cast<uint64_t>(args.count) * datatype_bytes(args.datatype);
  RegisteredNeeds needs;
  needs.send_root = root;
  return run_registered(peers, args, bytes, bytes, needs, "broadcast:shm", done,
                        [&](const RegisteredCall& call) {
                          if (r != root || call.send[r] != call.recv[r]) {
                            std::memcpy(call.recv[r], call.send[root], bytes);
                          }
                        });
}

plx_result_t shm_registered_allgather(PeerMemory& peers, const CollArgs& args, bool* done) {
  const int n = peers.size(), r = peers.rank();
  const uint64_t block = static_cast<uint64_t>(args.count) * datatype_bytes(args.datatype);
  RegisteredNeeds needs;
  needs.send_all = true;
  return run_registered(peers, args, block, block * n, needs, "allgather:shm", done,
                        [&](const RegisteredCall& call) {
                          unsigned char* out = call.recv[r];
                          for (int j = 1; j < n; ++j) {
                            const int q = (r + j) % n;
                            std::memcpy(out + q * block, call.send[q], block);
                          }
                          if (call.send[r] != out + r * block) {
                            std::memcpy(out + r * block, call.send[r], block);
                          }
                        });
}

plx_result_t shm_registered_reduce_scatter(PeerMemory& peers, const CollArgs& args,
                                           bool* done) {
  const int n = peers.size(), r = peers.rank();
  const size_t elem = datatype_bytes(args.datatype);
  const uint64_t block = static_cast<uint64_t>(args.count) * elem;
  RegisteredNeeds needs;
  needs.send_all = true;
  return run_registered(
      peers, args, block * n, block, needs, "reduce_scatter:shm", done,
      [&](const RegisteredCall& call) {
        const size_t per_chunk = std::max<size_t>(1, kChunkBytes / elem);
        const size_t mine = static_cast<size_t>(r) * block;  // block r's offset in every sendbuf
        for (size_t begin = 0; begin < args.count; begin += per_chunk) {
          const size_t count = std::min(per_chunk, args.count - begin);
          reduce_registered(call.recv[r] + begin * elem, call, mine + begin * elem, count, r, n,
                            args);
        }
      });
}

plx_result_t shm_registered_alltoall(PeerMemory& peers, const CollArgs& args, bool* done) {
  const int n = peers.size(), r = peers.rank();
  const uint64_t block = static_cast<uint64_t>(args.count) * datatype_bytes(args.datatype);
  RegisteredNeeds needs;
  needs.send_all = true;
  return run_registered(peers, args, block * n, block * n, needs, "alltoall:shm", done,
                        [&](const RegisteredCall& call) {
                          unsigned char* out = call.recv[r];
                          for (int j = 0; j < n; ++j) {
                            const int q = (r + j) % n;
                            std::memcpy(out + q * block, call.send[q] + r * block, block);
                          }
                        });
}

}  // namespace plexus::comm
