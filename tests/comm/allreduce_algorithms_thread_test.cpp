// allreduce_algorithms_thread_test.cpp - unit tests of rabenseifner_allreduce,
// recursive_doubling_allreduce and scatter_allgather_broadcast on the in-process transport
// (tests/support/thread_transport.h): ranks are threads.
//
// The thread transport is strict (rendezvous sends, exact receive sizes, unique tags, nothing
// left unmatched), so these tests also check each algorithm's message protocol. World sizes
// 1..8 (powers of two and the folded non-powers); counts 1, 2, n-1, 1009 (prime) and 2^18+3;
// chunk_bytes 64 (deep slicing) and 1 MiB (one slice); every datatype and op; in place and out of
// place; guard bytes before and after every buffer; sendbuf never modified. Each world runs its
// list of cases in one launch of its rank threads, one collective per case with tag_base =
// collective_tag_base(case number), as a communicator would.
//
// Expected values are the closed forms of tests/comm/collective_reference.h (exact in every
// datatype whatever the reduction order). A separate test feeds inexact float data and checks
// that every rank's result has the same bits, and lies within rounding of a double reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "comm/algorithms/algorithms.h"
#include "comm/core/error.h"
#include "comm/reduce/half.h"
#include "comm/reduce/reduce.h"
#include "tests/comm/collective_reference.h"
#include "tests/support/thread_transport.h"

namespace plexus::comm {
namespace {

using namespace plexus::test;  // NOLINT: the reference helpers

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

  std::string name(int n) const {
    std::string s = std::string(algo_name(algo)) + " n=" + std::to_string(n) +
                    " count=" + std::to_string(count) + " " + datatype_name(dt);
    s += algo == Algo::ScatterAllgather ? " root=" + std::to_string(root)
                                        : std::string(" ") + op_name(op);
    s += in_place ? " in-place" : " out-of-place";
    return s + " chunk_bytes=" + std::to_string(chunk_bytes);
  }
};

constexpr unsigned char kGuard = 0xa5;
constexpr size_t kGuardBytes = 16;  // before and after every buffer

// A buffer of `bytes` with kGuardBytes of kGuard on each side.
struct Guarded {
  std::vector<unsigned char> storage;
  explicit Guarded(size_t bytes) : storage(bytes + 2 * kGuardBytes, kGuard) {}
  unsigned char* data() { return storage.data() + kGuardBytes; }
  size_t bytes() const { return storage.size() - 2 * kGuardBytes; }
  bool guards_intact() const {
    const auto ok = [](unsigned char c) { return c == kGuard; };
    return std::all_of(storage.begin(), storage.begin() + kGuardBytes, ok) &&
           std::all_of(storage.end() - kGuardBytes, storage.end(), ok);
  }
};

std::string run_allreduce(const Case& c, Transport& t, uint64_t tag_base) {
  const int n = t.size(), r = t.rank();
  const size_t elem = datatype_bytes(c.dt);
  Guarded send(c.count * elem), recv(c.count * elem);
  fill_periodic(send.data(), c.count, elem, input_pattern(c.op, c.dt, r));
  std::memset(recv.data(), 0x5a, recv.bytes());  // stale data
  if (c.in_place) recv.storage = send.storage;
  const std::vector<unsigned char> original = send.storage;
  CollArgs args;
  args.sendbuf = c.in_place ? recv.data() : send.data();
  args.recvbuf = recv.data();
  args.count = c.count;
  args.datatype = c.dt;
  args.op = c.op;
  args.chunk_bytes = c.chunk_bytes;
  const plx_result_t rc = algo_fn(c.algo)(t, tag_base, args);
  if (rc != PLX_SUCCESS) return "returned " + std::to_string(rc) + ": " + last_error();
  const std::string why =
      check_periodic(recv.data(), c.count, c.dt, expected_pattern(c.op, c.dt, n));
  if (!why.empty()) return why;
  if (!recv.guards_intact()) return "wrote outside recvbuf";
  if (send.storage != original) return "modified sendbuf";
  return "";
}

std::string run_broadcast(const Case& c, Transport& t, uint64_t tag_base) {
  const bool root = t.rank() == c.root;
  const size_t elem = datatype_bytes(c.dt);
  const std::vector<unsigned char> payload = broadcast_pattern(c.dt, c.root);
  Guarded send(c.count * elem), recv(c.count * elem);
  fill_periodic(send.data(), c.count, elem, payload);
  fill_periodic(recv.data(), c.count, elem, broadcast_pattern(c.dt, c.root + 1));  // stale data
  if (root && c.in_place) recv.storage = send.storage;
  const std::vector<unsigned char> original = send.storage;
  CollArgs args;
  args.collective = Collective::Broadcast;
  args.sendbuf = !root ? nullptr : c.in_place ? recv.data() : send.data();
  args.recvbuf = recv.data();
  args.count = c.count;
  args.datatype = c.dt;
  args.root = c.root;
  args.chunk_bytes = c.chunk_bytes;
  const plx_result_t rc = scatter_allgather_broadcast(t, tag_base, args);
  if (rc != PLX_SUCCESS) return "returned " + std::to_string(rc) + ": " + last_error();
  const std::string why = check_periodic(recv.data(), c.count, c.dt, payload);
  if (!why.empty()) return why;
  if (!recv.guards_intact()) return "wrote outside recvbuf";
  if (send.storage != original) return "modified sendbuf";
  return "";
}

// Runs every case on an n-rank thread world; each rank checks its own results.
void run_cases(int n, const std::vector<Case>& cases, size_t eager_bytes = 0) {
  ThreadWorld world(n, eager_bytes);
  std::vector<std::string> failures(n);
  const auto results = world.run([&](int r, Transport& t) -> plx_result_t {
    for (size_t k = 0; k < cases.size(); ++k) {
      const Case& c = cases[k];
      const uint64_t tag_base = collective_tag_base(k + 1);
      const std::string why = c.algo == Algo::ScatterAllgather ? run_broadcast(c, t, tag_base)
                                                               : run_allreduce(c, t, tag_base);
      if (!why.empty()) {
        failures[r] = c.name(n) + ": rank " + std::to_string(r) + ": " + why;
        return PLX_ERROR_INTERNAL;  // the other ranks then time out on the next case
      }
    }
    return PLX_SUCCESS;
  });
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(results[r], PLX_SUCCESS) << "n=" << n << " rank " << r << ": " << failures[r];
  }
  for (const std::string& e : world.protocol_errors()) ADD_FAILURE() << "n=" << n << ": " << e;
  for (const std::string& e : world.leftover()) ADD_FAILURE() << "n=" << n << ": " << e;
}

std::vector<size_t> small_counts(int n) {
  std::vector<size_t> counts = {1, 2, static_cast<size_t>(std::max(n - 1, 1)), 1009};
  std::sort(counts.begin(), counts.end());
  counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
  return counts;
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
    for (int root : {0, n / 2, n - 1}) {
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
        ThreadWorld world(n);
        std::vector<std::vector<float>> results(n);
        const auto rcs = world.run([&](int r, Transport& t) -> plx_result_t {
          std::vector<float> send(count);
          for (size_t i = 0; i < count; ++i) send[i] = bit_identical_input(r, i);
          results[r].assign(count, 0.0f);
          CollArgs args;
          args.sendbuf = send.data();
          args.recvbuf = results[r].data();
          args.count = count;
          args.datatype = PLX_FLOAT32;
          args.op = op;
          args.chunk_bytes = chunk;
          return algo_fn(algo)(t, collective_tag_base(1), args);
        });
        for (int r = 0; r < n; ++r) ASSERT_EQ(rcs[r], PLX_SUCCESS) << where << " rank " << r;
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
      const int missing = n - 1;
      ThreadWorld world(n, 0, std::chrono::milliseconds(300));
      std::vector<std::string> messages(n);
      const auto results = world.run([&](int r, Transport& t) -> plx_result_t {
        if (r == missing) return PLX_SUCCESS;  // never joins
        std::vector<float> buf(1009, 1.0f);
        CollArgs args;
        args.sendbuf = args.recvbuf = buf.data();
        args.count = buf.size();
        args.chunk_bytes = 64;
        const plx_result_t rc = algo_fn(algo)(t, collective_tag_base(1), args);
        messages[r] = last_error();
        return rc;
      });
      for (int r = 0; r < n; ++r) {
        if (r == missing) continue;
        EXPECT_EQ(results[r], PLX_ERROR_TIMEOUT) << algo_name(algo) << " n=" << n << " rank " << r;
        EXPECT_NE(messages[r].find("rank " + std::to_string(r)), std::string::npos)
            << algo_name(algo) << ": " << messages[r];
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, HalvingDoublingWorld, ::testing::Range(1, 9),
                         [](const auto& info) { return std::to_string(info.param) + "ranks"; });

}  // namespace
}  // namespace plexus::comm
