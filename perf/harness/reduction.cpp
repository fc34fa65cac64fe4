#include "perf/harness/reduction.h"

#include <cmath>

#include "perf/harness/values.h"

namespace plexus::bench {

double reduction_input(const CaseParams& p, int rank, size_t i) {
  if (p.op == PLX_PROD) {
    return static_cast<size_t>(rank) == i % p.nranks ? 1.0 + static_cast<double>(i % 3) : 1.0;
  }
  return pattern_value(rank, i, p.nranks);
}

double reduction_expected(const CaseParams& p, size_t i) {
  double acc = reduction_input(p, 0, i);
  for (int r = 1; r < p.nranks; ++r) {
    const double v = reduction_input(p, r, i);
    switch (p.op) {
      case PLX_PROD: acc *= v; break;
      case PLX_MIN: acc = std::fmin(acc, v); break;
      case PLX_MAX: acc = std::fmax(acc, v); break;
      default: acc += v; break;  // PLX_SUM, PLX_AVG
    }
  }
  if (p.op != PLX_AVG) return acc;
  return is_float_type(p.datatype) ? acc / p.nranks : std::trunc(acc / p.nranks);
}

}  // namespace plexus::bench
