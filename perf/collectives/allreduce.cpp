// allreduce.cpp - plexus-bench allreduce: recv[i] = op over ranks of send_r[i], on every rank.
//
// Bus bandwidth factor 2(n-1)/n: a ring allreduce sends and receives 2(n-1)/n of the message on
// every link (reduce-scatter then allgather), the lower bound for any algorithm.
// Inputs: for prod, rank i%n contributes 1 + i%3 and every other rank 1, so the product is
// 1 + i%3 and no datatype overflows; for the other ops, pattern_value(r, i). Expected values
// fold the same inputs in serial: exact in every datatype for sum, prod, min and max; avg is
// the exact sum divided by n, rounded to the datatype (integers truncate, as NCCL).
#include <cmath>
#include <memory>

#include "perf/collectives/collectives.h"
#include "perf/harness/values.h"

namespace plexus::bench {
namespace {

class Allreduce final : public Collective {
 public:
  std::string name() const override { return "allreduce"; }
  bool has_op() const override { return true; }
  bool has_root() const override { return false; }
  double bus_factor(int n) const override { return 2.0 * (n - 1) / n; }

  double input(const CaseParams& p, int rank, size_t i) const override {
    if (p.op == PLX_PROD) {
      return static_cast<size_t>(rank) == i % p.nranks ? 1.0 + static_cast<double>(i % 3) : 1.0;
    }
    return pattern_value(rank, i, p.nranks);
  }

  double expected(const CaseParams& p, size_t i) const override {
    double acc = input(p, 0, i);
    for (int r = 1; r < p.nranks; ++r) {
      double v = input(p, r, i);
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

  plx_result_t run(const void* send, void* recv, const CaseParams& p,
                   plx_comm_t comm) const override {
    return plx_allreduce(send, recv, p.count, p.datatype, p.op, comm, nullptr);
  }
};

}  // namespace

std::unique_ptr<Collective> make_allreduce() { return std::make_unique<Allreduce>(); }

}  // namespace plexus::bench
