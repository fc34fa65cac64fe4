// thread_test_harness.h - what the algorithm unit tests (*_thread_test.cpp) share: a case list run
// on a ThreadWorld (tests/support/thread_transport.h), guarded buffers, the allreduce and
// broadcast checks, a float allreduce for the bit-identical tests, and the missing-rank test.
//
// run_case_list() runs a world's whole list of cases in one launch of its rank threads, one
// collective per case with tag_base = collective_tag_base(case number + 1), as a communicator
// would. Each rank checks its own results and stops at its first failure (the other ranks then
// time out on a later case). The thread transport is strict (rendezvous sends, exact receive
// sizes, unique tags), so every list also checks the message protocol: no protocol error, and
// nothing left unmatched at the end.
//
// Inputs and expected values are the closed forms of tests/comm/collective_reference.h, exact in
// every datatype whatever the reduction order; a failure names the case, the rank and the index.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "comm/algorithms/algorithms.h"
#include "comm/base/error.h"
#include "comm/reduce/reduce.h"
#include "tests/comm/collective_reference.h"
#include "tests/support/thread_transport.h"

namespace plexus::test {

// ---- case lists --------------------------------------------------------------------------

// Counts 1, 2, n-1 and 1009 (prime), sorted, without repeats and without 0 (the C ABI never calls
// an algorithm with count 0).
inline std::vector<size_t> small_counts(int n) {
  std::vector<size_t> counts = {1, 2, static_cast<size_t>(n - 1), 1009};
  std::sort(counts.begin(), counts.end());
  counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
  if (counts.front() == 0) counts.erase(counts.begin());
  return counts;
}

// The name of a world-size parameter in INSTANTIATE_TEST_SUITE_P: "3ranks".
inline std::string ranks_name(const ::testing::TestParamInfo<int>& info) {
  return std::to_string(info.param) + "ranks";
}

// The arguments of one call in a case list.
struct CallSpec {
  size_t count = 0;  // elements
  plx_datatype_t dt = PLX_FLOAT32;
  plx_red_op_t op = PLX_SUM;
  bool in_place = false;
  size_t chunk_bytes = 64;
  int root = 0;
};

// The CollArgs of a call: c's count, datatype, op, root and chunk_bytes (the buffers are the
// caller's).
inline comm::CollArgs args_of(comm::Collective collective, const CallSpec& c) {
  comm::CollArgs args;
  args.collective = collective;
  args.count = c.count;
  args.datatype = c.dt;
  args.op = c.op;
  args.root = c.root;
  args.chunk_bytes = c.chunk_bytes;
  return args;
}

// What a failure names: "ALGO n=N count=C DT DETAIL in-place chunk_bytes=B", where DETAIL is what
// else tells the case apart (the op, the root), with its leading space.
inline std::string case_name(const std::string& algo, int n, const CallSpec& c,
                             const std::string& detail) {
  return algo + " n=" + std::to_string(n) + " count=" + std::to_string(c.count) + " " +
         datatype_name(c.dt) + detail + (c.in_place ? " in-place" : " out-of-place") +
         " chunk_bytes=" + std::to_string(c.chunk_bytes);
}

// Every protocol violation and unmatched message of `world` is a test failure.
inline void expect_protocol_clean(const ThreadWorld& world, const std::string& label) {
  for (const std::string& e : world.protocol_errors()) ADD_FAILURE() << label << ": " << e;
  for (const std::string& e : world.leftover()) ADD_FAILURE() << label << ": " << e;
}

// Runs case k = 0..cases-1 on every rank of an n-rank world, as the file comment says.
// run(k, transport, tag_base) runs case k on one rank and returns "" or what went wrong;
// name(k) names case k in the failure.
using RunCase = std::function<std::string(size_t k, comm::Transport& t, uint64_t tag_base)>;
using NameCase = std::function<std::string(size_t k)>;

inline void run_case_list(int n, size_t cases, const RunCase& run, const NameCase& name,
                          size_t eager_bytes = 0) {
  ThreadWorld world(n, eager_bytes);
  std::vector<std::string> failures(n);
  const auto results = world.run([&](int r, comm::Transport& t) -> plx_result_t {
    for (size_t k = 0; k < cases; ++k) {
      const std::string why = run(k, t, comm::collective_tag_base(k + 1));
      if (!why.empty()) {
        failures[r] = name(k) + ": rank " + std::to_string(r) + ": " + why;
        return PLX_ERROR_INTERNAL;  // the other ranks then time out on a later case
      }
    }
    return PLX_SUCCESS;
  });
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(results[r], PLX_SUCCESS) << "n=" << n << " rank " << r << ": " << failures[r];
  }
  expect_protocol_clean(world, "n=" + std::to_string(n));
}

// ---- buffers and checks ------------------------------------------------------------------

inline constexpr unsigned char kGuard = 0xa5;  // guard bytes must keep this
inline constexpr size_t kGuardBytes = 16;      // before and after every buffer

// `bytes` of memory filled with `fill`, with kGuardBytes of kGuard on each side.
class Guarded {
 public:
  explicit Guarded(size_t bytes, unsigned char fill = kGuard)
      : mem_(bytes + 2 * kGuardBytes, kGuard) {
    std::fill(mem_.begin() + kGuardBytes, mem_.end() - kGuardBytes, fill);
  }
  unsigned char* data() { return mem_.data() + kGuardBytes; }
  const unsigned char* data() const { return mem_.data() + kGuardBytes; }
  size_t bytes() const { return mem_.size() - 2 * kGuardBytes; }
  bool guards_intact() const {
    const auto is_guard = [](unsigned char b) { return b == kGuard; };
    return std::all_of(mem_.begin(), mem_.begin() + kGuardBytes, is_guard) &&
           std::all_of(mem_.end() - kGuardBytes, mem_.end(), is_guard);
  }
  // Every byte, guards included, is still kGuard: nothing was written (a buffer built with the
  // default fill that must stay untouched).
  bool untouched() const {
    return std::all_of(mem_.begin(), mem_.end(), [](unsigned char b) { return b == kGuard; });
  }
  bool operator==(const Guarded& other) const { return mem_ == other.mem_; }

 private:
  std::vector<unsigned char> mem_;
};

// An allreduce by `fn` on this rank: recvbuf starts stale, and after the call must hold the
// reduction, with guards intact and sendbuf unchanged. Returns "" or the first failure.
inline std::string check_allreduce(comm::AlgorithmFn fn, const CallSpec& c, comm::Transport& t,
                                   uint64_t tag_base) {
  const int n = t.size(), r = t.rank();
  const size_t elem = comm::datatype_bytes(c.dt);
  Guarded send(c.count * elem), recv(c.count * elem);
  fill_periodic(send.data(), c.count, elem, input_pattern(c.op, c.dt, r));
  std::memset(recv.data(), 0x5a, recv.bytes());  // stale data
  if (c.in_place) recv = send;
  const Guarded original = send;
  comm::CollArgs args = args_of(comm::Collective::Allreduce, c);
  args.sendbuf = c.in_place ? recv.data() : send.data();
  args.recvbuf = recv.data();
  const plx_result_t rc = fn(t, tag_base, args);
  if (rc != PLX_SUCCESS) return "returned " + std::to_string(rc) + ": " + plexus::last_error();
  const std::string why =
      check_periodic(recv.data(), c.count, c.dt, expected_pattern(c.op, c.dt, n));
  if (!why.empty()) return why;
  if (!recv.guards_intact()) return "wrote outside recvbuf";
  if (!(send == original)) return "modified sendbuf";
  return "";
}

// A broadcast by `fn` from c.root: every rank's recvbuf starts stale (another root's payload)
// and must end with the root's, guards intact; non-roots pass sendbuf NULL.
inline std::string check_broadcast(comm::AlgorithmFn fn, const CallSpec& c, comm::Transport& t,
                                   uint64_t tag_base) {
  const bool root = t.rank() == c.root;
  const size_t elem = comm::datatype_bytes(c.dt);
  const std::vector<unsigned char> payload = broadcast_pattern(c.dt, c.root);
  Guarded send(c.count * elem), recv(c.count * elem);
  fill_periodic(send.data(), c.count, elem, payload);
  fill_periodic(recv.data(), c.count, elem, broadcast_pattern(c.dt, c.root + 1));  // stale data
  if (root && c.in_place) recv = send;
  const Guarded original = send;
  comm::CollArgs args = args_of(comm::Collective::Broadcast, c);
  args.sendbuf = !root ? nullptr : c.in_place ? recv.data() : send.data();
  args.recvbuf = recv.data();
  const plx_result_t rc = fn(t, tag_base, args);
  if (rc != PLX_SUCCESS) return "returned " + std::to_string(rc) + ": " + plexus::last_error();
  const std::string why = check_periodic(recv.data(), c.count, c.dt, payload);
  if (!why.empty()) return why;
  if (!recv.guards_intact()) return "wrote outside recvbuf";
  if (!(send == original)) return "modified sendbuf";
  return "";
}

// A float32 allreduce by `fn` of input(rank, index) on an n-rank world; (*results)[r] is rank r's
// recvbuf. For the tests that compare the ranks' bits; call it inside ASSERT_NO_FATAL_FAILURE.
inline void run_float_allreduce(comm::AlgorithmFn fn, int n, size_t count, plx_red_op_t op,
                                size_t chunk_bytes, const std::function<float(int, size_t)>& input,
                                std::vector<std::vector<float>>* results) {
  results->assign(n, std::vector<float>(count, 0.0f));
  ThreadWorld world(n);
  const auto rcs = world.run([&](int r, comm::Transport& t) -> plx_result_t {
    std::vector<float> send(count);
    for (size_t i = 0; i < count; ++i) send[i] = input(r, i);
    comm::CollArgs args;
    args.sendbuf = send.data();
    args.recvbuf = (*results)[r].data();
    args.count = count;
    args.datatype = PLX_FLOAT32;
    args.op = op;
    args.chunk_bytes = chunk_bytes;
    return fn(t, comm::collective_tag_base(1), args);
  });
  for (int r = 0; r < n; ++r) ASSERT_EQ(rcs[r], PLX_SUCCESS) << "rank " << r;
  expect_protocol_clean(world, "n=" + std::to_string(n));
}

// ---- a rank that never joins -------------------------------------------------------------

// The ranks other than `missing` call a collective that needs it; each must fail with
// PLX_ERROR_TIMEOUT and a message naming itself, neither hang nor crash. A rank listed in
// may_finish (one that does not depend on the missing rank) may succeed instead.
struct MissingRank {
  std::string what;  // names the call in failures
  int ranks = 3;
  int missing = 2;
  size_t floats = 1009;  // per rank, in send and in recv
  std::vector<int> may_finish = {};
};

// call(t, send, recv) runs the collective on one rank: send holds `floats` ones and recv
// `floats` zeros. Both outlive the world, since a timed-out rank's abandoned requests may still
// point into them (pipeline.h).
inline void expect_missing_rank_times_out(
    const MissingRank& m,
    const std::function<plx_result_t(comm::Transport& t, float* send, float* recv)>& call) {
  std::vector<std::vector<float>> send(m.ranks, std::vector<float>(m.floats, 1.0f));
  std::vector<std::vector<float>> recv(m.ranks, std::vector<float>(m.floats, 0.0f));
  ThreadWorld world(m.ranks, 0, std::chrono::milliseconds(300));
  std::vector<std::string> messages(m.ranks);
  const auto results = world.run([&](int r, comm::Transport& t) -> plx_result_t {
    if (r == m.missing) return PLX_SUCCESS;  // never joins
    const plx_result_t rc = call(t, send[r].data(), recv[r].data());
    messages[r] = plexus::last_error();
    return rc;
  });
  for (int r = 0; r < m.ranks; ++r) {
    if (r == m.missing) continue;
    const bool may_finish =
        std::find(m.may_finish.begin(), m.may_finish.end(), r) != m.may_finish.end();
    if (may_finish && results[r] == PLX_SUCCESS) continue;
    EXPECT_EQ(results[r], PLX_ERROR_TIMEOUT) << m.what << " n=" << m.ranks << " rank " << r;
    EXPECT_NE(messages[r].find("rank " + std::to_string(r)), std::string::npos)
        << m.what << " n=" << m.ranks << ": " << messages[r];
  }
}

}  // namespace plexus::test
