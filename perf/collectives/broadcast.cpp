// broadcast.cpp - plexus-bench broadcast: every rank receives the root's count elements.
//
// Bus bandwidth factor 1: all the data has to leave the root through its one link, so the best
// time is size / B and busbw equals algbw (nccl-tests doc/PERFORMANCE.md). Input:
// pattern_value(root, i) on the root and -1 elsewhere (so an in-place receive buffer that is not
// overwritten is caught); expected: pattern_value(root, i) on every rank.
#include <memory>

#include "perf/collectives/collectives.h"

namespace plexus::bench {
namespace {

class Broadcast final : public Collective {
 public:
  std::string name() const override { return "broadcast"; }
  bool has_op() const override { return false; }
  bool has_root() const override { return true; }
  double bus_factor(int) const override { return 1.0; }

  double input(const CaseParams& p, int rank, size_t i) const override {
    return rank == p.root ? pattern_value(rank, i, p.nranks) : -1.0;
  }

  double expected(const CaseParams& p, size_t i) const override {
    return pattern_value(p.root, i, p.nranks);
  }

  plx_result_t run(const void* send, void* recv, const CaseParams& p,
                   plx_comm_t comm) const override {
    return plx_broadcast(send, recv, p.count, p.datatype, p.root, comm, nullptr);
  }
};

}  // namespace

std::unique_ptr<Collective> make_broadcast() { return std::make_unique<Broadcast>(); }

}  // namespace plexus::bench
