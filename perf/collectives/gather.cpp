// gather.cpp - plexus-bench gather: block j of the root's recv (n blocks of count elements,
// count = the count column) is rank j's send.
//
// Bus bandwidth factor (n-1)/n: the root must receive the n-1 blocks it lacks through its one
// link (nccl-tests); size = the receive buffer. Input: pattern_value(r, i); expected element j
// on the root: pattern_value(j / count, j % count); other ranks are not checked. In place:
// send = recv + r * count (nccl-tests; the root's is the one that matters).
#include <memory>

#include "perf/collectives/collectives.h"

namespace plexus::bench {
namespace {

class Gather final : public Collective {
 public:
  std::string name() const override { return "gather"; }
  bool has_op() const override { return false; }
  bool has_root() const override { return true; }
  double bus_factor(int n) const override { return static_cast<double>(n - 1) / n; }

  size_t count_column(size_t elements, int n) const override { return elements / n; }
  size_t recv_count(const CaseParams& p) const override { return p.count * p.nranks; }
  size_t in_place_send_offset(const CaseParams& p) const override { return p.count * p.rank; }
  size_t checked_count(const CaseParams& p) const override {
    return p.rank == p.root ? recv_count(p) : 0;
  }

  double input(const CaseParams& p, int rank, size_t i) const override {
    return pattern_value(rank, i, p.nranks);
  }
  double expected(const CaseParams& p, size_t j) const override {
    return pattern_value(static_cast<int>(j / p.count), j % p.count, p.nranks);
  }

  plx_result_t run(const void* send, void* recv, const CaseParams& p,
                   plx_comm_t comm) const override {
    return plx_gather(send, recv, p.count, p.datatype, p.root, comm, nullptr);
  }
};

}  // namespace

std::unique_ptr<Collective> make_gather() { return std::make_unique<Gather>(); }

}  // namespace plexus::bench
