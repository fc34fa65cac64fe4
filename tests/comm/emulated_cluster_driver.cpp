// emulated_cluster_driver.cpp - one rank of the emulated-cluster correctness test
// (emulated_cluster_test.cpp runs it on every rank of scripts/emulated-cluster.sh).
//
// Joins the world with plx_comm_init_from_env (the script's PLEXUS_* variables, one PLEXUS_HOST_ID
// per network namespace), checks that the world's size and the local rank/size match the
// launcher's, then runs allreduce, reduce, broadcast, reduce_scatter and allgather, each at counts
// 1, 1009, 65537 and 2^20, over a rotation of datatypes and ops, in and out of place, with roots
// on every host. Each result is compared element by element with the closed forms of
// tests/comm/collective_reference.h, and plx_comm_last_algorithm must name the algorithm that
// PLEXUS_ALGO forces (the test forces "<collective>:hierarchical"; the driver reads
// PLEXUS_EXPECT_ALGO, default "hierarchical").
//
// Prints "rank R: N calls passed" and exits 0, or prints "rank R: <call>: <what is wrong>"
// (index, value, expected value) and exits 1. The first failure stops the rank.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "plexus/plexus.h"
#include "tests/comm/collective_reference.h"

namespace plexus::test {
namespace {

constexpr unsigned char kGuard = 0xa5;

struct Call {
  const char* collective;
  size_t count;
  plx_datatype_t dt;
  plx_red_op_t op;
  bool in_place;
  int root;
};

std::string describe(const Call& c) {
  return std::string(c.collective) + " count=" + std::to_string(c.count) + " " +
         datatype_name(c.dt) + " " + op_name(c.op) + (c.in_place ? " in-place" : "") +
         " root=" + std::to_string(c.root);
}

// One period of `pattern` starting at element `shift`.
std::vector<unsigned char> shifted(const std::vector<unsigned char>& pattern, size_t elem,
                                   size_t shift) {
  const size_t period = pattern.size() / elem;
  std::vector<unsigned char> out(pattern.size());
  for (size_t i = 0; i < period; ++i) {
    std::memcpy(&out[i * elem], &pattern[((i + shift) % period) * elem], elem);
  }
  return out;
}

std::string failed(const char* fn, plx_result_t rc, plx_comm_t comm) {
  return std::string(fn) + " returned " + plx_get_error_string(rc) + ": " +
         plx_get_last_error(comm);
}

// Runs c on this rank and checks the result; "" or what is wrong.
std::string run_call(const Call& c, plx_comm_t comm, int r, int n) {
  const size_t elem = plx_datatype_size(c.dt), bytes = c.count * elem;
  const std::string name = c.collective;
  std::vector<unsigned char> send, recv;
  std::string why;
  plx_result_t rc = PLX_SUCCESS;
  if (name == "allreduce" || name == "reduce") {
    send.assign(bytes + elem, kGuard);
    fill_periodic(send.data(), c.count, elem, input_pattern(c.op, c.dt, r));
    recv = c.in_place ? send : std::vector<unsigned char>(bytes + elem, kGuard);
    const void* sbuf = c.in_place ? recv.data() : send.data();
    rc = name == "allreduce"
             ? plx_allreduce(sbuf, recv.data(), c.count, c.dt, c.op, comm, nullptr)
             : plx_reduce(sbuf, recv.data(), c.count, c.dt, c.op, c.root, comm, nullptr);
    if (rc != PLX_SUCCESS) return failed(c.collective, rc, comm);
    if (name == "allreduce" || r == c.root) {
      why = check_periodic(recv.data(), c.count, c.dt, expected_pattern(c.op, c.dt, n));
    }
  } else if (name == "broadcast") {
    recv.assign(bytes + elem, kGuard);
    if (r == c.root) fill_periodic(recv.data(), c.count, elem, broadcast_pattern(c.dt, c.root));
    rc = plx_broadcast(recv.data(), recv.data(), c.count, c.dt, c.root, comm, nullptr);
    if (rc != PLX_SUCCESS) return failed(c.collective, rc, comm);
    why = check_periodic(recv.data(), c.count, c.dt, broadcast_pattern(c.dt, c.root));
  } else if (name == "reduce_scatter") {
    send.assign(n * bytes + elem, kGuard);
    fill_periodic(send.data(), n * c.count, elem, input_pattern(c.op, c.dt, r));
    recv.assign(bytes + elem, kGuard);
    unsigned char* out = c.in_place ? send.data() + r * bytes : recv.data();
    rc = plx_reduce_scatter(send.data(), out, c.count, c.dt, c.op, comm, nullptr);
    if (rc != PLX_SUCCESS) return failed(c.collective, rc, comm);
    why = check_periodic(out, c.count, c.dt,
                         shifted(expected_pattern(c.op, c.dt, n), elem,
                                 r * c.count % input_period(c.op)));
  } else {  // allgather
    recv.assign(n * bytes + elem, kGuard);
    send.assign(bytes, 0);
    unsigned char* own = c.in_place ? recv.data() + r * bytes : send.data();
    fill_periodic(own, c.count, elem, broadcast_pattern(c.dt, r));
    rc = plx_allgather(own, recv.data(), c.count, c.dt, comm, nullptr);
    if (rc != PLX_SUCCESS) return failed(c.collective, rc, comm);
    for (int g = 0; g < n && why.empty(); ++g) {
      why = check_periodic(recv.data() + g * bytes, c.count, c.dt, broadcast_pattern(c.dt, g));
      if (!why.empty()) why = "block " + std::to_string(g) + " " + why;
    }
  }
  if (why.empty() && !recv.empty() && recv.back() != kGuard) why = "wrote past recvbuf";
  return why;
}

// Every collective at 4 counts; datatypes, ops, in-place and roots rotate so that each
// collective meets several of each and the roots fall on every host.
std::vector<Call> calls(int n) {
  const plx_datatype_t types[] = {PLX_FLOAT32, PLX_INT32, PLX_BFLOAT16, PLX_FLOAT64, PLX_UINT8};
  const plx_red_op_t ops[] = {PLX_SUM, PLX_AVG, PLX_MAX, PLX_MIN};
  std::vector<Call> out;
  size_t t = 0;
  for (const char* collective :
       {"allreduce", "reduce", "broadcast", "reduce_scatter", "allgather"}) {
    for (size_t count : {size_t{1}, size_t{1009}, size_t{65537}, size_t{1} << 20}) {
      // The largest count in float32 sum, so 4 MiB per rank crosses the links.
      const bool big = count == size_t{1} << 20;
      out.push_back({collective, count, big ? PLX_FLOAT32 : types[t % std::size(types)],
                     big ? PLX_SUM : ops[t % std::size(ops)], t % 2 == 1,
                     static_cast<int>((3 * t + 1) % static_cast<size_t>(n))});
      ++t;
    }
  }
  return out;
}

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atoi(v) : fallback;
}

int run() {
  const int want_n = env_int("PLEXUS_WORLD_SIZE", -1);
  const int want_r = env_int("PLEXUS_RANK", -1);
  plx_comm_t comm = nullptr;
  if (plx_comm_init_from_env(&comm) != PLX_SUCCESS) {
    std::printf("rank %d: plx_comm_init_from_env: %s\n", want_r, plx_get_last_error(nullptr));
    return 1;
  }
  int n = 0, r = 0;
  plx_comm_size(comm, &n);
  plx_comm_rank(comm, &r);
  std::string why;
  if (n != want_n || r != want_r) {
    why = "communicator says rank " + std::to_string(r) + " of " + std::to_string(n) +
          ", launcher " + std::to_string(want_r) + " of " + std::to_string(want_n);
  }
  const char* expect = std::getenv("PLEXUS_EXPECT_ALGO");
  const std::string algorithm = expect != nullptr && *expect != '\0' ? expect : "hierarchical";
  const std::vector<Call> todo = calls(n);
  for (const Call& c : todo) {
    if (!why.empty()) break;
    why = run_call(c, comm, r, n);
    const char* got = nullptr;
    if (why.empty() && (plx_comm_last_algorithm(comm, &got) != PLX_SUCCESS || got == nullptr ||
                        std::string(got) != std::string(c.collective) + ":" + algorithm)) {
      why = std::string("ran ") + (got ? got : "?") + ", want " + c.collective + ":" + algorithm;
    }
    if (!why.empty()) why = describe(c) + ": " + why;
  }
  const plx_result_t destroyed = plx_comm_destroy(comm);
  if (why.empty() && destroyed != PLX_SUCCESS) why = failed("plx_comm_destroy", destroyed, nullptr);
  if (!why.empty()) {
    std::printf("rank %d: %s\n", r, why.c_str());
    return 1;
  }
  std::printf("rank %d: %zu calls passed\n", r, todo.size());
  return 0;
}

}  // namespace
}  // namespace plexus::test

int main() { return plexus::test::run(); }
