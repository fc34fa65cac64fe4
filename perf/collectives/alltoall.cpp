// alltoall.cpp - plexus-bench alltoall: block j of rank r's send (n blocks of count elements,
// count = the count column) lands in block r of rank j's recv.
//
// Bus bandwidth factor (n-1)/n: each rank must send and receive the n-1 blocks that are not its
// own (nccl-tests doc/PERFORMANCE.md); size = one rank's buffer. Input: pattern_value(r, i);
// expected element j of rank r: pattern_value(j / count, r * count + j % count). In place:
// send == recv (nccl-tests).
#include <memory>

#include "perf/collectives/collectives.h"

namespace plexus::bench {
namespace {

class Alltoall final : public Collective {
 public:
  std::string name() const override { return "alltoall"; }
  bool has_op() const override { return false; }
  bool has_root() const override { return false; }
  double bus_factor(int n) const override { return static_cast<double>(n - 1) / n; }

  size_t count_column(size_t elements, int n) const override { return elements / n; }
  size_t send_count(const CaseParams& p) const override { return p.count * p.nranks; }
  size_t recv_count(const CaseParams& p) const override { return p.count * p.nranks; }

  double input(const CaseParams& p, int rank, size_t i) const override {
    return pattern_value(rank, i, p.nranks);
  }
  double expected(const CaseParams& p, size_t j) const override {
    return pattern_value(static_cast<int>(j / p.count), p.count * p.rank + j % p.count,
                         p.nranks);
  }

  plx_result_t run(const void* send, void* recv, const CaseParams& p,
                   plx_comm_t comm) const override {
    return plx_alltoall(send, recv, p.count, p.datatype, comm, nullptr);
  }
};

}  // namespace

std::unique_ptr<Collective> make_alltoall() { return std::make_unique<Alltoall>(); }

}  // namespace plexus::bench
