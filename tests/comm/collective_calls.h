// collective_calls.h - one collective call on one rank, run through the C ABI and checked against
// the closed forms of collective_reference.h: the shared body of the multi-process hierarchical
// tests (hierarchical_test.cpp, over loopback with per-rank host ids) and of the emulated-cluster
// driver (emulated_cluster_driver.cpp, over network namespaces).
//
// Buffers carry one guard element past their end; an in-place call uses NCCL's in-place layout
// (algorithms.h). Every rank must run the same calls in the same order.
#pragma once

#include <cstring>
#include <string>
#include <vector>

#include "plexus/plexus.h"
#include "tests/comm/collective_reference.h"

namespace plexus::test {

inline constexpr unsigned char kCallGuard = 0xa5;

struct Call {
  const char* collective;  // "allreduce", "reduce", "broadcast", "reduce_scatter", "allgather"
  size_t count;            // elements (per rank's block for reduce_scatter and allgather)
  plx_datatype_t dt;
  plx_red_op_t op;
  bool in_place;
  int root;
};

inline std::string describe(const Call& c) {
  return std::string(c.collective) + " count=" + std::to_string(c.count) + " " +
         datatype_name(c.dt) + " " + op_name(c.op) + (c.in_place ? " in-place" : "") +
         " root=" + std::to_string(c.root);
}

inline std::string call_failed(const char* fn, plx_result_t rc, plx_comm_t comm) {
  return std::string(fn) + " returned " + plx_get_error_string(rc) + ": " +
         plx_get_last_error(comm);
}

// Runs `c` on this rank of `comm` and checks its result and the guard; "" or what is wrong.
inline std::string run_call(const Call& c, plx_comm_t comm) {
  int n = 0, r = 0;
  plx_comm_size(comm, &n);
  plx_comm_rank(comm, &r);
  const size_t elem = plx_datatype_size(c.dt), bytes = c.count * elem;
  const std::string name = c.collective;
  std::vector<unsigned char> send, recv;
  plx_result_t rc = PLX_SUCCESS;
  std::string why;
  if (name == "allreduce" || name == "reduce") {
    send.assign(bytes + elem, kCallGuard);
    fill_periodic(send.data(), c.count, elem, input_pattern(c.op, c.dt, r));
    recv = c.in_place ? send : std::vector<unsigned char>(bytes + elem, kCallGuard);
    const void* sbuf = c.in_place ? recv.data() : send.data();
    rc = name == "allreduce"
             ? plx_allreduce(sbuf, recv.data(), c.count, c.dt, c.op, comm, nullptr)
             : plx_reduce(sbuf, recv.data(), c.count, c.dt, c.op, c.root, comm, nullptr);
    if (rc != PLX_SUCCESS) return call_failed(c.collective, rc, comm);
    if (name == "allreduce" || r == c.root) {
      why = check_periodic(recv.data(), c.count, c.dt, expected_pattern(c.op, c.dt, n));
    }
  } else if (name == "broadcast") {
    recv.assign(bytes + elem, kCallGuard);
    if (r == c.root) fill_periodic(recv.data(), c.count, elem, broadcast_pattern(c.dt, c.root));
    rc = plx_broadcast(recv.data(), recv.data(), c.count, c.dt, c.root, comm, nullptr);
    if (rc != PLX_SUCCESS) return call_failed(c.collective, rc, comm);
    why = check_periodic(recv.data(), c.count, c.dt, broadcast_pattern(c.dt, c.root));
  } else if (name == "reduce_scatter") {
    send.assign(n * bytes + elem, kCallGuard);
    fill_periodic(send.data(), n * c.count, elem, input_pattern(c.op, c.dt, r));
    recv.assign(bytes + elem, kCallGuard);
    unsigned char* out = c.in_place ? send.data() + r * bytes : recv.data();
    rc = plx_reduce_scatter(send.data(), out, c.count, c.dt, c.op, comm, nullptr);
    if (rc != PLX_SUCCESS) return call_failed(c.collective, rc, comm);
    why = check_periodic(out, c.count, c.dt,
                         shifted(expected_pattern(c.op, c.dt, n), elem,
                                 r * c.count % input_period(c.op)));
  } else {  // allgather
    recv.assign(n * bytes + elem, kCallGuard);
    send.assign(bytes, 0);
    unsigned char* own = c.in_place ? recv.data() + r * bytes : send.data();
    fill_periodic(own, c.count, elem, broadcast_pattern(c.dt, r));
    rc = plx_allgather(own, recv.data(), c.count, c.dt, comm, nullptr);
    if (rc != PLX_SUCCESS) return call_failed(c.collective, rc, comm);
    for (int g = 0; g < n && why.empty(); ++g) {
      why = check_periodic(recv.data() + g * bytes, c.count, c.dt, broadcast_pattern(c.dt, g));
      if (!why.empty()) why = "block " + std::to_string(g) + " " + why;
    }
  }
  if (why.empty() && !recv.empty() && recv.back() != kCallGuard) why = "wrote past recvbuf";
  return why;
}

}  // namespace plexus::test
