// unit_partition.cpp - the per-unit split of a chunk over the data-parallel group (see
// unit_partition.h).
#include "engine/state/unit_partition.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace plexus::engine {

UnitPartition::UnitPartition(const std::vector<ParamUnit>& units, int degree, int rank)
    : degree_(degree), rank_(rank) {
  if (degree < 1) {
    throw std::invalid_argument("UnitPartition: degree " + std::to_string(degree) +
                                " not >= 1 (the data-parallel degree)");
  }
  if (rank < 0 || rank >= degree) {
    throw std::invalid_argument("UnitPartition: rank " + std::to_string(rank) + " not in 0.." +
                                std::to_string(degree - 1));
  }
  const size_t D = static_cast<size_t>(degree), d = static_cast<size_t>(rank);
  for (const ParamUnit& u : units) {
    if (u.offset != total_elements_) {
      throw std::invalid_argument("UnitPartition: unit '" + u.name + "' starts at element " +
                                  std::to_string(u.offset) + ", expected " +
                                  std::to_string(total_elements_) +
                                  " (units must tile the buffer in order)");
    }
    UnitSlice s;
    s.unit_offset = u.offset;
    s.unit_count = u.count;
    s.part = (u.count + D - 1) / D;
    s.begin = std::min(d * s.part, u.count);
    s.owned = std::min(s.part, u.count - s.begin);
    s.shard_offset = shard_elements_;
    slices_.push_back(s);
    shard_elements_ += s.part;
    owned_elements_ += s.owned;
    total_elements_ += u.count;
    max_padded_unit_ = std::max(max_padded_unit_, s.part * D);
  }
}

}  // namespace plexus::engine
