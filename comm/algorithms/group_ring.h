// group_ring.h - ring reduce-scatter and ring allgather over a subset of the ranks, with parts
// made of scattered pieces: the steps the hierarchical algorithms (hierarchical_*.cpp) run inside
// a host and along a lane.
//
// A RingGroup is L member ranks in ring order (members[i] sends to members[i+1 mod L]) and L
// parts; part p is a list of pieces, each a contiguous run of elements in this rank's buffers.
// Every member lists the same parts with the same piece counts, each with its own pointers.
//
//   reduce-scatter   part p is reduced over the members and ends at members[p]: piece.in is
//                    this rank's contribution, piece.out (read on members[p] only) where the
//                    result lands. PLX_AVG divides the result by `divisor` there, once.
//   allgather        part p starts at members[p] in its piece.out, and ends in piece.out on
//                    every member.
//
//   members [4 0 2]   parts: 0 = {b0}  1 = {b1}  2 = {b2, b3}     (a part may have several
//   ring    4 -> 0 -> 2 -> 4                                       pieces, or none)
//
// The schedules are those of ring_reduce_scatter.cpp and ring_allgather.cpp (Patarasuk & Yuan,
// JPDC 69(2), 2009): in step t member i sends part (i - t - 1) mod L (reduce-scatter; (i - t)
// for allgather) to i+1, each part cut into S slices, where a piece's slices never span two
// pieces and S is the most slices any part has (shorter parts send empty slices, so both ends
// number messages alike). Message u = k*(L-1) + t carries slice k at step t (slice-major), and
// the primitives are theirs: send, recv_reduce_send, recv_reduce_copy (reduce-scatter);
// send, recv_copy_send, recv (allgather). Bytes on the wire per member: (L-1) parts.
//
// Tags. A hierarchical algorithm runs several such steps in one call; each gets its own
// TagWindow of the call's message indices (tag_base | first .. first+size-1), so no two steps
// share a (peer, tag) pair. Slices are widened until S*(L-1) fits the window.
//
// In place: piece.in may equal piece.out (a reduce-scatter reads each contribution before it
// writes the result there, and writes only its own part's out).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "comm/transport/tag.h"
#include "comm/transport/transport.h"
#include "plexus/plexus.h"

namespace plexus::comm {

struct Piece {
  const unsigned char* in = nullptr;  // this rank's contribution (reduce-scatter only)
  unsigned char* out = nullptr;       // where the result lands / the data lives
  size_t count = 0;                   // elements
};
using Part = std::vector<Piece>;

struct RingGroup {
  std::vector<int> members;  // real ranks, in ring order
  size_t me = 0;             // this rank's index in members
  std::vector<Part> parts;   // one per member
};

// Message indices tag_base | first .. tag_base | (first + size - 1).
struct TagWindow {
  uint64_t tag_base = 0;
  uint64_t first = 0;
  uint64_t size = kTagIndexLimit;
  uint64_t tag(uint64_t u) const { return tag_base | (first + u); }
};

// Window w of `windows` equal windows of the call's index space.
inline TagWindow tag_window(uint64_t tag_base, uint64_t w, uint64_t windows) {
  const uint64_t size = kTagIndexLimit / windows;
  return {tag_base, w * size, size};
}

// Reduce-scatter of the parts over the group (see above). `op` is the call's op; for PLX_AVG
// the result is summed, then divided by `divisor` if it is nonzero. A group of one copies its
// part (in to out, unless they are the same) and divides. Returns the transport's first failure,
// or PLX_ERROR_INTERNAL if the parts' pieces alone overflow the window.
plx_result_t group_reduce_scatter(Transport& transport, const TagWindow& window,
                                  const RingGroup& group, plx_datatype_t datatype,
                                  plx_red_op_t op, size_t divisor, size_t chunk_bytes);

// Allgather of the parts over the group (see above). A group of one does nothing.
plx_result_t group_allgather(Transport& transport, const TagWindow& window,
                             const RingGroup& group, plx_datatype_t datatype, size_t chunk_bytes);

}  // namespace plexus::comm
