// allgather.cpp - plexus-bench allgather: block j of every rank's recv (n blocks of count
// elements, count = the count column) is rank j's send.
//
// Bus bandwidth factor (n-1)/n: each rank must receive the n-1 blocks it lacks (nccl-tests
// doc/PERFORMANCE.md); size = the receive buffer. Input: pattern_value(r, i); expected element
// j: pattern_value(j / count, j % count). In place: send = recv + r * count (nccl-tests).
#include <memory>

#include "perf/collectives/collectives.h"

namespace plexus::bench {
namespace {

class Allgather final : public Collective {
 public:
  std::string name() const override { return "allgather"; }
  bool has_op() const override { return false; }
  bool has_root() const override { return false; }
  double bus_factor(int n) const override { return static_cast<double>(n - 1) / n; }

  size_t count_column(size_t elements, int n) const override { return elements / n; }
  size_t recv_count(const CaseParams& p) const override { return p.count * p.nranks; }
  size_t in_place_send_offset(const CaseParams& p) const override { return p.count * p.rank; }

  double input(const CaseParams& p, int rank, size_t i) const override {
    return pattern_value(rank, i, p.nranks);
  }
  double expected(const CaseParams& p, size_t j) const override {
    return pattern_value(static_cast<int>(j / p.count), j % p.count, p.nranks);
  }

  plx_result_t run(const void* send, void* recv, const CaseParams& p,
                   plx_comm_t comm) const override {
    return plx_allgather(send, recv, p.count, p.datatype, comm, nullptr);
  }
};

}  // namespace

std::unique_ptr<Collective> make_allgather() { return std::make_unique<Allgather>(); }

}  // namespace plexus::bench
