// allreduce.cpp - plexus-bench allreduce: recv[i] = op over ranks of send_r[i], on every rank.
//
// Bus bandwidth factor 2(n-1)/n: a ring allreduce sends and receives 2(n-1)/n of the message on
// every link (reduce-scatter then allgather), the lower bound for any algorithm. Inputs and
// expected values: harness/reduction.h. In place: send == recv.
#include <memory>

#include "perf/collectives/collectives.h"
#include "perf/harness/reduction.h"

namespace plexus::bench {
namespace {

class Allreduce final : public Collective {
 public:
  std::string name() const override { return "allreduce"; }
  bool has_op() const override { return true; }
  bool has_root() const override { return false; }
  double bus_factor(int n) const override { return 2.0 * (n - 1) / n; }

  double input(const CaseParams& p, int rank, size_t i) const override {
    return reduction_input(p, rank, i);
  }
  double expected(const CaseParams& p, size_t i) const override {
    return reduction_expected(p, i);
  }

  plx_result_t run(const void* send, void* recv, const CaseParams& p,
                   plx_comm_t comm) const override {
    return plx_allreduce(send, recv, p.count, p.datatype, p.op, comm, nullptr);
  }
};

}  // namespace

std::unique_ptr<Collective> make_allreduce() { return std::make_unique<Allreduce>(); }

}  // namespace plexus::bench
