// shm_group.h - the intra-host phases of the hierarchical algorithms (hierarchical_*.cpp)
// through peer memory: reduce-scatter and allgather of a RingGroup's parts (group_ring.h) with
// loads and stores in the host's segment (comm/transport/peer_memory/peer_memory.h) instead of
// messages around a ring through the transport.
//
// The group is the host's ranks in local order, so part p belongs to member p, the segment's
// rank p. Each part's pieces are read as one run of T_p elements (in order). The parts cross
// the slots in rounds: the slot is shared by the parts in proportion to their sizes, part p
// getting w_p = floor((S - L) T_p / T) + 1 elements (S the slot's elements, L members, T the sum;
// 0 for an empty part; rounded down to whole cache lines where that leaves some), at slot offset
// o_p = w_0 + .. + w_{p-1}. Round k carries elements [k w_p, (k+1) w_p) of every part p and takes
// the segment's next piece number g (buffer g % 2 of every slot); max_p ceil(T_p / w_p) rounds.
//
//   slot of member r, round k:   [ part 0 | part 1 | ... | part L-1 ]   (w_p elements each)
//
//   reduce-scatter, round k on member r:
//     1. stage    once its buffer is free again: round k of every part but r's, from piece.in,
//                 into r's slot; publish arrived = g + 1
//     2. reduce   once every member has arrived: round k of part r = r's own piece.in, then
//                 the slots of members r+1, .., r-1, into piece.out (PLX_AVG divides by
//                 `divisor` there when it is nonzero)
//   allgather, round k on member r:
//     1. stage    once its buffer is free again: round k of part r, from piece.out, into r's
//                 slot; publish arrived = g + 1
//     2. gather   for each member q != r, once q has arrived: round k of part q from q's slot
//                 into piece.out
//
// A member reads the buffers of piece g only before it arrives at g + 1, as peer_memory.h
// requires. Each part is reduced by one member, so every member of the host holds the same bits.
// Between rounds, and in every wait, `idle` runs when given: the pipelined hierarchical
// allreduce advances the network rings of its other segments, so the link never waits for the
// host.
//
// In place: piece.in may equal piece.out; a member writes only its own part's out, after every
// member has staged that round, and reads its own in there just before.
//
// Memory traffic per member r, m the group's elements: reduce-scatter (m - T_r) copied in,
// (L-1) T_r read from peers and reduced, T_r written; allgather T_r copied in, m - T_r copied
// out. Two waits per round in the first, L - 1 in the second, no messages.
#pragma once

#include <cstddef>

#include "comm/algorithms/group_ring.h"
#include "comm/transport/peer_memory/peer_memory.h"
#include "plexus/plexus.h"

namespace plexus::comm {

// True when `peers` is the segment of exactly `group`'s members in its order, with this rank at
// group.me, at least two of them, and a slot of at least one element per member: the phases
// below can run. Every member gets the same answer.
bool shm_group_fits(const PeerMemory* peers, const RingGroup& group, plx_datatype_t datatype);

// Reduce-scatter of group's parts (group_ring.h's meaning) through `peers`; `op` the call's op,
// PLX_AVG summed, then divided by `divisor` if nonzero. `name` (e.g. "allreduce:hierarchical")
// starts wait-failure messages. Errors: the waits' (peer_memory.h) or idle's.
plx_result_t shm_group_reduce_scatter(PeerMemory& peers, const RingGroup& group,
                                      plx_datatype_t datatype, plx_red_op_t op, size_t divisor,
                                      const char* name, const IdleWork* idle);

// Allgather of group's parts (group_ring.h's meaning) through `peers`.
plx_result_t shm_group_allgather(PeerMemory& peers, const RingGroup& group,
                                 plx_datatype_t datatype, const char* name,
                                 const IdleWork* idle);

// The intra-host phases as the hierarchical algorithms run them: through `peers` when
// shm_group_fits, else group_ring.h's rings over the transport in `window` (a group of one, or
// no segment: PLEXUS_SHM=0, or it could not be made).
plx_result_t host_reduce_scatter(Transport& transport, const TagWindow& window,
                                 const RingGroup& group, PeerMemory* peers,
                                 plx_datatype_t datatype, plx_red_op_t op, size_t divisor,
                                 size_t chunk_bytes, const char* name, const IdleWork* idle);
plx_result_t host_allgather(Transport& transport, const TagWindow& window, const RingGroup& group,
                            PeerMemory* peers, plx_datatype_t datatype, size_t chunk_bytes,
                            const char* name, const IdleWork* idle);

}  // namespace plexus::comm
