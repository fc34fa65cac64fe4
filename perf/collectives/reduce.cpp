// reduce.cpp - plexus-bench reduce: the root's recv[i] = op over ranks of send_r[i].
//
// Bus bandwidth factor 1: all of the message has to reach the root through its one link
// (nccl-tests doc/PERFORMANCE.md). Inputs and expected values: harness/reduction.h; only the
// root's receive buffer is checked. In place: send == recv (nccl-tests).
#include <memory>

#include "perf/collectives/collectives.h"
#include "perf/harness/reduction.h"

namespace plexus::bench {
namespace {

class Reduce final : public Collective {
 public:
  std::string name() const override { return "reduce"; }
  bool has_op() const override { return true; }
  bool has_root() const override { return true; }
  double bus_factor(int) const override { return 1.0; }

  size_t checked_count(const CaseParams& p) const override {
    return p.rank == p.root ? p.count : 0;
  }
  double input(const CaseParams& p, int rank, size_t i) const override {
    return reduction_input(p, rank, i);
  }
  double expected(const CaseParams& p, size_t i) const override {
    return reduction_expected(p, i);
  }

  plx_result_t run(const void* send, void* recv, const CaseParams& p,
                   plx_comm_t comm) const override {
    return plx_reduce(send, recv, p.count, p.datatype, p.op, p.root, comm, nullptr);
  }
};

}  // namespace

std::unique_ptr<Collective> make_reduce() { return std::make_unique<Reduce>(); }

}  // namespace plexus::bench
