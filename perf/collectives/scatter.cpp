// scatter.cpp - plexus-bench scatter: block r of the root's send (n blocks of count elements,
// count = the count column) lands in rank r's recv.
//
// Bus bandwidth factor (n-1)/n: the root must send the n-1 blocks that are not its own through
// its one link (nccl-tests); size = the root's send buffer. Input: pattern_value(root, i) on the
// root and -1 elsewhere (so an in-place receive that is not overwritten is caught); expected
// element i of rank r: pattern_value(root, r * count + i). In place: recv = send + r * count
// (nccl-tests).
#include <memory>

#include "perf/collectives/collectives.h"

namespace plexus::bench {
namespace {

class Scatter final : public Collective {
 public:
  std::string name() const override { return "scatter"; }
  bool has_op() const override { return false; }
  bool has_root() const override { return true; }
  double bus_factor(int n) const override { return static_cast<double>(n - 1) / n; }

  size_t count_column(size_t elements, int n) const override { return elements / n; }
  size_t send_count(const CaseParams& p) const override { return p.count * p.nranks; }
  size_t in_place_recv_offset(const CaseParams& p) const override { return p.count * p.rank; }

  double input(const CaseParams& p, int rank, size_t i) const override {
    return rank == p.root ? pattern_value(rank, i, p.nranks) : -1.0;
  }
  double expected(const CaseParams& p, size_t i) const override {
    return pattern_value(p.root, p.count * p.rank + i, p.nranks);
  }

  plx_result_t run(const void* send, void* recv, const CaseParams& p,
                   plx_comm_t comm) const override {
    return plx_scatter(send, recv, p.count, p.datatype, p.root, comm, nullptr);
  }
};

}  // namespace

std::unique_ptr<Collective> make_scatter() { return std::make_unique<Scatter>(); }

}  // namespace plexus::bench
