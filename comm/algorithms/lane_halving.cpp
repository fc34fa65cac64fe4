// lane_halving.cpp - see lane_halving.h.
#include "comm/algorithms/lane_halving.h"

#include <utility>

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

LaneHalving::LaneHalving(Transport& transport, const TagWindow& window,
                         std::vector<int> members, size_t me, unsigned char* block, size_t count,
                         plx_datatype_t datatype, plx_red_op_t op, size_t divisor)
    : Lane(transport, window, members.size() < 2 ? 0 : steps_for(members.size()),
           count * datatype_bytes(datatype)),
      members_(std::move(members)),
      me_(me),
      block_(block),
      count_(count),
      datatype_(datatype),
      op_(op),
      divisor_(divisor),
      elem_(datatype_bytes(datatype)),
      p_(floor_power_of_two(members_.size())),
      levels_(log2_of(p_)),
      extra_(members_.size() - p_),
      sits_out_(me_ < 2 * extra_ && me_ % 2 == 0),
      place_(me_ < 2 * extra_ ? me_ / 2 : me_ - extra_) {}

int LaneHalving::member_at(size_t w) const {
  return members_[w < extra_ ? 2 * w + 1 : w + extra_];
}

unsigned char* LaneHalving::at(size_t first) const {
  return block_ + Blocks{count_, p_}.begin(first) * elem_;
}

size_t LaneHalving::bytes_of(size_t first, size_t n) const {
  return Blocks{count_, p_}.span(first, first + n) * elem_;
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
    if (extra_ == 0 || me_ >= 2 * extra_) return PLX_SUCCESS;
    const size_t bytes = count_ * elem_;
    const bool gives = (t == 0) == sits_out_;  // step 0: the even one gives; last: the odd one
    const int partner = members_[sits_out_ ? me_ + 1 : me_ - 1];
    if (gives) return post(partner, nullptr, 0, partner, block_, bytes);
    return post(partner, t == 0 ? staging() : block_, bytes, partner, nullptr, 0);
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
    if (extra_ > 0 && me_ < 2 * extra_ && !sits_out_) {
      reduce_into(block_, staging(), count_, datatype_, op_);
    }
    return;
  }
  if (sits_out_ || t > levels_) return;
  size_t kept = 0, sent = 0;
  halves(t, &kept, &sent);
  const size_t d = p_ >> t;
  const size_t count = bytes_of(kept, d) / elem_;
  reduce_into(at(kept), staging(), count, datatype_, op_);
  if (t == levels_ && op_ == PLX_AVG) divide_by(at(kept), count, datatype_, divisor_);
}

}  // namespace plexus::comm
