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
#include "tests/comm/collective_calls.h"
#include "tests/comm/collective_reference.h"

namespace plexus::test {
namespace {


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
    why = run_call(c, comm);
    const char* got = nullptr;
    if (why.empty() && (plx_comm_last_algorithm(comm, &got) != PLX_SUCCESS || got == nullptr ||
                        std::string(got) != std::string(c.collective) + ":" + algorithm)) {
      why = std::string("ran ") + (got ? got : "?") + ", want " + c.collective + ":" + algorithm;
    }
    if (!why.empty()) why = describe(c) + ": " + why;
  }
  const plx_result_t destroyed = plx_comm_destroy(comm);
  if (why.empty() && destroyed != PLX_SUCCESS) {
    why = call_failed("plx_comm_destroy", destroyed, nullptr);
  }
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
