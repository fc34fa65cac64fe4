// shm_registered.h - the handshake that lets a shm algorithm work straight on its peers'
// registered buffers (plx_mem_alloc + plx_comm_register, comm/core/shared_allocations.h)
// instead of staging through the peer-memory slots, as NCCL does with user-buffer registration
// on NVLink. Used by shm_registered_allreduce.cpp and shm_registered_pull.cpp.
//
// Three barriers on the peer-memory segment's piece counters (pieces g, g+1, g+2 of
// peer_memory.h; only a few bytes of each slot are used):
//
//   A. announce  rank r writes its buffers' references (shared_buffer.h) into slot(r, g) and
//                arrives at g. If a buffer the algorithm needs is not registered, every rank
//                sees it alike and the staged path runs.
//   B. mapped    each rank maps the needed buffers of every peer (cached across calls) and
//                publishes whether it could in slot(r, g+1). If any could not, every rank
//                falls back. Skipped when the needed buffers lie in the allocations that every
//                rank mapped at the last B that succeeded (the steady state of a training loop
//                or benchmark): those mappings are cached and kept, so they cannot fail.
//   C. done      after the algorithm's work (registered_end): every rank arrives at g+2 and
//                waits for everyone, after which no rank touches another's buffers, so a rank
//                returning may hand its buffers back to the caller.
//
// Decisions are the same on every rank: each reads the same published announcements.
#pragma once

#include <cstdint>
#include <vector>

#include "comm/algorithms/algorithms.h"
#include "comm/algorithms/shm_pieces.h"

namespace plexus::comm {

// Which ranks' buffers the algorithm reads or writes in its peers' processes.
struct RegisteredNeeds {
  bool send_all = false;  // every rank's sendbuf
  int send_root = -1;     // only this rank's sendbuf (broadcast); -1: none
  bool recv_all = false;  // every rank's recvbuf (allreduce writes its peers' results)
};

// A call between registered buffers: rank q's buffers as this process sees them (its own:
// args.sendbuf and args.recvbuf), nullptr where not needed.
struct RegisteredCall {
  std::vector<const unsigned char*> send;
  std::vector<unsigned char*> recv;
  uint32_t done_piece = 0;  // C's piece
};

// Phases A and B for a call whose sendbuf holds send_bytes and recvbuf recv_bytes (the same on
// every rank). Reserves three pieces. *ok true: `call` holds the mappings and the caller must
// do its work and then registered_end(); false (alike on every rank): some needed buffer is
// not registered or could not be mapped, the pieces are consumed, and the staged path runs.
// Errors: a peer that died or timed out (wait_all_arrived's), PLX_ERROR_INTERNAL when an
// allocation verified before fails to resolve.
plx_result_t registered_begin(PeerMemory& peers, const CollArgs& args, uint64_t send_bytes,
                              uint64_t recv_bytes, const RegisteredNeeds& needs,
                              const char* op_name, RegisteredCall* call, bool* ok);

// Phase C: arrive and wait for every rank; peers.last_path = Registered.
plx_result_t registered_end(PeerMemory& peers, const RegisteredCall& call, const char* op_name);

// The pulls (broadcast, allgather, reduce-scatter, all-to-all) start at 1 MiB, the allreduce at
// kRegisteredMinBytes (256 KiB): a pull is synchronous (an owner waits for its readers, where
// the staged paths run a piece ahead), and on the 2-core VM the pulls of 256 KiB lost to the
// slots with 4 ranks (allgather 1.7 against 4.1 GB/s busbw) while from 1 MiB they win but for
// allgather on 4 ranks (docs/performance.md).
constexpr size_t kRegisteredPullMinBytes = size_t{1} << 20;

// The whole registered call: registered_begin, then work(call) when every rank may go on, then
// registered_end; *done tells whether the work ran (false alike on every rank: stage instead).
template <typename Work>
plx_result_t run_registered(PeerMemory& peers, const CollArgs& args, uint64_t send_bytes,
                            uint64_t recv_bytes, const RegisteredNeeds& needs,
                            const char* op_name, bool* done, Work&& work) {
  *done = false;
  RegisteredCall call;
  bool ok = false;
  PLX_CHECK(registered_begin(peers, args, send_bytes, recv_bytes, needs, op_name, &call, &ok));
  if (!ok) return PLX_SUCCESS;
  work(call);
  PLX_CHECK(registered_end(peers, call, op_name));
  *done = true;
  return PLX_SUCCESS;
}

// dst = the reduction, in the order r, r+1, .., r-1, of `count` elements at byte `at` of every
// rank's sendbuf in `call` (divided by n for PLX_AVG); dst may be rank r's own term (in place).
inline void reduce_registered(unsigned char* dst, const RegisteredCall& call, size_t at,
                              size_t count, int r, int n, const CollArgs& args) {
  const unsigned char* first = call.send[r] + at;
  const unsigned char* next = call.send[(r + 1) % n] + at;
  if (dst == first) {
    reduce_into(dst, next, count, args.datatype, args.op);
  } else {
    reduce_copy(dst, first, next, count, args.datatype, args.op);
  }
  for (int j = 2; j < n; ++j) {
    reduce_into(dst, call.send[(r + j) % n] + at, count, args.datatype, args.op);
  }
  if (args.op == PLX_AVG) divide_by(dst, count, args.datatype, static_cast<size_t>(n));
}

// Whether a shm algorithm should try the registered path for a call of `bytes` (the larger of
// its sendbuf and recvbuf): from `min_bytes`, unless the argument check found some rank
// unregistered (CollArgs::registered). The same answer on every rank.
inline bool registered_worth_trying(const CollArgs& args, uint64_t bytes,
                                    size_t min_bytes = kRegisteredMinBytes) {
  return bytes >= min_bytes && args.registered != EveryoneRegistered::No;
}

// The start of a staged shm algorithm that has a registered path `registered` (one of the
// shm_registered_* below): that path first when registered_worth_trying(bytes, min_bytes)
// (*done when it ran), else the argument check riding the staged call's `staged_pieces` or
// checked apart (ride_or_check; checked apart before the registered path too). On return with
// *done false, *riding is the check the staged call carries (NULL: none).
using RegisteredPath = plx_result_t (*)(PeerMemory& peers, const CollArgs& args, bool* done);
inline plx_result_t start_staged(PeerMemory& peers, const CollArgs& args, uint64_t bytes,
                                 size_t min_bytes, RegisteredPath registered,
                                 size_t staged_pieces, const char* op,
                                 const NoteCheck** riding, bool* done) {
  *done = false;
  const bool worth = registered_worth_trying(args, bytes, min_bytes);
  PLX_CHECK(ride_or_check(args, worth ? 0 : staged_pieces, op, riding));
  return worth ? registered(peers, args, done) : PLX_SUCCESS;
}

// The pull algorithms of shm_registered_pull.cpp, each run by every rank of `peers` alike when
// registered_worth_trying(.., kRegisteredPullMinBytes); *done false (on every rank alike) when
// the staged path must run.
plx_result_t shm_registered_broadcast(PeerMemory& peers, const CollArgs& args, bool* done);
plx_result_t shm_registered_allgather(PeerMemory& peers, const CollArgs& args, bool* done);
plx_result_t shm_registered_reduce_scatter(PeerMemory& peers, const CollArgs& args, bool* done);
plx_result_t shm_registered_alltoall(PeerMemory& peers, const CollArgs& args, bool* done);

}  // namespace plexus::comm
