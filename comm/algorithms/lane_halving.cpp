// lane_halving.cpp - see lane_halving.h.
#include "comm/algorithms/lane_halving.h"

#include "comm/algorithms/slices.h"
#include "comm/reduce/reduce.h"

namespace plexus::comm {

size_t LaneHalving::steps_for(size_t k) {
  return 2 * static_cast<size_t>(Fold(static_cast<int>(k)).steps()) + 2;
}

LaneHalving::LaneHalving(Transport& transport, const TagWindow& window, const LaneBlock& lane,
                         StagingPool* pool)
    : Lane(transport, window, lane, lane.members.size() < 2 ? 0 : steps_for(lane.members.size()),
           lane.count * datatype_bytes(lane.datatype), pool),
      fold_(static_cast<int>(lane.members.size()), Fold::Survivor::Odd),
      sits_out_(fold_.folded_away(static_cast<int>(lane.me))),
      place_(sits_out_ ? 0 : static_cast<size_t>(fold_.vrank(static_cast<int>(lane.me)))) {}

int LaneHalving::member_at(size_t v) const {
  return lane_.members[static_cast<size_t>(fold_.real(static_cast<int>(v)))];
}

unsigned char* LaneHalving::at(size_t first) const {
  return lane_.block + Blocks{lane_.count, static_cast<size_t>(fold_.p)}.begin(first) * elem_;
}

size_t LaneHalving::bytes_of(size_t first, size_t n) const {
  return Blocks{lane_.count, static_cast<size_t>(fold_.p)}.span(first, first + n) * elem_;
}

Halving LaneHalving::halves(size_t k) const {
  const size_t d = static_cast<size_t>(fold_.p) >> k;  // shards in each half
  return halve(place_ & ~(2 * d - 1), place_, d);      // of the current range of 2d shards
}

plx_result_t LaneHalving::post_step() {
  const size_t levels = static_cast<size_t>(fold_.steps());
  const size_t t = step_, last = 2 * levels + 1;
  const int me = static_cast<int>(lane_.me);
  if (t == 0 || t == last) {  // the members outside the halving: their whole block
    if (!sits_out_ && !fold_.absorbs(me)) return PLX_SUCCESS;
    const size_t bytes = lane_.count * elem_;
    const bool gives = (t == 0) == sits_out_;  // step 0: the even one gives; last: the odd one
    const int partner = lane_.members[static_cast<size_t>(fold_.partner(me))];
    if (gives) return post(partner, nullptr, 0, partner, lane_.block, bytes);
    return post(partner, t == 0 ? staging() : lane_.block, bytes, partner, nullptr, 0);
  }
  if (sits_out_) return PLX_SUCCESS;
  if (t <= levels) {  // reduce-scatter, step k = t: keep one half, send the other
    const Halving h = halves(t);
    const size_t d = h.keep_hi - h.keep_lo;
    const int partner = member_at(place_ ^ d);
    return post(partner, staging(), bytes_of(h.keep_lo, d), partner, at(h.give_lo),
                bytes_of(h.give_lo, d));
  }
  const size_t d = size_t{1} << (t - levels - 1);  // allgather: runs of d shards
  const size_t mine = place_ & ~(d - 1), theirs = (place_ ^ d) & ~(d - 1);
  const int partner = member_at(place_ ^ d);
  return post(partner, at(theirs), bytes_of(theirs, d), partner, at(mine), bytes_of(mine, d));
}

void LaneHalving::complete_step() {
  const size_t levels = static_cast<size_t>(fold_.steps());
  const size_t t = step_;
  if (t == 0) {
    if (fold_.absorbs(static_cast<int>(lane_.me))) {
      reduce_into(lane_.block, staging(), lane_.count, lane_.datatype, lane_.op);
    }
    return;
  }
  if (sits_out_ || t > levels) return;
  const Halving h = halves(t);
  const size_t count = bytes_of(h.keep_lo, h.keep_hi - h.keep_lo) / elem_;
  reduce_into(at(h.keep_lo), staging(), count, lane_.datatype, lane_.op);
  if (t == levels && lane_.op == PLX_AVG) {
    divide_by(at(h.keep_lo), count, lane_.datatype, lane_.divisor);
  }
}

}  // namespace plexus::comm
