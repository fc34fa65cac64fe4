// lane_halving.h - the hierarchical allreduce's lane as recursive halving and doubling: the
// reduce-scatter by recursive halving and the allgather by recursive doubling of R.
// Rabenseifner's allreduce ("Optimization of collective reduction operations", ICCS 2004;
// Thakur, Rabenseifner & Gropp, IJHPCA 19(1), 2005), over a lane group of K members (one rank
// per host), stepped without blocking as hierarchical_pipeline.h's Lane.
//
// Against the lane ring's 2(K-1) steps it takes 2 log2 P (+2) steps for the same 2(P-1)/P of the
// block on the wire, so the cost model (hierarchical_cost.h) picks it where the hosts are many
// and the blocks small (where it prices at most 0.9 of the ring): on 128 p5 hosts a 16 MiB
// allreduce pays 254 lane latencies in the ring.
//
// P = the largest power of two <= K, r = K - P. Member i's place v in the halving (Fold of
// block_exchange.h, the odd member of each pair surviving, as in recursive halving):
//
//   i < 2r, i even:  sits out (v = none); i < 2r, i odd: v = i / 2;   i >= 2r: v = i - r
//
// The block is cut into P near-equal shards (slices.h Blocks); member v ends up owning shard v.
//
//   step 0            (r > 0) member 2j sends its whole block to 2j + 1, which reduces it in
//   steps 1 .. L      reduce-scatter, L = log2 P: in step k (d = P >> k) v keeps the half of its
//                     current range of 2d shards that holds shard v, sends the other half to
//                     v ^ d and reduces the partner's copy of its kept half (received into
//                     staging) into the block; after step L shard v is final (PLX_AVG divides
//                     it, once)
//   steps L+1 .. 2L   allgather: in step L + k (d = 1 << (k - 1)) v sends the d shards it holds
//                     (the aligned run containing shard v) to v ^ d and receives the partner's
//                     in place
//   step 2L + 1       (r > 0) member 2j + 1 sends the final block to 2j
//
//   K = 3 (P = 2, r = 1): 0 -> 1 whole block; 1 <-> 2 halves; 1 <-> 2 halves; 1 -> 0 whole block
//
// Every member numbers the 2L + 2 steps alike (a step with nothing to do for it posts nothing),
// so step t is message index t of the lane's window. Shards of no elements send nothing. Every
// element is reduced once, by its owner, so every member holds the same bits.
#pragma once

#include <cstddef>

#include "comm/algorithms/block_exchange.h"
#include "comm/algorithms/group_ring.h"
#include "comm/algorithms/hierarchical_pipeline.h"
#include "comm/transport/transport.h"
#include "plexus/plexus.h"

namespace plexus::comm {

class LaneHalving final : public Lane {
 public:
  LaneHalving(Transport& transport, const TagWindow& window, const LaneBlock& lane,
              StagingPool* pool = nullptr);

  // Steps (messages each way) of a lane of k members: 2 log2 P + 2.
  static size_t steps_for(size_t k);

 private:
  plx_result_t post_step() override;
  void complete_step() override;
  // The member at place v of the halving.
  int member_at(size_t v) const;
  // Shards [first, first + n) of the block: where they start, their bytes.
  unsigned char* at(size_t first) const;
  size_t bytes_of(size_t first, size_t n) const;
  // Step k of the reduce-scatter (1..L): the halves of v's current range (block_exchange.h).
  Halving halves(size_t k) const;

  // The fold of the members onto P (block_exchange.h), the odd member of each pair absorbing.
  Fold fold_;
  bool sits_out_;  // folded away
  size_t place_;   // v (0 when sits_out_)
};

}  // namespace plexus::comm
