// ipc_schedule.h - the piece schedule of the CUDA IPC collectives (ipc_collective.cpp): for one
// rank and one piece, the list of steps it runs, as data. Pure: no CUDA, no communicator, so the
// CPU test (tests/comm/ipc_schedule_test.cpp) runs every rank's steps against host memory.
//
// Every rank holds two device slots (ipc_slots.cpp), mapped by every peer; piece k of a call
// uses buffer g % 2 of every slot, g = the communicator's piece number of k (PeerMemory numbers
// them; its `arrived` / `reduced` counters and waits order the ranks, as in the shm algorithms,
// comm/algorithms/shm_*.cpp). The steps of piece k on rank r of n ("my slot" = r's buffer):
//
//   allreduce, reduce (shm_allreduce.cpp's split, Patarasuk & Yuan)
//     WaitWritable; Copy* my slot <- the piece of sendbuf; Sync; Arrive; WaitAllArrived;
//     Reduce part r (piece_part) over the n slots into my slot; Sync; Reduced;
//     then, on every rank (allreduce) or on the root (reduce), for q = r, r+1, ..:
//     WaitReduced(q) (q != r); Copy recvbuf part q <- q's slot part q
//   reduce_scatter (shm_reduce_scatter.cpp)
//     WaitWritable; Copy* my slot at q * stride <- range of block q, for every q; Sync; Arrive;
//     WaitAllArrived; Reduce recvbuf range <- the n slots at r * stride
//   allgather (shm_allgather.cpp)
//     [Copy block r of recvbuf <- sendbuf range, out of place]; WaitWritable;
//     Copy my slot <- sendbuf range; Sync; Arrive;
//     for q = r+1, r+2, ..: WaitArrived(q); Copy block q of recvbuf <- q's slot
//   broadcast (shm_broadcast.cpp)
//     root:   WaitWritable; Copy my slot <- sendbuf range; Sync; Arrive;
//             [Copy recvbuf range <- sendbuf range, out of place]
//     others: Sync (ends the copy of piece k - 1); Arrive; WaitArrived(root);
//             Copy recvbuf range <- root's slot
//   (* Copy with `scaled`: the input copy, scaled for a pre-multiplied sum.)
//
// Why it is safe to reuse a buffer every second piece: a rank publishes Arrive(g) only after a
// Sync that ended all its device work on pieces before g (the reads of peers' slots included),
// and writes its buffer of g only after WaitWritable(g), i.e. after every peer arrived at g - 1,
// so every peer is done with piece g - 2, the last user of that buffer. The executor ends each
// call with a Sync. Counts are elements; offsets are elements from the start of a buffer.
#pragma once

#include <cstddef>
#include <vector>

#include "comm/algorithms/algorithms.h"

namespace plexus::comm::device {

enum class StepKind {
  WaitWritable,    // every peer arrived at piece - 1: my buffer of this piece may be written
  WaitAllArrived,  // every rank arrived at this piece
  WaitArrived,     // rank `peer` arrived at this piece
  WaitReduced,     // rank `peer` reduced this piece
  Copy,            // dst <- src, `count` elements, queued on the stream
  Reduce,          // dst <- the fold over every rank's slot at src.offset, in the order r,
                   // r+1, .., r-1 (divided by n for PLX_AVG), queued on the stream
  Sync,            // wait for everything queued on the stream
  Arrive,          // publish arrived = piece + 1
  Reduced,         // publish reduced = piece + 1
};

enum class Buffer { Send, Recv, Slot };

struct Place {
  Buffer buffer = Buffer::Send;
  int rank = 0;       // whose slot (Buffer::Slot)
  size_t offset = 0;  // elements from the start of sendbuf, recvbuf or the slot's buffer
};

struct Step {
  StepKind kind = StepKind::Sync;
  int peer = 0;        // WaitArrived, WaitReduced
  Place dst, src;      // Copy, Reduce (src.buffer is Slot and src.rank unused for Reduce)
  size_t count = 0;    // Copy, Reduce
  bool scaled = false;  // Copy of this rank's input: scale it for a pre-multiplied sum
};

// One call as the schedule sees it, the same on every rank but for `rank`. count is per rank:
// the vector (allreduce, reduce, broadcast), recvcount (reduce_scatter) or sendcount (allgather).
struct IpcCall {
  Collective collective = Collective::Allreduce;
  int n = 2;
  int rank = 0;
  int root = 0;            // reduce, broadcast
  size_t count = 0;
  size_t elem = 4;         // bytes per element (parts are cut at 64-byte lines)
  size_t slot_elems = 0;   // elements one slot buffer holds (>= n)
  bool in_place = false;   // sendbuf is (inside) recvbuf as the in-place layout of the call
};

// How a call is cut: `pieces` pieces of at most `per_piece` elements of each block (of the
// vector for allreduce, reduce, broadcast), the last one short. For reduce_scatter a slot holds
// the n blocks' ranges of a piece at a stride of per_piece (rounded down to 64-byte lines).
struct IpcPieces {
  size_t per_piece = 0;
  size_t pieces = 0;
};

// The collectives with an IPC schedule: allreduce, reduce, broadcast, reduce_scatter, allgather.
bool has_ipc_schedule(Collective collective);

IpcPieces ipc_pieces(const IpcCall& call);

// Appends the steps of piece k (0 <= k < ipc_pieces(call).pieces) on call.rank to *steps.
void ipc_piece_steps(const IpcCall& call, size_t k, std::vector<Step>* steps);

}  // namespace plexus::comm::device
