// shm_pieces.h - what the shared-memory algorithms (shm_*.cpp) share: how a piece is split
// into the ranks' parts, and the reduction of one part over every rank's slot.
//
// A piece is what fits one staging buffer of comm/transport/peer_memory/peer_memory.h; piece g
// uses buffer g % 2 of every slot. Parts are cut in multiples of 64 bytes (a cache line) so that
// two ranks never write the same line; the last parts may be short or empty.
#pragma once

#include <algorithm>
#include <cstddef>

#include "comm/algorithms/algorithms.h"
#include "comm/base/error.h"
#include "comm/reduce/reduce.h"
#include "comm/transport/peer_memory/peer_memory.h"

namespace plexus::comm {

struct PieceSpan {
  size_t begin = 0;  // elements from the piece's start
  size_t count = 0;  // elements
};

// Part `part` of `n` of a piece of `count` elements of `elem` bytes.
inline PieceSpan piece_part(size_t count, int n, int part, size_t elem) {
  const size_t align = std::max<size_t>(1, 64 / elem);
  size_t per = (count + static_cast<size_t>(n) - 1) / static_cast<size_t>(n);
  per = (per + align - 1) / align * align;
  const size_t begin = std::min(count, per * static_cast<size_t>(part));
  return {begin, std::min(count, begin + per) - begin};
}

// One piece of a call: its number g (buffer g % 2 of every slot) and its range of the vector
// (not group_ring.h's Piece, which is one span of a ring group's part).
struct RunPiece {
  uint32_t g = 0;
  size_t begin = 0;  // elements from the vector's start
  size_t count = 0;  // elements, at most the pieces' size
};

// The pieces of one call over `count` elements, at most `per_piece` (>= 1) each, numbered from
// the communicator's next piece number (PeerMemory::next_pieces, which this reserves).
class PieceRun {
 public:
  PieceRun(PeerMemory& peers, size_t count, size_t per_piece)
      : count_(count),
        per_piece_(per_piece),
        size_((count + per_piece - 1) / per_piece),
        first_(peers.next_pieces(static_cast<uint32_t>(size_))) {}
  size_t size() const { return size_; }
  RunPiece operator[](size_t k) const {
    const size_t begin = k * per_piece_;
    return {first_ + static_cast<uint32_t>(k), begin, std::min(per_piece_, count_ - begin)};
  }

 private:
  size_t count_, per_piece_, size_;
  uint32_t first_;
};

// dst = the reduction, in the order r, r+1, .., r-1, of `count` elements: this rank's term
// `mine` (its input, or its own buffer of `piece` at `offset`), then those at byte `offset` of
// every peer's buffer of `piece`. dst may equal mine (it then already holds the first term).
// PLX_AVG divides once by `divisor` at the end when divisor > 0.
inline void reduce_with_peers(void* dst, const void* mine, const PeerMemory& peers,
                              uint32_t piece, size_t offset, size_t count,
                              plx_datatype_t datatype, plx_red_op_t op, size_t divisor) {
  if (count == 0) return;
  const int n = peers.size(), r = peers.rank();
  const unsigned char* next = peers.slot((r + 1) % n, piece) + offset;
  if (dst == mine) {
    reduce_into(dst, next, count, datatype, op);
  } else {
    reduce_copy(dst, mine, next, count, datatype, op);
  }
  for (int j = 2; j < n; ++j) {
    reduce_into(dst, peers.slot((r + j) % n, piece) + offset, count, datatype, op);
  }
  if (op == PLX_AVG && divisor > 0) divide_by(dst, count, datatype, divisor);
}

// reduce_with_peers with this rank's own buffer as its term, averaged over every rank.
inline void reduce_slots(void* dst, const PeerMemory& peers, uint32_t piece, size_t offset,
                         size_t count, plx_datatype_t datatype, plx_red_op_t op) {
  reduce_with_peers(dst, peers.slot(peers.rank(), piece) + offset, peers, piece, offset, count,
                    datatype, op, static_cast<size_t>(peers.size()));
}

// The argument check a call may carry (CollArgs::check: run_task.cpp sets it for the one-host
// shm algorithms on calls under kRegisteredMinBytes). A call of one piece rides it: it posts
// the note with that piece and judges every rank's once all have arrived, before it writes
// recvbuf (ride_or_check gives it `riding`). Any other (more pieces, a registered path, a
// fallback to another algorithm) has it checked apart first, before it reserves a piece of its
// own: the notes in a piece of their own (PeerMemory::exchange_notes), as compare_signatures
// does. Either way every rank consumes the same pieces, whatever the others called.
inline plx_result_t check_apart(PeerMemory& peers, const NoteCheck& check, const char* op) {
  if (peers.size() > kNoteCheckRanks || check.bytes > PeerMemory::kNoteBytes) {
    return set_error(PLX_ERROR_INTERNAL, "an argument check that does not fit the notes");
  }
  alignas(std::max_align_t) unsigned char notes[kNoteCheckRanks * PeerMemory::kNoteBytes];
  PLX_CHECK(peers.exchange_notes(check.note, check.bytes, notes, op,
                                 "arrive at the argument check of piece"));
  return check.verdict(notes, peers.size(), check.context);
}

// The riding check's verdict, once every rank has arrived at `piece` (its first and only).
inline plx_result_t judge_riding(PeerMemory& peers, const NoteCheck& check, uint32_t piece,
                                 const char* op) {
  alignas(std::max_align_t) unsigned char notes[kNoteCheckRanks * PeerMemory::kNoteBytes];
  PLX_CHECK(peers.read_notes(piece, check.bytes, notes, op));
  return check.verdict(notes, peers.size(), check.context);
}

// Arrives at `piece` once this rank has staged it. With a riding check the note goes with it,
// and the call then waits until every rank has arrived and judges all the notes, so that a
// mismatch ends it before it writes recvbuf.
inline plx_result_t arrive_riding(PeerMemory& peers, uint32_t piece, const NoteCheck* riding,
                                  const char* op) {
  if (!riding) {
    peers.arrive(piece);
    return PLX_SUCCESS;
  }
  peers.post_note(piece, riding->note, riding->bytes);
  peers.arrive(piece);
  PLX_CHECK(peers.wait_all_arrived(piece, op));
  return judge_riding(peers, *riding, piece, op);
}

// Before a call reserves its `pieces` pieces (0: it takes another path): *riding = args.check
// when the call can carry it on its single piece; otherwise NULL, after check_apart().
inline plx_result_t ride_or_check(const CollArgs& args, size_t pieces, const char* op,
                                  const NoteCheck** riding) {
  *riding = nullptr;
  if (!args.check) return PLX_SUCCESS;
  if (!args.peers) return set_error(PLX_ERROR_INTERNAL, "an argument check without peer memory");
  if (pieces == 1 && args.peers->size() <= kNoteCheckRanks &&
      args.check->bytes <= PeerMemory::kNoteBytes) {
    *riding = args.check;
    return PLX_SUCCESS;
  }
  return check_apart(*args.peers, *args.check, op);
}

// Pieces of at most per_piece (>= 1) elements that `count` elements take.
inline size_t pieces_of(size_t count, size_t per_piece) {
  return (count + per_piece - 1) / per_piece;
}

// allreduce (root < 0) or reduce to `root` through peer memory: shm_allreduce.cpp.
plx_result_t shm_reduce_pieces(PeerMemory& peers, const CollArgs& args, int root,
                               const char* op_name);

// Allreduce between the ranks' registered buffers (plx_comm_register), with no staging:
// shm_registered_allreduce.cpp (the other collectives': shm_registered.h). Run by every rank of
// `peers` alike on calls of at least kRegisteredMinBytes (registered_worth_trying); *done false
// (on every rank alike) when some rank's buffers are not registered or could not be mapped, and
// the staged path must run.
constexpr size_t kRegisteredMinBytes = size_t{256} << 10;
plx_result_t shm_registered_allreduce(PeerMemory& peers, const CollArgs& args, bool* done);

}  // namespace plexus::comm
