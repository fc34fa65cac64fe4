// lane_halving.cpp - see lane_halving.h.
#include "comm/algorithms/lane_halving.h"

#include "comm/algorithms/slices.h"
#include "comm/reduce/reduce.h"

namespace plexus::comm {
namespace {

size_t floor_power_of_two(size_t k) {
  size_t p = 1;
  while (p * 2 <= k) p *= 2;
  return p;
}

size_t log2_of(size_t p) {
  size_t l = 0;
  while ((size_t{1} << l) < p) ++l;
  return l;
}

}  // namespace

size_t LaneHalving::steps_for(size_t k) { return 2 * log2_of(floor_power_of_two(k)) + 2; }

LaneHalving::LaneHalving(Transport& transport, const TagWindow& window, const LaneBlock& lane)
    : Lane(transport, window, lane, lane.members.size() < 2 ? 0 : steps_for(lane.members.size()),
           lane.count * datatype_bytes(lane.datatype)),
      p_(floor_power_of_two(lane.members.size())),
      levels_(log2_of(p_)),
      extra_(lane.members.size() - p_),
      sits_out_(lane.me < 2 * extra_ && lane.me % 2 == 0),
      place_(lane.me < 2 * extra_ ? lane.me / 2 : lane.me - extra_) {}

int LaneHalving::member_at(size_t w) const {
  return lane_.members[w < extra_ ? 2 * w + 1 : w + extra_];
}

unsigned char* LaneHalving::at(size_t first) const {
  return lane_.block + Blocks{lane_.count, p_}.begin(first) * elem_;
}

size_t LaneHalving::bytes_of(size_t first, size_t n) const {
  return Blocks{lane_.count, p_}.span(first, first + n) * elem_;
}

void LaneHalving::halves(size_t k, size_t* kept, size_t* sent) const {
  const size_t d = p_ >> k;                          // shards in each half
  const size_t range = place_ & ~(2 * d - 1);        // the current range of 2d shards
  *kept = range + (place_ & d);
  *sent = range + (~place_ & d);
}

plx_result_t LaneHalving::post_step() {
  const size_t t = step_, last = 2 * levels_ + 1;
  if (t == 0 || t == last) {  // the members outside the halving: their whole block
    const size_t me = lane_.me;
    if (extra_ == 0 || me >= 2 * extra_) return PLX_SUCCESS;
    const size_t bytes = lane_.count * elem_;
    const bool gives = (t == 0) == sits_out_;  // step 0: the even one gives; last: the odd one
    const int partner = lane_.members[sits_out_ ? me + 1 : me - 1];
    if (gives) return post(partner, nullptr, 0, partner, lane_.block, bytes);
    return post(partner, t == 0 ? staging() : lane_.block, bytes, partner, nullptr, 0);
  }
  if (sits_out_) return PLX_SUCCESS;
  if (t <= levels_) {  // reduce-scatter, step k = t: keep one half, send the other
    size_t kept = 0, sent = 0;
    halves(t, &kept, &sent);
    const size_t d = p_ >> t;
    const int partner = member_at(place_ ^ d);
    return post(partner, staging(), bytes_of(kept, d), partner, at(sent), bytes_of(sent, d));
  }
  const size_t d = size_t{1} << (t - levels_ - 1);  // allgather: runs of d shards
  const size_t mine = place_ & ~(d - 1), theirs = (place_ ^ d) & ~(d - 1);
  const int partner = member_at(place_ ^ d);
  return post(partner, at(theirs), bytes_of(theirs, d), partner, at(mine), bytes_of(mine, d));
}

void LaneHalving::complete_step() {
  const size_t t = step_;
  if (t == 0) {
    if (extra_ > 0 && lane_.me < 2 * extra_ && !sits_out_) {
      reduce_into(lane_.block, staging(), lane_.count, lane_.datatype, lane_.op);
    }
    return;
  }
  if (sits_out_ || t > levels_) return;
  size_t kept = 0, sent = 0;
  halves(t, &kept, &sent);
  const size_t d = p_ >> t;
  const size_t count = bytes_of(kept, d) / elem_;
  reduce_into(at(kept), staging(), count, lane_.datatype, lane_.op);
  if (t == levels_ && lane_.op == PLX_AVG) {
    divide_by(at(kept), count, lane_.datatype, lane_.divisor);
  }
}

}  // namespace plexus::comm
