// algorithms_thread_test.cpp - unit tests of ring_allreduce, broadcast and dissemination_barrier
// on an in-process transport (tests/support/thread_transport.h): ranks are threads.
//
// The thread transport is strict (rendezvous sends, exact receive sizes, unique tags, nothing
// left unmatched), so these tests also check the message protocol of each algorithm. World sizes
// 1..7; counts 0, 1, 2, n-1, 1009 (prime) and 2^20+3; chunk_bytes 64 (deep pipelines), 1 (one
// element per slice) and 1 MiB (one slice); every datatype and op; in place and out of place.
// Each world runs its whole list of cases in one launch of its rank threads, one collective per
// case with tag_base = case number << 32, as a communicator would.
//
// Inputs and expected values are closed forms, exact in every datatype whatever the reduction
// order (tests/comm/collective_reference.h); a failure names the case, rank and index.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "comm/algorithms/algorithms.h"
#include "comm/core/error.h"
#include "comm/reduce/reduce.h"
#include "tests/comm/collective_reference.h"
#include "tests/support/thread_transport.h"

namespace plexus::comm {
namespace {

using namespace plexus::test;  // NOLINT: the reference helpers

enum class Kind { Allreduce, Broadcast, Barrier };

struct Case {
  Kind kind;
  size_t count;
  plx_datatype_t dt;
  plx_red_op_t op;
  bool in_place;
  size_t chunk_bytes;
  int root;

  std::string name(int n) const {
    std::string s = kind == Kind::Allreduce   ? "allreduce"
                    : kind == Kind::Broadcast ? "broadcast"
                                              : "barrier";
    s += " n=" + std::to_string(n) + " count=" + std::to_string(count) + " " + datatype_name(dt);
    if (kind == Kind::Allreduce) s += std::string(" ") + op_name(op);
    if (kind == Kind::Broadcast) s += " root=" + std::to_string(root);
    s += in_place ? " in-place" : " out-of-place";
    return s + " chunk_bytes=" + std::to_string(chunk_bytes);
  }
};

constexpr unsigned char kGuard = 0xa5;  // one element past each buffer must keep this

// Runs one allreduce case on this rank and checks its result; returns "" or the first failure.
std::string run_allreduce(const Case& c, Transport& t, uint64_t tag_base) {
  const int n = t.size(), r = t.rank();
  const size_t elem = datatype_bytes(c.dt);
  std::vector<unsigned char> send((c.count + 1) * elem, kGuard), recv(send);
  fill_periodic(send.data(), c.count, elem, input_pattern(c.op, c.dt, r));
  if (c.in_place) recv = send;
  const std::vector<unsigned char> original = send;
  CollArgs args;
  args.sendbuf = c.in_place ? recv.data() : send.data();
  args.recvbuf = recv.data();
  args.count = c.count;
  args.datatype = c.dt;
  args.op = c.op;
  args.chunk_bytes = c.chunk_bytes;
  const plx_result_t rc = ring_allreduce(t, tag_base, args);
  if (rc != PLX_SUCCESS) return "returned " + std::to_string(rc);
  const std::string why =
      check_periodic(recv.data(), c.count, c.dt, expected_pattern(c.op, c.dt, n));
  if (!why.empty()) return why;
  for (size_t b = c.count * elem; b < recv.size(); ++b) {
    if (recv[b] != kGuard) return "wrote past the end of recvbuf";
  }
  if (!c.in_place && send != original) return "modified sendbuf";
  return "";
}

std::string run_broadcast(const Case& c, Transport& t, uint64_t tag_base) {
  const int r = t.rank();
  const size_t elem = datatype_bytes(c.dt);
  const std::vector<unsigned char> payload = broadcast_pattern(c.dt, c.root);
  std::vector<unsigned char> send((c.count + 1) * elem, kGuard), recv(send);
  fill_periodic(send.data(), c.count, elem, payload);
  fill_periodic(recv.data(), c.count, elem, broadcast_pattern(c.dt, c.root + 1));  // stale data
  const bool root = r == c.root;
  if (root && c.in_place) recv = send;
  const std::vector<unsigned char> original = send;
  const void* sendbuf = !root ? nullptr : c.in_place ? recv.data() : send.data();
  CollArgs args;
  args.collective = Collective::Broadcast;
  args.sendbuf = sendbuf;
  args.recvbuf = recv.data();
  args.count = c.count;
  args.datatype = c.dt;
  args.root = c.root;
  args.chunk_bytes = c.chunk_bytes;
  const size_t bytes = c.count * elem;
  const plx_result_t rc = (bytes < c.chunk_bytes ? binomial_broadcast : chain_broadcast)(
      t, tag_base, args);
  if (rc != PLX_SUCCESS) return "returned " + std::to_string(rc);
  const std::string why = check_periodic(recv.data(), c.count, c.dt, payload);
  if (!why.empty()) return why;
  for (size_t b = c.count * elem; b < recv.size(); ++b) {
    if (recv[b] != kGuard) return "wrote past the end of recvbuf";
  }
  if (send != original) return "modified sendbuf";
  return "";
}

// Runs every case on an n-rank thread world; each rank checks its own results.
void run_cases(int n, const std::vector<Case>& cases, size_t eager_bytes = 0) {
  plexus::test::ThreadWorld world(n, eager_bytes);
  std::vector<std::string> failures(n);
  // Barrier check: every rank bumps arrivals[k] just before barrier k and, once out of it,
  // must see all n arrivals.
  std::vector<std::atomic<int>> arrivals(cases.size());
  const auto results = world.run([&](int r, Transport& t) -> plx_result_t {
    for (size_t k = 0; k < cases.size(); ++k) {
      const Case& c = cases[k];
      const uint64_t tag_base = collective_tag_base(k + 1);
      std::string why;
      if (c.kind == Kind::Allreduce) {
        why = run_allreduce(c, t, tag_base);
      } else if (c.kind == Kind::Broadcast) {
        why = run_broadcast(c, t, tag_base);
      } else {
        if ((r + k) % 3 == 0) std::this_thread::yield();  // vary the arrival order
        arrivals[k].fetch_add(1);
        const plx_result_t rc = dissemination_barrier(t, tag_base, CollArgs{});
        if (rc != PLX_SUCCESS)
          why = "returned " + std::to_string(rc);
        else if (arrivals[k].load() != n) {
          why = "left the barrier after " + std::to_string(arrivals[k].load()) + " arrivals";
        }
      }
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
  std::vector<size_t> counts = {0, 1, 2, static_cast<size_t>(n - 1), 1009};
  std::sort(counts.begin(), counts.end());
  counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
  return counts;
}

class WorldSize : public ::testing::TestWithParam<int> {};

TEST_P(WorldSize, AllreduceEveryDatatypeOpAndCount) {
  const int n = GetParam();
  std::vector<Case> cases;
  for (size_t count : small_counts(n)) {
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
  for (size_t count : small_counts(n)) {
    for (int root : {0, n / 2, n - 1}) {
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
  const std::vector<std::function<plx_result_t(Transport&)>> calls = {
      [](Transport& t) {
        std::vector<float> buf(1009, 1.0f);
        CollArgs args;
        args.sendbuf = args.recvbuf = buf.data();
        args.count = buf.size();
        args.chunk_bytes = 64;
        return ring_allreduce(t, collective_tag_base(1), args);
      },
      [](Transport& t) {
        std::vector<float> buf(1009, 1.0f);
        CollArgs args;
        args.recvbuf = buf.data();
        args.count = buf.size();
        args.root = 2;
        args.chunk_bytes = 64;
        return chain_broadcast(t, collective_tag_base(1), args);
      },
      [](Transport& t) { return dissemination_barrier(t, collective_tag_base(1), CollArgs{}); },
  };
  for (size_t k = 0; k < calls.size(); ++k) {
    plexus::test::ThreadWorld world(3, 0, std::chrono::milliseconds(300));
    std::vector<std::string> messages(3);
    const auto results = world.run([&](int r, Transport& t) -> plx_result_t {
      if (r == 2) return PLX_SUCCESS;  // never joins
      const plx_result_t rc = calls[k](t);
      messages[r] = last_error();
      return rc;
    });
    for (int r = 0; r < 2; ++r) {
      EXPECT_EQ(results[r], PLX_ERROR_TIMEOUT) << "call " << k << " rank " << r;
      EXPECT_NE(messages[r].find("rank " + std::to_string(r)), std::string::npos)
          << "call " << k << ": " << messages[r];
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, WorldSize, ::testing::Range(1, 8),
                         [](const auto& info) { return std::to_string(info.param) + "ranks"; });

}  // namespace
}  // namespace plexus::comm
