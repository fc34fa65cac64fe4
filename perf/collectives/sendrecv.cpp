// sendrecv.cpp - plexus-bench sendrecv, as nccl-tests' sendrecv_perf: every rank sends count
// elements to rank r+1 and receives count elements from rank r-1 (mod n), the send and the
// receive posted together in one plx_group_start/plx_group_end.
//
// Bus bandwidth factor 1: each link carries the whole message once. Input: pattern_value(r, i);
// expected: pattern_value(r-1 mod n, i). In place: send == recv, timed but not checked (#wrong
// N/A), as nccl-tests: the receive into the buffer races with the send out of it.
#include <memory>

#include "perf/collectives/collectives.h"

namespace plexus::bench {
namespace {

class Sendrecv final : public Collective {
 public:
  std::string name() const override { return "sendrecv"; }
  bool has_op() const override { return false; }
  bool has_root() const override { return false; }
  double bus_factor(int) const override { return 1.0; }
  bool in_place_checked() const override { return false; }

  double input(const CaseParams& p, int rank, size_t i) const override {
    return pattern_value(rank, i, p.nranks);
  }
  double expected(const CaseParams& p, size_t i) const override {
    return pattern_value((p.rank + p.nranks - 1) % p.nranks, i, p.nranks);
  }

  plx_result_t run(const void* send, void* recv, const CaseParams& p,
                   plx_comm_t comm) const override {
    const int next = (p.rank + 1) % p.nranks, prev = (p.rank + p.nranks - 1) % p.nranks;
    plx_result_t result = plx_group_start();
    if (result != PLX_SUCCESS) return result;
    // The group must be closed whatever happens inside it; the first failure is returned.
    plx_result_t sent = plx_send(send, p.count, p.datatype, next, comm, nullptr);
    plx_result_t received = plx_recv(recv, p.count, p.datatype, prev, comm, nullptr);
    result = plx_group_end();
    if (sent != PLX_SUCCESS) return sent;
    if (received != PLX_SUCCESS) return received;
    return result;
  }
};

}  // namespace

std::unique_ptr<Collective> make_sendrecv() { return std::make_unique<Sendrecv>(); }

}  // namespace plexus::bench
