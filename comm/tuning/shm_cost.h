// shm_cost.h - predicted time of the peer-memory (shm) algorithms (comm/algorithms/shm_*.cpp).
//
// They send no messages: per piece (at most kShmPieceBytes of the slot, chunk_bytes, but for
// reduce_scatter; algorithms.h) a rank copies into its own
// staging buffer, waits on its peers' counters, then reduces or copies out of their buffers. The
// model charges each wait one alpha (a futex hand-off costs about what a message's latency on
// the same host does: both are a ping-pong of cache lines, or of context switches when the ranks
// outnumber the cores; a wait through the segment, measured alone, is cheaper than alpha with
// the ranks in step and dearer when they are not, so alpha is kept for both) and each byte moved by a copy kCopyGamma * gamma (a copy streams two
// bytes per byte, a reduction three: gamma is the measured reduction cost per byte), each byte
// reduced gamma. With p ranks, m the vector, blk one rank's block, k the pieces:
//
//   allreduce        2k a + (2/3 (p-1)/p + 2/3 + (p-1)/p) m g
//                                                        copy in the peers' parts, reduce 1/p
//                                                        from p-1, copy out
//   allreduce, one-shot  k a + (2/3 + (p-1)) m g     copy in all of it, reduce p buffers
//                                                    (k counts its pieces; the others' k
//                                                    counts slots: see shm_cost.cpp)
//   reduce           the same as allreduce (the root's share)
//   reduce_scatter   k a + (2/3 p + (p-1)) blk g         stage p blocks' pieces, reduce one
//   allgather        k a + 2/3 p blk g                   stage one block, copy p-1 out
//   broadcast        k a + 2/3 (m + m/k) g               the root stages, the others copy out,
//                                                        one piece behind
//   alltoall         k a + 2/3 (2(p-1) + 1) blk g        stage p-1 blocks, copy p-1 out, one
//                                                        locally; k pieces of the p blocks
//
// Against a ring, whose 2(p-1) steps each pay alpha and move (p-1)/p m over the transport at
// beta, these win from a few kilobytes up wherever the transport's beta is above about 2/3 g.
#pragma once

#include <cstddef>

#include "comm/tuning/algorithm_id.h"

namespace plexus::comm {

constexpr double kCopyGamma = 2.0 / 3.0;

// Seconds of the shm algorithm `algorithm` for `bytes` (cost_model.h's meaning) on `nranks`
// ranks with alpha, gamma and pieces of chunk_bytes; 0 for any other algorithm.
double shm_seconds(AlgorithmId algorithm, double bytes, int nranks, double alpha_s,
                   double gamma_s_per_byte, size_t chunk_bytes);

// The flat algorithm a shm algorithm runs without peer memory (itself for any other).
AlgorithmId shm_fallback(AlgorithmId algorithm);

}  // namespace plexus::comm
