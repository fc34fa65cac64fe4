// tree_reduce_algorithms_thread_test.cpp - unit tests of double_binary_tree_allreduce,
// binomial_reduce and ring_reduce on the in-process transport (tests/support/thread_transport.h):
// ranks are threads.
//
// The case lists run on tests/comm/thread_test_harness.h: a strict transport, so these tests
// also check each algorithm's message protocol. World sizes 1..8; counts 1, 2, n-1, 1009 (prime)
// and 2^18+3; chunk_bytes 64 (deep pipelines), 1 MiB (one slice) and 1 (one element per slice);
// every datatype and op; in place and out of place; reduce at roots 0, n/2 and n-1, with
// non-roots passing a NULL recvbuf or a buffer that must stay untouched.
//
// Inputs and expected values are closed forms, exact in every datatype whatever the reduction
// order (tests/comm/collective_reference.h); a failure names the case, rank and index. The
// double binary tree must also give bit-identical results on every rank for inexact float sums.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "comm/algorithms/algorithms.h"
#include "tests/comm/thread_test_harness.h"

namespace plexus::comm {
namespace {

using namespace plexus::test;  // NOLINT: the harness and reference helpers

enum class Algo { DoubleTree, Binomial, Ring };

struct Case {
  Algo algo;
  size_t count;
  plx_datatype_t dt;
  plx_red_op_t op;
  bool in_place;  // reduce: on the root
  size_t chunk_bytes;
  int root = 0;           // reduce only
  bool null_recv = true;  // reduce only: non-roots pass recvbuf NULL (else a guarded buffer)

  CallSpec spec() const { return {count, dt, op, in_place, chunk_bytes, root}; }
  std::string name(int n) const {
    if (algo == Algo::DoubleTree) {
      return case_name("double_binary_tree_allreduce", n, spec(), std::string(" ") + op_name(op));
    }
    return case_name(algo == Algo::Binomial ? "binomial_reduce" : "ring_reduce", n, spec(),
                     std::string(" ") + op_name(op) + " root=" + std::to_string(root) +
                         (null_recv ? " null-recv" : " guarded-recv"));
  }
};

std::string run_reduce(const Case& c, Transport& t, uint64_t tag_base) {
  const int n = t.size(), r = t.rank();
  const bool root = r == c.root;
  const size_t elem = datatype_bytes(c.dt);
  Guarded send(c.count * elem), recv(c.count * elem);
  fill_periodic(send.data(), c.count, elem, input_pattern(c.op, c.dt, r));
  if (root && c.in_place) recv = send;
  const Guarded original = send;
  CollArgs args = args_of(Collective::Reduce, c.spec());
  args.sendbuf = root && c.in_place ? recv.data() : send.data();
  args.recvbuf = root || !c.null_recv ? recv.data() : nullptr;
  const plx_result_t rc =
      (c.algo == Algo::Binomial ? binomial_reduce : ring_reduce)(t, tag_base, args);
  if (rc != PLX_SUCCESS) return "returned " + std::to_string(rc) + ": " + last_error();
  if (root) {
    const std::string why =
        check_periodic(recv.data(), c.count, c.dt, expected_pattern(c.op, c.dt, n));
    if (!why.empty()) return why;
    if (!recv.guards_intact()) return "wrote outside recvbuf";
  } else if (!recv.untouched()) {
    return "wrote into a non-root recvbuf";
  }
  if (!(send == original)) return "modified sendbuf";
  return "";
}

// Runs every case on an n-rank thread world; each rank checks its own results.
void run_cases(int n, const std::vector<Case>& cases, size_t eager_bytes = 0) {
  const auto run = [&](size_t k, Transport& t, uint64_t tag_base) {
    const Case& c = cases[k];
    return c.algo == Algo::DoubleTree
               ? check_allreduce(double_binary_tree_allreduce, c.spec(), t, tag_base)
               : run_reduce(c, t, tag_base);
  };
  const auto name = [&](size_t k) { return cases[k].name(n); };
  run_case_list(n, cases.size(), run, name, eager_bytes);
}

// Every count, datatype, op and in-place mode at chunk_bytes 64, every datatype and op at 1 MiB,
// and one element per slice; reduce cases rotate through the roots 0, n/2, n-1 and through
// NULL and guarded non-root recvbufs.
std::vector<Case> matrix(Algo algo, int n) {
  const int roots[] = {0, n / 2, n - 1};
  std::vector<Case> cases;
  size_t index = 0;
  const auto add = [&](size_t count, int dt, int op, bool in_place, size_t chunk) {
    const int root = roots[index % 3];
    const bool null_recv = (index / 3) % 2 == 0;
    ++index;
    cases.push_back({algo, count, static_cast<plx_datatype_t>(dt), static_cast<plx_red_op_t>(op),
                     in_place, chunk, root, null_recv});
  };
  for (size_t count : small_counts(n)) {
    for (int dt = 0; dt < PLX_NUM_DATATYPES; ++dt) {
      for (int op = 0; op < PLX_NUM_OPS; ++op) {
        for (bool in_place : {false, true}) add(count, dt, op, in_place, 64);
      }
    }
  }
  for (int dt = 0; dt < PLX_NUM_DATATYPES; ++dt) {
    for (int op = 0; op < PLX_NUM_OPS; ++op) add(1009, dt, op, (dt + op) % 2 == 0, 1 << 20);
  }
  add(1009, PLX_FLOAT64, PLX_SUM, false, 1);  // one element per slice
  add(1009, PLX_INT8, PLX_MIN, true, 1);
  return cases;
}

std::vector<Case> large(Algo algo, int n) {
  const size_t count = (size_t{1} << 18) + 3;
  return {
      {algo, count, PLX_FLOAT32, PLX_SUM, false, 1 << 20, n - 1, true},
      {algo, count, PLX_BFLOAT16, PLX_AVG, true, 4096, n / 2, false},
      {algo, count, PLX_INT8, PLX_MAX, false, 64, 0, true},
  };
}

class TreeReduceWorld : public ::testing::TestWithParam<int> {};

TEST_P(TreeReduceWorld, DoubleBinaryTreeAllreduceEveryDatatypeOpAndCount) {
  run_cases(GetParam(), matrix(Algo::DoubleTree, GetParam()));
}

TEST_P(TreeReduceWorld, BinomialReduceEveryDatatypeOpCountAndRoot) {
  run_cases(GetParam(), matrix(Algo::Binomial, GetParam()));
}

TEST_P(TreeReduceWorld, RingReduceEveryDatatypeOpCountAndRoot) {
  run_cases(GetParam(), matrix(Algo::Ring, GetParam()));
}

TEST_P(TreeReduceWorld, LargeCount) {
  const int n = GetParam();
  std::vector<Case> cases;
  for (Algo algo : {Algo::DoubleTree, Algo::Binomial, Algo::Ring}) {
    for (const Case& c : large(algo, n)) cases.push_back(c);
  }
  run_cases(n, cases);
}

TEST_P(TreeReduceWorld, EagerSendsRunAhead) {
  // Eager sends complete at once, so fast ranks run ahead into later slices and later calls:
  // messages arrive before their receives are posted (the unexpected-message path).
  const int n = GetParam();
  std::vector<Case> cases;
  for (int dt : {PLX_INT32, PLX_FLOAT16, PLX_FLOAT64}) {
    const auto d = static_cast<plx_datatype_t>(dt);
    cases.push_back({Algo::DoubleTree, 1009, d, PLX_SUM, false, 64});
    cases.push_back({Algo::Binomial, 1009, d, PLX_AVG, true, 64, n - 1, true});
    cases.push_back({Algo::Ring, 1009, d, PLX_PROD, false, 64, n / 2, false});
    cases.push_back({Algo::DoubleTree, 5, d, PLX_AVG, true, 64});
  }
  run_cases(n, cases, /*eager_bytes=*/1 << 16);
}

// Inexact float32 sums: the double binary tree must give every rank the root's exact bytes,
// within rounding of a serial double-precision sum.
TEST_P(TreeReduceWorld, DoubleBinaryTreeResultsAreBitIdentical) {
  const int n = GetParam();
  const auto input = [](int r, size_t i) {  // an irregular value in (-1, 1)
    const uint64_t h =
        (static_cast<uint64_t>(r) * 0x9e3779b97f4a7c15ull + i) * 0xbf58476d1ce4e5b9ull;
    return static_cast<float>(static_cast<double>(h >> 11) / 9007199254740992.0 * 2 - 1);
  };
  for (size_t count : {size_t{1009}, size_t{65537}}) {
    for (size_t chunk : {size_t{64}, size_t{1} << 20}) {
      std::vector<std::vector<float>> results;
      ASSERT_NO_FATAL_FAILURE(run_float_allreduce(double_binary_tree_allreduce, n, count, PLX_SUM,
                                                  chunk, input, &results));
      for (int r = 1; r < n; ++r) {
        ASSERT_EQ(std::memcmp(results[r].data(), results[0].data(), count * sizeof(float)), 0)
            << "n=" << n << " count=" << count << " chunk=" << chunk << ": rank " << r
            << " differs from rank 0";
      }
      for (size_t i = 0; i < count; ++i) {
        double sum = 0;
        for (int r = 0; r < n; ++r) sum += input(r, i);
        ASSERT_NEAR(results[0][i], sum, 1e-6 * n) << "n=" << n << " index " << i;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, TreeReduceWorld, ::testing::Range(1, 9), ranks_name);

// A rank that never joins: the ranks that depend on it must fail with PLX_ERROR_TIMEOUT and a
// message naming themselves, neither hang nor crash; a rank that does not depend on it (a leaf
// of the binomial tree whose sends the root takes) may finish.
TEST(TreeReduceFailure, MissingRankTimesOut) {
  struct Call {
    const char* name;
    AlgorithmFn fn;
    int root;
    std::vector<int> may_finish;
  };
  const std::vector<Call> calls = {
      {"double_binary_tree_allreduce", double_binary_tree_allreduce, 0, {}},
      {"binomial_reduce root 0", binomial_reduce, 0, {1}},
      {"binomial_reduce root 2", binomial_reduce, 2, {}},
      {"ring_reduce root 0", ring_reduce, 0, {}},
      {"ring_reduce root 2", ring_reduce, 2, {}},
  };
  for (const Call& call : calls) {
    expect_missing_rank_times_out({.what = call.name, .may_finish = call.may_finish},
                                  [&](Transport& t, float* send, float* recv) {
                                    CollArgs args;
                                    args.sendbuf = send;
                                    args.recvbuf = recv;
                                    args.count = 1009;
                                    args.root = call.root;
                                    args.chunk_bytes = 64;
                                    return call.fn(t, collective_tag_base(1), args);
                                  });
  }
}

}  // namespace
}  // namespace plexus::comm
