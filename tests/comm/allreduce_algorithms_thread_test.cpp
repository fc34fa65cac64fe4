// allreduce_algorithms_thread_test.cpp - unit tests of rabenseifner_allreduce,
// recursive_doubling_allreduce and scatter_allgather_broadcast on the in-process transport
// (tests/support/thread_transport.h): ranks are threads.
//
// The case lists run on tests/comm/thread_test_harness.h: a strict transport, so these tests
// also check each algorithm's message protocol. World sizes 1..8 (powers of two and the folded
// non-powers); counts 1, 2, n-1, 1009 (prime) and 2^18+3; chunk_bytes 64 (deep slicing) and 1 MiB
// (one slice); every datatype and op; in place and out of place; guard bytes before and after
// every buffer; sendbuf never modified.
//
// Expected values are the closed forms of tests/comm/collective_reference.h (exact in every
// datatype whatever the reduction order). A separate test feeds inexact float data and checks
// that every rank's result has the same bits, and lies within rounding of a double reference.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "comm/algorithms/algorithms.h"
#include "tests/comm/thread_test_harness.h"

namespace plexus::comm {
namespace {

using namespace plexus::test;  // NOLINT: the harness and reference helpers

enum class Algo { Rabenseifner, RecursiveDoubling, ScatterAllgather };

const char* algo_name(Algo a) {
  return a == Algo::Rabenseifner        ? "rabenseifner_allreduce"
         : a == Algo::RecursiveDoubling ? "recursive_doubling_allreduce"
                                        : "scatter_allgather_broadcast";
}

AlgorithmFn algo_fn(Algo a) {
  return a == Algo::Rabenseifner        ? rabenseifner_allreduce
         : a == Algo::RecursiveDoubling ? recursive_doubling_allreduce
                                        : scatter_allgather_broadcast;
}

struct Case {
  Algo algo;
  size_t count;
  plx_datatype_t dt;
  plx_red_op_t op;  // allreduce only
  bool in_place;
  size_t chunk_bytes;
  int root;  // broadcast only

  CallSpec spec() const { return {count, dt, op, in_place, chunk_bytes, root}; }
  std::string name(int n) const {
    return case_name(algo_name(algo), n, spec(),
                     algo == Algo::ScatterAllgather ? " root=" + std::to_string(root)
                                                    : std::string(" ") + op_name(op));
  }
};

// Runs every case on an n-rank thread world; each rank checks its own results.
void run_cases(int n, const std::vector<Case>& cases, size_t eager_bytes = 0) {
  const auto run = [&](size_t k, Transport& t, uint64_t tag_base) {
    const Case& c = cases[k];
    return c.algo == Algo::ScatterAllgather
               ? check_broadcast(algo_fn(c.algo), c.spec(), t, tag_base)
               : check_allreduce(algo_fn(c.algo), c.spec(), t, tag_base);
  };
  const auto name = [&](size_t k) { return cases[k].name(n); };
  run_case_list(n, cases.size(), run, name, eager_bytes);
}

constexpr size_t kLargeCount = (size_t{1} << 18) + 3;
constexpr size_t kMiB = size_t{1} << 20;

class HalvingDoublingWorld : public ::testing::TestWithParam<int> {};

TEST_P(HalvingDoublingWorld, AllreduceEveryDatatypeOpAndCount) {
  const int n = GetParam();
  std::vector<Case> cases;
  for (Algo algo : {Algo::Rabenseifner, Algo::RecursiveDoubling}) {
    for (size_t count : small_counts(n)) {
      for (int dt = 0; dt < PLX_NUM_DATATYPES; ++dt) {
        for (int op = 0; op < PLX_NUM_OPS; ++op) {
          for (bool in_place : {false, true}) {
            for (size_t chunk : {size_t{64}, kMiB}) {  // many slices per phase; one
              cases.push_back({algo, count, static_cast<plx_datatype_t>(dt),
                               static_cast<plx_red_op_t>(op), in_place, chunk, 0});
            }
          }
        }
      }
    }
    // One element per slice.
    cases.push_back({algo, 1009, PLX_FLOAT64, PLX_SUM, false, 1, 0});
    cases.push_back({algo, 1009, PLX_FLOAT16, PLX_AVG, true, 1, 0});
  }
  run_cases(n, cases);
}

TEST_P(HalvingDoublingWorld, AllreduceLargeCount) {
  const int n = GetParam();
  std::vector<Case> cases;
  for (Algo algo : {Algo::Rabenseifner, Algo::RecursiveDoubling}) {
    cases.push_back({algo, kLargeCount, PLX_FLOAT32, PLX_SUM, false, kMiB, 0});
    cases.push_back({algo, kLargeCount, PLX_BFLOAT16, PLX_AVG, true, kMiB, 0});
    cases.push_back({algo, kLargeCount, PLX_INT64, PLX_MAX, true, kMiB, 0});
    cases.push_back({algo, kLargeCount, PLX_INT8, PLX_PROD, false, 4096, 0});
  }
  cases.push_back({Algo::Rabenseifner, kLargeCount, PLX_UINT8, PLX_SUM, true, 64, 0});
  run_cases(n, cases);
}

TEST_P(HalvingDoublingWorld, BroadcastEveryRootAndCount) {
  const int n = GetParam();
  std::vector<Case> cases;
  for (size_t count : small_counts(n)) {
    for (int root : roots(n)) {
      for (bool in_place : {false, true}) {
        for (size_t chunk : {size_t{64}, kMiB}) {
          for (plx_datatype_t dt : {PLX_INT8, PLX_FLOAT16, PLX_FLOAT64}) {
            cases.push_back({Algo::ScatterAllgather, count, dt, PLX_SUM, in_place, chunk, root});
          }
        }
      }
    }
  }
  for (int dt = 0; dt < PLX_NUM_DATATYPES; ++dt) {
    cases.push_back(
        {Algo::ScatterAllgather, 1009, static_cast<plx_datatype_t>(dt), PLX_SUM, false, 64, 1 % n});
  }
  cases.push_back({Algo::ScatterAllgather, 1009, PLX_INT32, PLX_SUM, true, 1, n - 1});
  cases.push_back({Algo::ScatterAllgather, kLargeCount, PLX_FLOAT16, PLX_SUM, false, 4096, n - 1});
  cases.push_back({Algo::ScatterAllgather, kLargeCount, PLX_UINT8, PLX_SUM, true, 64, n / 2});
  cases.push_back({Algo::ScatterAllgather, kLargeCount, PLX_FLOAT64, PLX_SUM, false, kMiB, 0});
  run_cases(n, cases);
}

TEST_P(HalvingDoublingWorld, CollectivesWithEagerSends) {
  // Eager sends complete at once, so fast ranks run ahead into later phases and later calls:
  // messages arrive before their receives are posted (the unexpected-message path).
  const int n = GetParam();
  std::vector<Case> cases;
  for (plx_datatype_t dt : {PLX_INT32, PLX_FLOAT16, PLX_FLOAT32}) {
    cases.push_back({Algo::Rabenseifner, 1009, dt, PLX_SUM, false, 64, 0});
    cases.push_back({Algo::ScatterAllgather, 1009, dt, PLX_SUM, true, 64, n - 1});
    cases.push_back({Algo::RecursiveDoubling, 1009, dt, PLX_MAX, true, 64, 0});
    cases.push_back({Algo::RecursiveDoubling, 5, dt, PLX_AVG, false, kMiB, 0});
    cases.push_back({Algo::Rabenseifner, 5, dt, PLX_AVG, true, kMiB, 0});
  }
  run_cases(n, cases, /*eager_bytes=*/1 << 16);
}

// Inexact float data (random magnitudes, so the order of the additions matters), and NaNs with a
// different payload on each rank (so the order of the operands matters: MIN/MAX with one NaN
// operand return one operand or the other, a number on one side and NaN on the other if the two
// ends of an exchange disagreed on the order). Every rank must hold exactly the same bits, with
// one exception: where two NaNs with different payloads meet in a sum, the payload that survives
// depends on how the compiler ordered the operands of the commutative +, which may differ between
// the kernel's alignment head and its vector loop; there every rank must hold a NaN. Where no rank
// contributed a NaN, the sum must lie within rounding of the sum computed in double, and MIN/MAX
// must be exact.
float bit_identical_input(int r, size_t i) {
  if ((i + static_cast<size_t>(r)) % 7 == 0) {
    return std::bit_cast<float>(0x7fc00000u | static_cast<uint32_t>(r + 1));  // quiet NaN
  }
  const uint64_t h = (static_cast<uint64_t>(r) * 0x9e3779b97f4a7c15ull + i) * 0xbf58476d1ce4e5b9ull;
  const double mantissa = static_cast<double>(h >> 40) / static_cast<double>(1 << 24) - 0.5;
  return static_cast<float>(std::ldexp(mantissa, static_cast<int>(h % 13) - 6));
}

TEST_P(HalvingDoublingWorld, FloatResultIsBitIdenticalOnEveryRank) {
  const int n = GetParam();
  const size_t count = 3001;
  for (Algo algo : {Algo::Rabenseifner, Algo::RecursiveDoubling}) {
    for (plx_red_op_t op : {PLX_SUM, PLX_MIN, PLX_MAX}) {
      for (size_t chunk : {size_t{64}, kMiB}) {
        const std::string where = std::string(algo_name(algo)) + " n=" + std::to_string(n) + " " +
                                  op_name(op) + " chunk " + std::to_string(chunk);
        std::vector<std::vector<float>> results;
        ASSERT_NO_FATAL_FAILURE(
            run_float_allreduce(algo_fn(algo), n, count, op, chunk, bit_identical_input, &results))
            << where;
        for (size_t i = 0; i < count; ++i) {
          for (int r = 1; r < n; ++r) {
            if (op == PLX_SUM && std::isnan(results[0][i])) {
              ASSERT_TRUE(std::isnan(results[r][i])) << where << " index " << i << ": rank " << r;
              continue;
            }
            ASSERT_EQ(std::bit_cast<uint32_t>(results[r][i]),
                      std::bit_cast<uint32_t>(results[0][i]))
                << where << " index " << i << ": rank " << r << " has " << results[r][i]
                << ", rank 0 has " << results[0][i];
          }
          bool nan = false;
          double sum = 0, magnitude = 0;
          float lowest = INFINITY, highest = -INFINITY;
          for (int r = 0; r < n; ++r) {
            const float x = bit_identical_input(r, i);
            nan = nan || std::isnan(x);
            sum += x;
            magnitude += std::fabs(x);
            lowest = std::min(lowest, x);
            highest = std::max(highest, x);
          }
          if (nan) continue;
          if (op == PLX_SUM) {
            ASSERT_NEAR(results[0][i], sum, magnitude * n * 0x1p-23) << where << " index " << i;
          } else {
            ASSERT_EQ(results[0][i], op == PLX_MIN ? lowest : highest) << where << " index " << i;
          }
        }
      }
    }
  }
}

// A rank that never joins: the others must fail with PLX_ERROR_TIMEOUT and a message naming
// themselves, neither hang nor crash (in-flight requests are abandoned, see pipeline.h).
TEST(HalvingDoublingFailure, MissingRankTimesOut) {
  for (Algo algo : {Algo::Rabenseifner, Algo::RecursiveDoubling, Algo::ScatterAllgather}) {
    for (int n : {3, 4}) {
      expect_missing_rank_times_out({.what = algo_name(algo), .ranks = n, .missing = n - 1},
                                    [&](Transport& t, float* buf, float*) {
                                      CollArgs args;
                                      args.sendbuf = args.recvbuf = buf;
                                      args.count = 1009;
                                      args.chunk_bytes = 64;
                                      return algo_fn(algo)(t, collective_tag_base(1), args);
                                    });
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, HalvingDoublingWorld, ::testing::Range(1, 9), ranks_name);

}  // namespace
}  // namespace plexus::comm
