// unit_partition.h - how ZeRO splits a model chunk's parameter units over the data-parallel
// group (Rajbhandari et al., "ZeRO", SC 2020; DeepSpeed's flat partitions, cut per unit).
//
// Each unit u of GptShard::units() (param_units.h) of count_u elements is cut into |D| parts of
// s_u = ceil(count_u / |D|) elements, the last ones padded:
//
//   unit u:   [ part 0 | part 1 | ... | part |D|-1 ][pad]      (|D| * s_u >= count_u)
//               rank 0   rank 1         rank |D|-1
//
// Data rank d owns the elements [d*s_u, min((d+1)*s_u, count_u)) of the unit: `owned` of them,
// s_u or fewer (0 when d*s_u >= count_u). The rank's shard buffers (gradient, AdamW m and v,
// ZeRO-3 parameters) hold its part of every unit, one after the other, each s_u elements long
// (the padding stays 0), so a rank's shard has sum_u s_u elements. A unit occurs with the same
// size wherever it occurs (the first and the last pipeline stage's wte), so its partition is
// the same there too.
//
// Two index spaces name the same element: "full" (an offset in the chunk's flat buffer, as
// params() and grads()) and "shard" (an offset in the rank's shard buffer). With |D| = 1 both
// are equal: one part per unit, no padding.
#pragma once

#include <cstddef>
#include <vector>

#include "engine/model/param_units.h"

namespace plexus::engine {

// One unit's split, seen from one data rank.
struct UnitSlice {
  size_t unit_offset = 0;   // the unit's first element in the chunk's flat buffer
  size_t unit_count = 0;    // count_u
  size_t part = 0;          // s_u = ceil(count_u / |D|): elements of each rank's part
  size_t begin = 0;         // this rank's first element within the unit: min(d*s_u, count_u)
  size_t owned = 0;         // elements this rank owns: min(s_u, count_u - begin)
  size_t shard_offset = 0;  // where the part starts in the rank's shard buffer

  size_t full_begin() const { return unit_offset + begin; }  // first owned element, full space
  // True when the |D| parts tile the unit exactly (no padding): collectives can run in place.
  bool even(int degree) const { return part * static_cast<size_t>(degree) == unit_count; }
};

class UnitPartition {
 public:
  UnitPartition() = default;
  // Splits units (which must tile [0, total) in order, as GptShard::units() does) over `degree`
  // data ranks, seen from rank `rank`. Throws std::invalid_argument naming the argument, its
  // value and the valid range (degree < 1, rank outside 0..degree-1, units with a gap).
  UnitPartition(const std::vector<ParamUnit>& units, int degree, int rank);

  int degree() const { return degree_; }
  int rank() const { return rank_; }
  const std::vector<UnitSlice>& slices() const { return slices_; }
  const UnitSlice& slice(int unit) const { return slices_.at(static_cast<size_t>(unit)); }
  int num_units() const { return static_cast<int>(slices_.size()); }
  // sum_u s_u: the length of the rank's shard buffers, padding included.
  size_t shard_elements() const { return shard_elements_; }
  // sum_u owned: the elements this rank steps.
  size_t owned_elements() const { return owned_elements_; }
  // sum_u count_u: the chunk's parameters.
  size_t total_elements() const { return total_elements_; }
  // The largest s_u * |D| (a padded unit), for staging buffers.
  size_t max_padded_unit() const { return max_padded_unit_; }

 private:
  int degree_ = 1;
  int rank_ = 0;
  std::vector<UnitSlice> slices_;
  size_t shard_elements_ = 0;
  size_t owned_elements_ = 0;
  size_t total_elements_ = 0;
  size_t max_padded_unit_ = 0;
};

}  // namespace plexus::engine
