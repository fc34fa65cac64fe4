// reduce_scatter.cpp - plexus-bench reduce_scatter: rank r's recv[i] = op over ranks of
// send[r * count + i]; each send buffer holds n * count elements, count = the count column.
//
// Bus bandwidth factor (n-1)/n: each rank must receive (n-1)/n of the n * count elements it
// reduces (nccl-tests doc/PERFORMANCE.md); size = the send buffer. Inputs and expected values:
// harness/reduction.h at the send index. In place: recv = send + r * count (nccl-tests).
#include <memory>

#include "perf/collectives/collectives.h"
#include "perf/harness/reduction.h"

namespace plexus::bench {
namespace {

class ReduceScatter final : public Collective {
 public:
  std::string name() const override { return "reduce_scatter"; }
  bool has_op() const override { return true; }
  bool has_root() const override { return false; }
  double bus_factor(int n) const override { return static_cast<double>(n - 1) / n; }

  size_t count_column(size_t elements, int n) const override { return elements / n; }
  size_t send_count(const CaseParams& p) const override { return p.count * p.nranks; }
  size_t in_place_recv_offset(const CaseParams& p) const override { return p.count * p.rank; }

  double input(const CaseParams& p, int rank, size_t i) const override {
    return reduction_input(p, rank, i);
  }
  double expected(const CaseParams& p, size_t i) const override {
    return reduction_expected(p, p.count * p.rank + i);
  }

  plx_result_t run(const void* send, void* recv, const CaseParams& p,
                   plx_comm_t comm) const override {
    return plx_reduce_scatter(send, recv, p.count, p.datatype, p.op, comm, nullptr);
  }
};

}  // namespace

std::unique_ptr<Collective> make_reduce_scatter() { return std::make_unique<ReduceScatter>(); }

}  // namespace plexus::bench
