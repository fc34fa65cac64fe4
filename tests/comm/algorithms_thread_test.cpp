// algorithms_thread_test.cpp - unit tests of ring_allreduce, broadcast and dissemination_barrier
// on an in-process transport (tests/support/thread_transport.h): ranks are threads.
//
// The case lists run on tests/comm/thread_test_harness.h: a strict transport, so these tests also
// check the message protocol of each algorithm. World sizes 1..7; counts 0, 1, 2, n-1, 1009
// (prime) and 2^20+3; chunk_bytes 64 (deep pipelines), 1 (one element per slice) and 1 MiB (one
// slice); every datatype and op; in place and out of place. Inputs and expected values are
// closed forms, exact in every datatype whatever the reduction order
// (tests/comm/collective_reference.h); a failure names the case, rank and index.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "comm/algorithms/algorithms.h"
#include "comm/reduce/reduce.h"
#include "tests/comm/thread_test_harness.h"

namespace plexus::comm {
namespace {

using namespace plexus::test;  // NOLINT: the harness and reference helpers

enum class Kind { Allreduce, Broadcast, Barrier };

struct Case {
  Kind kind;
  size_t count;
  plx_datatype_t dt;
  plx_red_op_t op;
  bool in_place;
  size_t chunk_bytes;
  int root;

  CallSpec spec() const { return {count, dt, op, in_place, chunk_bytes, root}; }
  std::string name(int n) const {
    switch (kind) {
      case Kind::Allreduce:
        return case_name("allreduce", n, spec(), std::string(" ") + op_name(op));
      case Kind::Broadcast:
        return case_name("broadcast", n, spec(), " root=" + std::to_string(root));
      case Kind::Barrier:
        break;
    }
    return case_name("barrier", n, spec(), "");
  }
};

// The broadcast below chunk_bytes is the binomial tree, above it the chain.
plx_result_t broadcast(Transport& t, uint64_t tag_base, const CollArgs& args) {
  const size_t bytes = args.count * datatype_bytes(args.datatype);
  return (bytes < args.chunk_bytes ? binomial_broadcast : chain_broadcast)(t, tag_base, args);
}

// Runs every case on an n-rank thread world; each rank checks its own results.
void run_cases(int n, const std::vector<Case>& cases, size_t eager_bytes = 0) {
  // Barrier check: every rank bumps arrivals[k] just before barrier k and, once out of it,
  // must see all n arrivals.
  std::vector<std::atomic<int>> arrivals(cases.size());
  const auto run = [&](size_t k, Transport& t, uint64_t tag_base) -> std::string {
    const Case& c = cases[k];
    if (c.kind == Kind::Allreduce) return check_allreduce(ring_allreduce, c.spec(), t, tag_base);
    if (c.kind == Kind::Broadcast) return check_broadcast(broadcast, c.spec(), t, tag_base);
    if ((t.rank() + k) % 3 == 0) std::this_thread::yield();  // vary the arrival order
    arrivals[k].fetch_add(1);
    const plx_result_t rc = dissemination_barrier(t, tag_base, CollArgs{});
    if (rc != PLX_SUCCESS) return "returned " + std::to_string(rc);
    if (arrivals[k].load() != n) {
      return "left the barrier after " + std::to_string(arrivals[k].load()) + " arrivals";
    }
    return "";
  };
  const auto name = [&](size_t k) { return cases[k].name(n); };
  run_case_list(n, cases.size(), run, name, eager_bytes);
}

// small_counts(n), and 0.
std::vector<size_t> counts_and_zero(int n) {
  std::vector<size_t> counts = small_counts(n);
  counts.insert(counts.begin(), 0);
  return counts;
}

class WorldSize : public ::testing::TestWithParam<int> {};

TEST_P(WorldSize, AllreduceEveryDatatypeOpAndCount) {
  const int n = GetParam();
  std::vector<Case> cases;
  for (size_t count : counts_and_zero(n)) {
    for (int dt = 0; dt < PLX_NUM_DATATYPES; ++dt) {
      for (int op = 0; op < PLX_NUM_OPS; ++op) {
        for (bool in_place : {false, true}) {
          cases.push_back({Kind::Allreduce, count, static_cast<plx_datatype_t>(dt),
                           static_cast<plx_red_op_t>(op), in_place, 64, 0});
        }
      }
    }
  }
  // One element per slice, and one slice per segment.
  cases.push_back({Kind::Allreduce, 1009, PLX_FLOAT64, PLX_SUM, false, 1, 0});
  cases.push_back({Kind::Allreduce, 1009, PLX_FLOAT16, PLX_AVG, true, 1 << 20, 0});
  cases.push_back({Kind::Allreduce, 1009, PLX_INT8, PLX_PROD, false, 1 << 20, 0});
  run_cases(n, cases);
}

TEST_P(WorldSize, AllreduceLargeCount) {
  const int n = GetParam();
  const size_t count = (size_t{1} << 20) + 3;
  std::vector<Case> cases = {
      {Kind::Allreduce, count, PLX_FLOAT32, PLX_SUM, false, 4096, 0},
      {Kind::Allreduce, count, PLX_FLOAT32, PLX_SUM, true, 1 << 20, 0},
      {Kind::Allreduce, count, PLX_BFLOAT16, PLX_AVG, true, 4096, 0},
      {Kind::Allreduce, count, PLX_INT32, PLX_MAX, false, 65536, 0},
  };
  run_cases(n, cases);
}

TEST_P(WorldSize, BroadcastEveryRootAndCount) {
  const int n = GetParam();
  std::vector<Case> cases;
  for (size_t count : counts_and_zero(n)) {
    for (int root : roots(n)) {
      for (bool in_place : {false, true}) {
        // chunk 64: the tree below 64 bytes, the chain above; 1 MiB: always the tree here.
        for (size_t chunk : {size_t{64}, size_t{1} << 20}) {
          for (plx_datatype_t dt : {PLX_INT8, PLX_FLOAT16, PLX_FLOAT64}) {
            cases.push_back({Kind::Broadcast, count, dt, PLX_SUM, in_place, chunk, root});
          }
        }
      }
    }
  }
  const size_t large = (size_t{1} << 20) + 3;
  cases.push_back({Kind::Broadcast, large, PLX_FLOAT16, PLX_SUM, false, 4096, n - 1});
  cases.push_back({Kind::Broadcast, large, PLX_FLOAT16, PLX_SUM, true, 4096, n / 2});
  cases.push_back({Kind::Broadcast, large, PLX_FLOAT64, PLX_SUM, false, 1 << 20, 0});
  run_cases(n, cases);
}

TEST_P(WorldSize, BarrierWaitsForEveryRank) {
  const int n = GetParam();
  std::vector<Case> cases(20, Case{Kind::Barrier, 0, PLX_INT8, PLX_SUM, false, 0, 0});
  run_cases(n, cases);
}

TEST_P(WorldSize, CollectivesInterleavedWithEagerSends) {
  // Eager sends complete at once, so fast ranks run ahead into later steps and later calls:
  // messages arrive before their receives are posted (the unexpected-message path).
  const int n = GetParam();
  std::vector<Case> cases;
  for (int dt : {PLX_INT32, PLX_FLOAT16, PLX_FLOAT32}) {
    cases.push_back(
        {Kind::Allreduce, 1009, static_cast<plx_datatype_t>(dt), PLX_SUM, false, 64, 0});
    cases.push_back({Kind::Barrier, 0, PLX_INT8, PLX_SUM, false, 0, 0});
    cases.push_back(
        {Kind::Broadcast, 1009, static_cast<plx_datatype_t>(dt), PLX_SUM, true, 64, n - 1});
    cases.push_back({Kind::Allreduce, 5, static_cast<plx_datatype_t>(dt), PLX_AVG, true, 64, 0});
  }
  run_cases(n, cases, /*eager_bytes=*/1 << 16);
}

// A rank that never joins: the others must fail with PLX_ERROR_TIMEOUT and a message naming
// themselves, neither hang nor crash (their in-flight requests are abandoned, see pipeline.h).
TEST(AlgorithmFailure, MissingRankTimesOut) {
  expect_missing_rank_times_out({.what = "ring_allreduce"}, [](Transport& t, float* buf, float*) {
    CollArgs args;
    args.sendbuf = args.recvbuf = buf;
    args.count = 1009;
    args.chunk_bytes = 64;
    return ring_allreduce(t, collective_tag_base(1), args);
  });
  expect_missing_rank_times_out({.what = "chain_broadcast from the missing rank"},
                                [](Transport& t, float*, float* recv) {
                                  CollArgs args;
                                  args.recvbuf = recv;
                                  args.count = 1009;
                                  args.root = 2;
                                  args.chunk_bytes = 64;
                                  return chain_broadcast(t, collective_tag_base(1), args);
                                });
  expect_missing_rank_times_out(
      {.what = "dissemination_barrier"}, [](Transport& t, float*, float*) {
        return dissemination_barrier(t, collective_tag_base(1), CollArgs{});
      });
}

INSTANTIATE_TEST_SUITE_P(Ranks, WorldSize, ::testing::Range(1, 8), ranks_name);

}  // namespace
}  // namespace plexus::comm
