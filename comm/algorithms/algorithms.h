// algorithms.h - entry points of the collective algorithms, one file each in this folder.
//
// Every algorithm has the same shape:
//
//   plx_result_t name(Transport& transport, uint64_t tag_base, const CollArgs& args);
//
// `transport` is the communicator's (rank = transport.rank(), n = transport.size()).
// `tag_base` is unique to this collective call; the algorithm tags its messages
// tag_base | index with index < kTagIndexLimit (see comm/transport/tag.h), and must make every
// (peer, tag) pair unique within the call. Arguments were validated by the C ABI layer
// (comm/api/c_api.cpp): buffers are non-null where the collective reads or writes them with
// count > 0, datatype/op/root are in range, counts fit. Counts are ELEMENTS, as in NCCL.
// An algorithm is called only when count > 0 (alltoallv and barrier: always) and
// n >= 1; with n == 1 it must still copy sendbuf to recvbuf when they differ.
//
// Where ranks run: args.hosts (host_layout.h), set by the communicator; NULL means every rank
// on one host. Only the hierarchical algorithms read it; the others ignore it.
//
// Peer memory: args.peers (comm/transport/peer_memory/peer_memory.h), the segment shared by
// this rank's host, set by the communicator when the segments could be made (PLEXUS_SHM=1, the
// default); NULL otherwise. peers->size() tells whose: the whole communicator when it runs on
// one host, which the shm_* algorithms need (without it they run the flat algorithm named
// beside each below); this host's ranks (peers->rank() the local rank) when it spans hosts,
// which the hierarchical algorithms use for their intra-host phases (shm_group.h).
//
// Ops: args.op is one of PLX_SUM, PLX_PROD, PLX_MIN, PLX_MAX, PLX_AVG. PLX_AVG reduces as a sum
// and divides once by n at the end (divide_by in comm/reduce/reduce.h). The pre-multiplied sum
// is turned into PLX_SUM before an algorithm runs (the C ABI scales the input first).
//
// Buffer layouts and in-place rules (NCCL's, plus MPI's for the collectives NCCL lacks):
//   allreduce       send[count] -> recv[count] on every rank. In place: send == recv.
//   reduce          send[count] -> recv[count] on the root only (recv unused, maybe NULL,
//                   elsewhere). In place on the root: send == recv.
//   broadcast       root's send[count] -> recv[count] on every rank (send unused elsewhere).
//                   In place on the root: send == recv.
//   reduce_scatter  send[n*count] -> recv[count]: rank r gets block r of the reduction.
//                   In place: recv == send + r*count elements.
//   allgather       send[count] -> recv[n*count]: block r of recv is rank r's send.
//                   In place: send == recv + r*count elements.
//   alltoall        send[n*count] -> recv[n*count]: block j of send goes to rank j, and lands
//                   in block r of rank j's recv. In place: send == recv (the algorithm stages).
//   alltoallv       send + sdispls[j] elements, sendcounts[j] of them, go to rank j; they land
//                   in rank j's recv at rdispls[r] with recvcounts[r] == that count.
//                   In place (send == recv) is not supported (the C ABI refuses it).
//   gather          send[count] on every rank -> root's recv[n*count] (block r from rank r).
//                   In place on the root: send == recv + root*count elements.
//   scatter         root's send[n*count] -> recv[count] on every rank (block r to rank r).
//                   In place on the root: recv == send + root*count elements.
//   barrier         no buffers.
#pragma once

#include <cstddef>
#include <cstdint>

#include "comm/transport/peer_memory/shared_buffer.h"
#include "comm/transport/tag.h"
#include "comm/transport/transport.h"
#include "plexus/plexus.h"

namespace plexus::comm {

struct HostLayout;  // host_layout.h
class PeerMemory;   // comm/transport/peer_memory/peer_memory.h

enum class Collective {
  Allreduce,
  Reduce,
  Broadcast,
  ReduceScatter,
  Allgather,
  Alltoall,
  Alltoallv,
  Gather,
  Scatter,
  Barrier,
  kCount
};

// A check that rides a call's first piece through peer memory instead of a step of its own
// (the argument signatures of comm/core/signature.h, on one host): the algorithm posts `note`
// with the piece (PeerMemory::post_note) and, once every rank has arrived at it, hands every
// rank's note (member order, `bytes` apart) to `verdict`; an error there ends the call before
// anything is written to recvbuf, on every rank alike (each saw the same notes).
// Set only on communicators of at most kNoteCheckRanks ranks (the notes are read onto the stack).
constexpr int kNoteCheckRanks = 64;
struct NoteCheck {
  const void* note = nullptr;
  size_t bytes = 0;  // at most PeerMemory::kNoteBytes
  plx_result_t (*verdict)(const void* notes, int count, void* context) = nullptr;
  void* context = nullptr;
};

// What the argument check learnt of the ranks' registered buffers (CollArgs::registered).
enum class EveryoneRegistered : uint8_t { Unknown, No, Yes };

struct CollArgs {
  Collective collective = Collective::Allreduce;
  const void* sendbuf = nullptr;
  void* recvbuf = nullptr;
  size_t count = 0;  // elements; per rank for the rooted/scattered forms as listed above
  plx_datatype_t datatype = PLX_FLOAT32;
  plx_red_op_t op = PLX_SUM;
  int root = 0;
  // alltoallv only: n entries each, in elements.
  const size_t* sendcounts = nullptr;
  const size_t* sdispls = nullptr;
  const size_t* recvcounts = nullptr;
  const size_t* rdispls = nullptr;
  // Largest message slice the pipelined algorithms cut (PLEXUS_CHUNK_BYTES).
  size_t chunk_bytes = size_t{1} << 20;
  // The pipelined hierarchical allreduce's lane step (hierarchical_segments.h; the cost model's
  // plan, cost_model.h hierarchical_lane_plan, the same on every rank; 0: derived from
  // chunk_bytes alone, as without a two-level cost model).
  size_t lane_step_bytes = 0;
  // Whether its lanes run recursive halving and doubling (lane_halving.h) instead of the ring
  // (the cost model's choice, hierarchical_cost.h, or PLEXUS_HIERARCHICAL_LANES's, compared
  // at creation; the same on every rank).
  bool lane_halving = false;
  // The slice of its intra-host rings (hierarchical_segments.h hierarchical_intra_slice_bytes;
  // 0: chunk_bytes).
  size_t intra_chunk_bytes = 0;
  // The slice of a flat algorithm between hosts (cost_model.h flat_slice_bytes; 0: chunk_bytes):
  // the hierarchical allreduce's ring when every host has one rank.
  size_t network_chunk_bytes = 0;
  // The communicator's hosts (the hierarchical algorithms); NULL: one host. Not owned.
  const HostLayout* hosts = nullptr;
  // The staging buffers shared by the ranks of this host (the shm_* algorithms when they are
  // every rank, the hierarchical ones' intra-host phases); NULL: none. Not owned; the
  // algorithms advance its piece counter.
  PeerMemory* peers = nullptr;
  // sendbuf and recvbuf as registered plx_mem_alloc memory (shared_buffer.h), which peers on
  // this host may map; alloc_id 0 when not (then only the staged shm path can run). Set for
  // allreduce, broadcast, allgather, reduce-scatter and all-to-all with peer memory.
  SharedBufferRef send_ref{};
  SharedBufferRef recv_ref{};
  // Whether every rank's buffers that the registered shm paths need are registered, as the
  // argument check found (comm/core/signature.h); Unknown when no check ran. No spares those
  // paths' handshake (shm_registered.h) on calls that cannot use it.
  EveryoneRegistered registered = EveryoneRegistered::Unknown;
  // The check riding the first piece (NoteCheck), set only where the algorithm takes one:
  // shm_oneshot_allreduce on one piece. NULL: none, or checked before the call.
  const NoteCheck* check = nullptr;
};

using AlgorithmFn = plx_result_t (*)(Transport& transport, uint64_t tag_base,
                                     const CollArgs& args);

// ---- allreduce ---------------------------------------------------------------------------
// ring_allreduce.cpp: reduce-scatter then allgather around the ring rank -> rank+1, each of the n
// segments cut into slices of at most chunk_bytes and pipelined (Patarasuk & Yuan, JPDC 2009).
plx_result_t ring_allreduce(Transport& transport, uint64_t tag_base, const CollArgs& args);
// rabenseifner_allreduce.cpp: recursive-halving reduce-scatter then recursive-doubling allgather
// (Rabenseifner 2004; Thakur, Rabenseifner & Gropp 2005); non-powers of two fold the extra ranks
// into their partners first.
plx_result_t rabenseifner_allreduce(Transport& transport, uint64_t tag_base,
                                    const CollArgs& args);
// recursive_doubling_allreduce.cpp: log2(n) full-vector exchanges, for small messages.
plx_result_t recursive_doubling_allreduce(Transport& transport, uint64_t tag_base,
                                          const CollArgs& args);
// double_binary_tree_allreduce.cpp: NCCL's two complementary binary trees (Sanders, Speck &
// Traeff 2009), each reducing then broadcasting half the data, pipelined in chunks.
plx_result_t double_binary_tree_allreduce(Transport& transport, uint64_t tag_base,
                                          const CollArgs& args);
// hierarchical_allreduce.cpp: reduce-scatter inside each host, allreduce of each shard between
// hosts along its lane, allgather inside each host (NCCL's and Horovod's hierarchical scheme).
plx_result_t hierarchical_allreduce(Transport& transport, uint64_t tag_base,
                                    const CollArgs& args);
// shm_allreduce.cpp: every rank reduces its 1/n of each piece straight from its peers' staging
// buffers, then copies the reduced parts out (peer memory; without it: ring_allreduce).
plx_result_t shm_allreduce(Transport& transport, uint64_t tag_base, const CollArgs& args);
// shm_oneshot_allreduce.cpp: every rank stages its whole vector, then reduces every rank's
// buffer itself: one wait instead of two, for small vectors (peer memory; without it:
// recursive_doubling_allreduce). Pieces of at most kShmPieceBytes, as every shm algorithm.
//
// The shm algorithms' pieces: at most kShmPieceBytes of the slot (PLEXUS_CHUNK_BYTES). Measured
// on the 2-core VM, 2 ranks, 200-2000 calls per size: with pieces of the whole 1 MiB slot,
// broadcast fell from 12 to 5 GB/s at 1 MiB and allgather from 19 to 9 GB/s (algbw) at 2 MiB,
// and the one-shot allreduce halved at 1 MiB; with 256 KiB pieces a piece, its copy and the
// peers' stay in a core's L2, and broadcast keeps 12-17 GB/s to 8 MiB, allgather 15-19.
constexpr size_t kShmPieceBytes = size_t{256} << 10;
plx_result_t shm_oneshot_allreduce(Transport& transport, uint64_t tag_base,
                                   const CollArgs& args);

// ---- reduce ------------------------------------------------------------------------------
// binomial_reduce.cpp: binomial tree towards the root, pipelined in chunks for large messages.
plx_result_t binomial_reduce(Transport& transport, uint64_t tag_base, const CollArgs& args);
// ring_reduce.cpp: ring reduce-scatter, then every segment gathered at the root (Rabenseifner's
// reduce for large messages).
plx_result_t ring_reduce(Transport& transport, uint64_t tag_base, const CollArgs& args);
// hierarchical_reduce.cpp: a binomial tree inside each host towards the host's leader, then a
// chain (binomial for one slice) of the hosts' leaders towards the root, pipelined in slices.
plx_result_t hierarchical_reduce(Transport& transport, uint64_t tag_base, const CollArgs& args);
// shm_reduce.cpp: shm_allreduce's reduction, the root alone copying out (else ring_reduce).
plx_result_t shm_reduce(Transport& transport, uint64_t tag_base, const CollArgs& args);

// ---- broadcast ---------------------------------------------------------------------------
// broadcast.cpp: binomial tree, and pipelined chain.
plx_result_t binomial_broadcast(Transport& transport, uint64_t tag_base, const CollArgs& args);
plx_result_t chain_broadcast(Transport& transport, uint64_t tag_base, const CollArgs& args);
// scatter_allgather_broadcast.cpp: binomial scatter then ring allgather (van de Geijn).
plx_result_t scatter_allgather_broadcast(Transport& transport, uint64_t tag_base,
                                         const CollArgs& args);
// hierarchical_broadcast.cpp: a chain (binomial for one slice) of the hosts' leaders on the
// root's lane, then a binomial tree inside each host, pipelined in slices.
plx_result_t hierarchical_broadcast(Transport& transport, uint64_t tag_base,
                                    const CollArgs& args);
// shm_broadcast.cpp: the root stages pieces, the others copy them from its buffer (peer
// memory; without it: scatter_allgather_broadcast).
plx_result_t shm_broadcast(Transport& transport, uint64_t tag_base, const CollArgs& args);

// ---- reduce-scatter ----------------------------------------------------------------------
// ring_reduce_scatter.cpp: n-1 steps around the ring, pipelined in chunks.
plx_result_t ring_reduce_scatter(Transport& transport, uint64_t tag_base, const CollArgs& args);
// recursive_halving_reduce_scatter.cpp: log2(n) halving steps; non-powers of two folded.
plx_result_t recursive_halving_reduce_scatter(Transport& transport, uint64_t tag_base,
                                              const CollArgs& args);
// hierarchical_reduce_scatter.cpp: reduce-scatter inside each host by lane, then along each lane
// between hosts (Traeff & Hunold's full-lane reduce-scatter).
plx_result_t hierarchical_reduce_scatter(Transport& transport, uint64_t tag_base,
                                         const CollArgs& args);
// shm_reduce_scatter.cpp: each rank stages every block's piece and reduces its own block from
// the peers' buffers (peer memory; without it: ring_reduce_scatter).
plx_result_t shm_reduce_scatter(Transport& transport, uint64_t tag_base, const CollArgs& args);

// ---- allgather ---------------------------------------------------------------------------
// ring_allgather.cpp: n-1 steps around the ring, pipelined in chunks.
plx_result_t ring_allgather(Transport& transport, uint64_t tag_base, const CollArgs& args);
// bruck_allgather.cpp: ceil(log2 n) steps for any n (Bruck et al., IEEE TPDS 8(11), 1997).
plx_result_t bruck_allgather(Transport& transport, uint64_t tag_base, const CollArgs& args);
// hierarchical_allgather.cpp: allgather along each lane between hosts, then inside each host
// (Traeff & Hunold's full-lane allgather).
plx_result_t hierarchical_allgather(Transport& transport, uint64_t tag_base,
                                    const CollArgs& args);
// shm_allgather.cpp: each rank stages its block's pieces, the others copy them straight into
// their recvbuf (peer memory; without it: ring_allgather).
plx_result_t shm_allgather(Transport& transport, uint64_t tag_base, const CollArgs& args);

// ---- all-to-all --------------------------------------------------------------------------
// pairwise_alltoall.cpp: n-1 direct exchanges, step s with rank r+s / r-s (also alltoallv).
plx_result_t pairwise_alltoall(Transport& transport, uint64_t tag_base, const CollArgs& args);
plx_result_t pairwise_alltoallv(Transport& transport, uint64_t tag_base, const CollArgs& args);
// bruck_alltoall.cpp: ceil(log2 n) steps of packed blocks, for small blocks (Bruck et al. 1997).
plx_result_t bruck_alltoall(Transport& transport, uint64_t tag_base, const CollArgs& args);
// shm_alltoall.cpp: every rank stages the blocks it sends, every rank copies its own out of
// each peer's staging buffer (peer memory; without it: pairwise_alltoall).
plx_result_t shm_alltoall(Transport& transport, uint64_t tag_base, const CollArgs& args);

// ---- gather / scatter --------------------------------------------------------------------
// linear_gather.cpp / linear_scatter.cpp: the root exchanges with every rank directly.
plx_result_t linear_gather(Transport& transport, uint64_t tag_base, const CollArgs& args);
plx_result_t linear_scatter(Transport& transport, uint64_t tag_base, const CollArgs& args);
// binomial_gather.cpp / binomial_scatter.cpp: binomial trees, ceil(log2 n) rounds.
plx_result_t binomial_gather(Transport& transport, uint64_t tag_base, const CollArgs& args);
plx_result_t binomial_scatter(Transport& transport, uint64_t tag_base, const CollArgs& args);

// ---- barrier -----------------------------------------------------------------------------
// dissemination_barrier.cpp: ceil(log2 n) rounds of zero-byte messages.
plx_result_t dissemination_barrier(Transport& transport, uint64_t tag_base, const CollArgs& args);

}  // namespace plexus::comm
