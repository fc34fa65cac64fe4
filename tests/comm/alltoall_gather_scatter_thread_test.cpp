// alltoall_gather_scatter_thread_test.cpp - unit tests of pairwise_alltoall, bruck_alltoall,
// pairwise_alltoallv, linear/binomial gather and linear/binomial scatter on the in-process
// thread transport (tests/support/thread_transport.h): ranks are threads.
//
// The case lists run on tests/comm/thread_test_harness.h: a strict transport, so these tests
// also check each algorithm's message protocol. World sizes 1..8; counts 1, 2, n-1, 1009 (prime)
// and 2^18+3; chunk_bytes 64 and 1 MiB; every datatype (these collectives move data and have no
// op); in place and out of place; roots 0, n/2 and n-1. Every buffer has guard bytes before and
// after it, alltoallv has gaps between its blocks, and both must keep their bytes; sendbuf must
// come back unchanged.
//
// Payload: element i of the block rank s sends to rank d is ((13s + 7d + 3i) mod 101) - 50,
// exact in every datatype, so a block from the wrong rank, for the wrong rank or at a wrong
// offset shows. A failure names the algorithm, case, rank, block and index.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "comm/algorithms/algorithms.h"
#include "tests/comm/thread_test_harness.h"

namespace plexus::comm {
namespace {

using namespace plexus::test;  // NOLINT: the harness and reference helpers

enum class Kind { Alltoall, Alltoallv, Gather, Scatter };

struct Algorithm {
  const char* name;
  Kind kind;
  AlgorithmFn fn;
};

const Algorithm kPairwise{"pairwise_alltoall", Kind::Alltoall, pairwise_alltoall};
const Algorithm kBruck{"bruck_alltoall", Kind::Alltoall, bruck_alltoall};
const Algorithm kPairwiseV{"pairwise_alltoallv", Kind::Alltoallv, pairwise_alltoallv};
const Algorithm kLinearGather{"linear_gather", Kind::Gather, linear_gather};
const Algorithm kBinomialGather{"binomial_gather", Kind::Gather, binomial_gather};
const Algorithm kLinearScatter{"linear_scatter", Kind::Scatter, linear_scatter};
const Algorithm kBinomialScatter{"binomial_scatter", Kind::Scatter, binomial_scatter};
const Algorithm* const kAll[] = {&kPairwise,       &kBruck,          &kPairwiseV,
                                 &kLinearGather,   &kBinomialGather, &kLinearScatter,
                                 &kBinomialScatter};

struct Case {
  const Algorithm* algo;
  size_t count;  // alltoallv: the scale of its uneven counts
  plx_datatype_t dt;
  bool in_place;
  size_t chunk_bytes;
  int root;
  size_t shift = 0;  // alltoallv: counts are ((r + 2j + shift) mod 5) * count

  CallSpec spec() const { return {count, dt, PLX_SUM, in_place, chunk_bytes, root}; }
  std::string name(int n) const {
    std::string detail;
    if (algo->kind == Kind::Gather || algo->kind == Kind::Scatter) {
      detail = " root=" + std::to_string(root);
    }
    if (algo->kind == Kind::Alltoallv) detail = " shift=" + std::to_string(shift);
    return case_name(algo->name, n, spec(), detail);
  }
};

constexpr unsigned char kStale = 0x3c;  // what recvbuf holds before the call

// One period (101 elements) of the block rank src sends to rank dst, encoded.
std::vector<unsigned char> payload(plx_datatype_t dt, int src, int dst) {
  const size_t elem = datatype_bytes(dt), period = 101;
  std::vector<unsigned char> pattern(period * elem);
  for (size_t i = 0; i < period; ++i) {
    const size_t v = (13 * static_cast<size_t>(src) + 7 * static_cast<size_t>(dst) + 3 * i) % 101;
    encode(dt, static_cast<int64_t>(v) - 50, &pattern[i * elem]);
  }
  return pattern;
}

// Fills block `b` (count elements) of buf with the payload from src to dst.
void fill_block(unsigned char* buf, size_t b, size_t count, plx_datatype_t dt, int src, int dst) {
  const size_t elem = datatype_bytes(dt);
  fill_periodic(buf + b * count * elem, count, elem, payload(dt, src, dst));
}

// "" or "block b: index I: got X, want Y".
std::string check_block(const unsigned char* buf, size_t b, size_t count, plx_datatype_t dt,
                        int src, int dst) {
  const size_t elem = datatype_bytes(dt);
  const std::string why = check_periodic(buf + b * count * elem, count, dt, payload(dt, src, dst));
  return why.empty() ? "" : "block " + std::to_string(b) + ": " + why;
}

CollArgs make_args(const Case& c) {
  const Collective collective = c.algo->kind == Kind::Alltoall    ? Collective::Alltoall
                                : c.algo->kind == Kind::Alltoallv ? Collective::Alltoallv
                                : c.algo->kind == Kind::Gather    ? Collective::Gather
                                                                  : Collective::Scatter;
  return args_of(collective, c.spec());
}

std::string run_alltoall(const Case& c, Transport& t, uint64_t tag_base) {
  const int n = t.size(), r = t.rank();
  const size_t bytes = n * c.count * datatype_bytes(c.dt);
  Guarded send(bytes, kStale), recv(bytes, kStale);
  for (int j = 0; j < n; ++j) fill_block(send.data(), j, c.count, c.dt, r, j);
  if (c.in_place) recv = send;
  const Guarded original = send;
  CollArgs args = make_args(c);
  args.sendbuf = c.in_place ? recv.data() : send.data();
  args.recvbuf = recv.data();
  const plx_result_t rc = c.algo->fn(t, tag_base, args);
  if (rc != PLX_SUCCESS) return "returned " + std::to_string(rc) + ": " + last_error();
  for (int j = 0; j < n; ++j) {
    const std::string why = check_block(recv.data(), j, c.count, c.dt, j, r);
    if (!why.empty()) return why;
  }
  if (!recv.guards_intact()) return "wrote outside recvbuf";
  if (!(send == original)) return "modified sendbuf";
  return "";
}

// alltoallv: rank r sends ((r + 2j + shift) mod 5) * scale elements to rank j. Send blocks lie
// in rank order with a gap of 1 + j % 3 elements before block j; receive blocks lie in reverse
// rank order with a gap of 2 elements before each. Gaps keep kGuard.
struct VLayout {
  std::vector<size_t> sendcounts, sdispls, recvcounts, rdispls;
  size_t send_total = 0, recv_total = 0;

  VLayout(int n, int r, size_t scale, size_t shift) {
    const auto amount = [&](int from, int to) {
      return (static_cast<size_t>(from + 2 * to) + shift) % 5 * scale;
    };
    for (int j = 0; j < n; ++j) {
      sendcounts.push_back(amount(r, j));
      recvcounts.push_back(amount(j, r));
      send_total += 1 + j % 3;
      sdispls.push_back(send_total);
      send_total += sendcounts.back();
    }
    rdispls.resize(n);
    for (int j = n - 1; j >= 0; --j) {
      recv_total += 2;
      rdispls[j] = recv_total;
      recv_total += recvcounts[j];
    }
  }
};

std::string run_alltoallv(const Case& c, Transport& t, uint64_t tag_base) {
  const int n = t.size(), r = t.rank();
  const size_t elem = datatype_bytes(c.dt);
  const VLayout v(n, r, c.count, c.shift);
  Guarded send(v.send_total * elem, kGuard), recv(v.recv_total * elem, kGuard);
  for (int j = 0; j < n; ++j) {
    fill_periodic(send.data() + v.sdispls[j] * elem, v.sendcounts[j], elem, payload(c.dt, r, j));
  }
  const Guarded original = send;
  CollArgs args = make_args(c);
  args.sendbuf = send.data();
  args.recvbuf = recv.data();
  args.count = 0;
  args.sendcounts = v.sendcounts.data();
  args.sdispls = v.sdispls.data();
  args.recvcounts = v.recvcounts.data();
  args.rdispls = v.rdispls.data();
  const plx_result_t rc = c.algo->fn(t, tag_base, args);
  if (rc != PLX_SUCCESS) return "returned " + std::to_string(rc) + ": " + last_error();
  std::vector<bool> in_block(v.recv_total, false);
  for (int j = 0; j < n; ++j) {
    const std::string why = check_periodic(recv.data() + v.rdispls[j] * elem, v.recvcounts[j], c.dt,
                                           payload(c.dt, j, r));
    if (!why.empty()) return "block from rank " + std::to_string(j) + ": " + why;
    std::fill_n(in_block.begin() + v.rdispls[j], v.recvcounts[j], true);
  }
  for (size_t e = 0; e < v.recv_total; ++e) {
    if (in_block[e]) continue;
    for (size_t b = 0; b < elem; ++b) {
      if (recv.data()[e * elem + b] != kGuard)
        return "wrote into the gap at element " + std::to_string(e);
    }
  }
  if (!recv.guards_intact()) return "wrote outside recvbuf";
  if (!(send == original)) return "modified sendbuf";
  return "";
}

std::string run_gather(const Case& c, Transport& t, uint64_t tag_base) {
  const int n = t.size(), r = t.rank();
  const size_t elem = datatype_bytes(c.dt), block = c.count * elem;
  const bool root = r == c.root;
  Guarded send(block, kStale), recv(root ? n * block : 0, kStale);
  fill_block(send.data(), 0, c.count, c.dt, r, c.root);
  if (root && c.in_place) fill_block(recv.data(), r, c.count, c.dt, r, c.root);
  const Guarded original = send;
  CollArgs args = make_args(c);
  args.sendbuf = root && c.in_place ? recv.data() + r * block : send.data();
  args.recvbuf = root ? recv.data() : nullptr;
  const plx_result_t rc = c.algo->fn(t, tag_base, args);
  if (rc != PLX_SUCCESS) return "returned " + std::to_string(rc) + ": " + last_error();
  if (root) {
    for (int j = 0; j < n; ++j) {
      const std::string why = check_block(recv.data(), j, c.count, c.dt, j, c.root);
      if (!why.empty()) return why;
    }
  }
  if (!recv.guards_intact()) return "wrote outside recvbuf";
  if (!(send == original)) return "modified sendbuf";
  return "";
}

std::string run_scatter(const Case& c, Transport& t, uint64_t tag_base) {
  const int n = t.size(), r = t.rank();
  const size_t elem = datatype_bytes(c.dt), block = c.count * elem;
  const bool root = r == c.root;
  Guarded send(root ? n * block : 0, kStale), recv(block, kStale);
  if (root) {
    for (int j = 0; j < n; ++j) fill_block(send.data(), j, c.count, c.dt, c.root, j);
  }
  const Guarded original = send;
  CollArgs args = make_args(c);
  args.sendbuf = root ? send.data() : nullptr;
  args.recvbuf = root && c.in_place ? send.data() + r * block : recv.data();
  const plx_result_t rc = c.algo->fn(t, tag_base, args);
  if (rc != PLX_SUCCESS) return "returned " + std::to_string(rc) + ": " + last_error();
  const std::string why =
      check_block(static_cast<unsigned char*>(args.recvbuf), 0, c.count, c.dt, c.root, r);
  if (!why.empty()) return why;
  if (!recv.guards_intact()) return "wrote outside recvbuf";
  if (!(send == original)) return "modified sendbuf";  // in place: its own block is the result
  return "";
}

// Runs every case on an n-rank thread world; each rank checks its own results.
void run_cases(int n, const std::vector<Case>& cases, size_t eager_bytes = 0) {
  const auto run = [&](size_t k, Transport& t, uint64_t tag_base) -> std::string {
    const Case& c = cases[k];
    switch (c.algo->kind) {
      case Kind::Alltoall:
        return run_alltoall(c, t, tag_base);
      case Kind::Alltoallv:
        return run_alltoallv(c, t, tag_base);
      case Kind::Gather:
        return run_gather(c, t, tag_base);
      case Kind::Scatter:
        return run_scatter(c, t, tag_base);
    }
    return "unknown kind";
  };
  const auto name = [&](size_t k) { return cases[k].name(n); };
  run_case_list(n, cases.size(), run, name, eager_bytes);
}

// The cases of one algorithm for one count, datatype and chunk size: in place and out of place
// (alltoallv: out of place only, two count patterns), every root for gather and scatter.
void add_cases(std::vector<Case>& cases, const Algorithm& a, int n, size_t count, plx_datatype_t dt,
               size_t chunk_bytes) {
  if (a.kind == Kind::Alltoallv) {
    for (size_t shift : {0, 1}) cases.push_back({&a, count, dt, false, chunk_bytes, 0, shift});
    return;
  }
  const bool rooted = a.kind == Kind::Gather || a.kind == Kind::Scatter;
  for (int root : rooted ? roots(n) : std::vector<int>{0}) {
    for (bool in_place : {false, true})
      cases.push_back({&a, count, dt, in_place, chunk_bytes, root});
  }
}

class AlltoallGatherScatterWorld : public ::testing::TestWithParam<int> {};

TEST_P(AlltoallGatherScatterWorld, EveryAlgorithmDatatypeAndCount) {
  const int n = GetParam();
  std::vector<Case> cases;
  for (const Algorithm* a : kAll) {
    for (size_t count : small_counts(n)) {
      for (int dt = 0; dt < PLX_NUM_DATATYPES; ++dt) {
        add_cases(cases, *a, n, count, static_cast<plx_datatype_t>(dt), 64);
      }
    }
    add_cases(cases, *a, n, 1009, PLX_FLOAT32, size_t{1} << 20);
    add_cases(cases, *a, n, 1, PLX_BFLOAT16, size_t{1} << 20);
  }
  run_cases(n, cases);
}

TEST_P(AlltoallGatherScatterWorld, LargeCount) {
  const int n = GetParam();
  const size_t count = (size_t{1} << 18) + 3;
  std::vector<Case> cases;
  for (const Algorithm* a : kAll) {
    // alltoallv: blocks of up to 4 * (2^16 + 1) elements.
    const size_t c = a->kind == Kind::Alltoallv ? (size_t{1} << 16) + 1 : count;
    add_cases(cases, *a, n, c, PLX_FLOAT32, 64);
    add_cases(cases, *a, n, c, PLX_INT8, size_t{1} << 20);
  }
  run_cases(n, cases);
}

TEST_P(AlltoallGatherScatterWorld, EagerSendsRunAhead) {
  // Eager sends complete at once, so fast ranks run ahead into later steps and later calls:
  // messages arrive before their receives are posted (the unexpected-message path).
  const int n = GetParam();
  std::vector<Case> cases;
  for (int round = 0; round < 2; ++round) {
    for (const Algorithm* a : kAll) add_cases(cases, *a, n, 1009, PLX_INT32, 64);
    for (const Algorithm* a : kAll) add_cases(cases, *a, n, 3, PLX_FLOAT16, 64);
  }
  run_cases(n, cases, /*eager_bytes=*/1 << 16);
}

INSTANTIATE_TEST_SUITE_P(Ranks, AlltoallGatherScatterWorld, ::testing::Range(1, 9), ranks_name);

// Every alltoallv count 0 but one pair's: zero blocks send nothing, the one block arrives.
TEST(Alltoallv, MostlyZeroCounts) {
  const int n = 5;
  ThreadWorld world(n);
  std::vector<std::string> failures(n);
  const auto results = world.run([&](int r, Transport& t) -> plx_result_t {
    std::vector<size_t> sendcounts(n, 0), recvcounts(n, 0), displs(n, 0);
    if (r == 3) sendcounts[1] = 7;
    if (r == 1) recvcounts[3] = 7;
    std::vector<int32_t> send(8, 40 + r), recv(8, -1);
    CollArgs args = make_args({&kPairwiseV, 0, PLX_INT32, false, 64, 0});
    args.sendbuf = send.data();
    args.recvbuf = recv.data();
    args.sendcounts = sendcounts.data();
    args.recvcounts = recvcounts.data();
    args.sdispls = args.rdispls = displs.data();
    const plx_result_t rc = pairwise_alltoallv(t, collective_tag_base(1), args);
    std::vector<int32_t> want(8, -1);
    if (r == 1) std::fill_n(want.begin(), 7, 43);
    if (recv != want) failures[r] = "recvbuf differs";
    return rc;
  });
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(results[r], PLX_SUCCESS) << "rank " << r;
    EXPECT_EQ(failures[r], "") << "rank " << r;
  }
  expect_protocol_clean(world, "alltoallv");
}

// Bad alltoallv arguments a rank can see alone: in place, and an own block whose send and
// receive counts differ. Both fail at once with a message naming the function, rank and value.
TEST(Alltoallv, RejectsWhatOneRankCanSee) {
  ThreadWorld world(2);
  std::vector<std::string> messages(2);
  const auto results = world.run([&](int r, Transport& t) -> plx_result_t {
    std::vector<size_t> counts = {2, 2}, displs = {0, 2}, other = {2, 2};
    other[r] = 3;
    std::vector<float> buf(8, 0.0f), recv(8, 0.0f);
    CollArgs args = make_args({&kPairwiseV, 0, PLX_FLOAT32, false, 64, 0});
    args.sendcounts = counts.data();
    args.sdispls = args.rdispls = displs.data();
    args.sendbuf = args.recvbuf = buf.data();
    args.recvcounts = counts.data();
    if (pairwise_alltoallv(t, collective_tag_base(1), args) != PLX_ERROR_INVALID_ARGUMENT) {
      return PLX_ERROR_INTERNAL;
    }
    messages[r] = last_error();
    args.recvbuf = recv.data();
    args.recvcounts = other.data();
    const plx_result_t rc = pairwise_alltoallv(t, collective_tag_base(2), args);
    messages[r] += "\n" + std::string(last_error());
    return rc;
  });
  for (int r = 0; r < 2; ++r) {
    const std::string who = "pairwise_alltoallv: rank " + std::to_string(r) + ": ";
    EXPECT_EQ(results[r], PLX_ERROR_INVALID_ARGUMENT) << "rank " << r;
    EXPECT_NE(messages[r].find(who + "sendbuf == recvbuf"), std::string::npos) << messages[r];
    EXPECT_NE(messages[r].find(who + "sendcounts[" + std::to_string(r) + "] = 2 but recvcounts[" +
                               std::to_string(r) + "] = 3"),
              std::string::npos)
        << messages[r];
  }
  expect_protocol_clean(world, "alltoallv");
}

// Rank 2, the root, never joins: every other rank must fail with PLX_ERROR_TIMEOUT and a
// message naming itself, neither hang nor crash (in-flight requests are abandoned on purpose).
TEST(AlltoallGatherScatterFailure, MissingRankTimesOut) {
  const size_t count = 1009;
  const std::vector<size_t> counts(3, count), displs = {0, count, 2 * count};
  for (const Algorithm* a : kAll) {
    expect_missing_rank_times_out(
        {.what = a->name, .floats = 3 * count}, [&](Transport& t, float* send, float* recv) {
          CollArgs args = make_args({a, count, PLX_FLOAT32, false, 64, 2});
          args.sendbuf = send;
          args.recvbuf = recv;
          args.sendcounts = args.recvcounts = counts.data();
          args.sdispls = args.rdispls = displs.data();
          return a->fn(t, collective_tag_base(1), args);
        });
  }
}

}  // namespace
}  // namespace plexus::comm
