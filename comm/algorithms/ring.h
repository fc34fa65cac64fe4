// ring.h - the ring of the ring algorithms: rank r sends to r+1 and receives from r-1 (mod n),
// and at every step passes on the block it received at the step before.
//
//   step t:  send block (first - t) mod n to r+1,  receive block (first - t - 1) mod n from r-1
//
//   n = 4, first = r:   r0 -> r1 -> r2 -> r3 -> r0     step 0: r0 sends block 0, receives block 3
//                                                      step 1: r0 sends block 3, receives block 2
//
// `first`, the block a rank sends at step 0, decides where the blocks end: first = r moves every
// block from its owner to all the others in n-1 steps (allgather, and Patarasuk & Yuan's allreduce,
// whose reduce-scatter then leaves block r+1 on rank r); first = r-1 brings every block to its
// owner in n-1 steps (reduce-scatter). Used by ring_allreduce.cpp, ring_reduce_scatter.cpp,
// ring_allgather.cpp, ring_reduce.cpp and scatter_allgather_broadcast.cpp.
#pragma once

#include <cstddef>

namespace plexus::comm {

struct Ring {
  size_t n;
  size_t r;      // this rank, in the ring's numbering
  size_t first;  // the block this rank sends at step 0

  int next() const { return static_cast<int>((r + 1) % n); }
  int prev() const { return static_cast<int>((r + n - 1) % n); }
  size_t send_block(size_t t) const { return (first + n - t % n) % n; }
  size_t recv_block(size_t t) const { return send_block(t + 1); }
};

}  // namespace plexus::comm
