// cost_terms.h - small helpers the cost model's formulas share (cost_model.cpp,
// hierarchical_cost.cpp).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace plexus::comm {

inline int ceil_log2(int p) {
  int steps = 0;
  while ((1LL << steps) < p) ++steps;
  return steps;
}

inline int floor_pow2(int p) {
  int pow2 = 1;
  while (pow2 * 2 <= p) pow2 *= 2;
  return pow2;
}

// Messages a pipelined algorithm cuts `bytes` into: ceil(bytes / chunk_bytes), at least 1.
inline double slices(double bytes, size_t chunk_bytes) {
  if (chunk_bytes == 0 || bytes <= 0) return 1;
  return std::max(1.0, std::ceil(bytes / static_cast<double>(chunk_bytes)));
}

}  // namespace plexus::comm
