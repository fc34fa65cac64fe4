// reduce_scatter_allgather_thread_test.cpp - unit tests of ring_reduce_scatter,
// recursive_halving_reduce_scatter, ring_allgather and bruck_allgather on the in-process strict
// transport (tests/support/thread_transport.h): ranks are threads, sends are rendezvous, receive
// sizes must match exactly, duplicate tags and unmatched messages are errors.
//
// World sizes 1..8 (powers of two and not, so the halving algorithm folds and Bruck's last step
// is partial); counts 1, 2, n-1, 1009 (prime) and 2^18+3; chunk_bytes 64 (deep pipelines) and
// 1 MiB (one slice); every datatype, every op for reduce-scatter; in place and out of place, as
// algorithms.h defines them. Every buffer has guard bytes on both sides; sendbuf (in place: all
// of it but block r) must come back unchanged. The case lists run on
// tests/comm/thread_test_harness.h.
//
// Expected values are closed forms (tests/comm/collective_reference.h): reduce-scatter input
// element i of rank r is allreduce_input(op, dt, r, i) over the n*count vector, so rank r's
// result is the allreduce reference at indices r*count.., exact in every datatype whatever the
// combining order; allgather block g is broadcast_pattern(dt, g). A failure names the algorithm,
// case, rank and index.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <iterator>
#include <ostream>
#include <string>
#include <vector>

#include "comm/algorithms/algorithms.h"
#include "tests/comm/thread_test_harness.h"

namespace plexus::comm {
namespace {

using namespace plexus::test;  // NOLINT: the harness and reference helpers

struct Algorithm {
  const char* name;
  AlgorithmFn fn;
  bool reduces;  // reduce-scatter (true) or allgather
};

const Algorithm kAlgorithms[] = {
    {"ring_reduce_scatter", ring_reduce_scatter, true},
    {"recursive_halving_reduce_scatter", recursive_halving_reduce_scatter, true},
    {"ring_allgather", ring_allgather, false},
    {"bruck_allgather", bruck_allgather, false},
};

struct Case {
  size_t count;
  plx_datatype_t dt;
  plx_red_op_t op;
  bool in_place;
  size_t chunk_bytes;

  CallSpec spec() const { return {count, dt, op, in_place, chunk_bytes}; }
  std::string name(const Algorithm& a, int n) const {
    return case_name(a.name, n, spec(), a.reduces ? std::string(" ") + op_name(op) : "");
  }
};


CollArgs make_args(Collective collective, const void* send, void* recv, const Case& c) {
  CollArgs args = args_of(collective, c.spec());
  args.sendbuf = send;
  args.recvbuf = recv;
  return args;
}

// send[n*count] -> recv[count]; in place, recv is block r of send.
std::string run_reduce_scatter(const Algorithm& a, const Case& c, Transport& t, uint64_t tag_base) {
  const int n = t.size(), r = t.rank();
  const size_t elem = datatype_bytes(c.dt), block_bytes = c.count * elem;
  Guarded send(n * block_bytes), recv(block_bytes);
  fill_periodic(send.data(), n * c.count, elem, input_pattern(c.op, c.dt, r));
  const Guarded original = send;
  unsigned char* out = c.in_place ? send.data() + r * block_bytes : recv.data();
  const plx_result_t rc =
      a.fn(t, tag_base, make_args(Collective::ReduceScatter, send.data(), out, c));
  if (rc != PLX_SUCCESS) return "returned " + std::to_string(rc) + ": " + last_error();
  const std::vector<unsigned char> want =
      shifted(expected_pattern(c.op, c.dt, n), elem, r * c.count % input_period(c.op));
  const std::string why = check_periodic(out, c.count, c.dt, want);
  if (!why.empty()) return why;
  if (!send.guards_intact() || !recv.guards_intact()) return "wrote outside a buffer";
  if (c.in_place) {  // every block but r unchanged
    std::memcpy(send.data() + r * block_bytes, original.data() + r * block_bytes, block_bytes);
  }
  if (!(send == original)) return "modified sendbuf outside the output block";
  return "";
}

// send[count] -> recv[n*count]; in place, send is block r of recv.
std::string run_allgather(const Algorithm& a, const Case& c, Transport& t, uint64_t tag_base) {
  const int n = t.size(), r = t.rank();
  const size_t elem = datatype_bytes(c.dt), block_bytes = c.count * elem;
  Guarded send(block_bytes), recv(n * block_bytes);
  fill_periodic(recv.data(), n * c.count, elem, broadcast_pattern(c.dt, n + 1));  // stale data
  unsigned char* own = c.in_place ? recv.data() + r * block_bytes : send.data();
  fill_periodic(own, c.count, elem, broadcast_pattern(c.dt, r));
  const Guarded original = send;
  const plx_result_t rc = a.fn(t, tag_base, make_args(Collective::Allgather, own, recv.data(), c));
  if (rc != PLX_SUCCESS) return "returned " + std::to_string(rc) + ": " + last_error();
  for (int g = 0; g < n; ++g) {
    const std::string why =
        check_periodic(recv.data() + g * block_bytes, c.count, c.dt, broadcast_pattern(c.dt, g));
    if (!why.empty()) return "block " + std::to_string(g) + " " + why;
  }
  if (!send.guards_intact() || !recv.guards_intact()) return "wrote outside a buffer";
  if (!(send == original)) return "modified sendbuf";
  return "";
}

// Runs every case of algorithm `a` on an n-rank thread world; each rank checks its own results.
void run_cases(const Algorithm& a, int n, const std::vector<Case>& cases, size_t eager_bytes = 0) {
  const auto run = [&](size_t k, Transport& t, uint64_t tag_base) {
    return a.reduces ? run_reduce_scatter(a, cases[k], t, tag_base)
                     : run_allgather(a, cases[k], t, tag_base);
  };
  const auto name = [&](size_t k) { return cases[k].name(a, n); };
  run_case_list(n, cases.size(), run, name, eager_bytes);
}

// Every datatype (and op, when the algorithm reduces), both placements, both chunk sizes.
std::vector<Case> small_cases(const Algorithm& a, int n) {
  std::vector<Case> cases;
  const int ops = a.reduces ? PLX_NUM_OPS : 1;
  for (size_t count : small_counts(n)) {
    for (size_t chunk : {size_t{64}, size_t{1} << 20}) {
      for (int dt = 0; dt < PLX_NUM_DATATYPES; ++dt) {
        for (int op = 0; op < ops; ++op) {
          for (bool in_place : {false, true}) {
            cases.push_back({count, static_cast<plx_datatype_t>(dt), static_cast<plx_red_op_t>(op),
                             in_place, chunk});
          }
        }
      }
    }
  }
  return cases;
}

struct Param {
  size_t algorithm;
  int n;
};

void PrintTo(const Param& p, std::ostream* os) {
  *os << kAlgorithms[p.algorithm].name << " n=" << p.n;
}

class ReduceScatterAllgather : public ::testing::TestWithParam<Param> {};

TEST_P(ReduceScatterAllgather, EveryDatatypeOpAndSmallCount) {
  const Algorithm& a = kAlgorithms[GetParam().algorithm];
  run_cases(a, GetParam().n, small_cases(a, GetParam().n));
}

TEST_P(ReduceScatterAllgather, LargeCount) {
  const Algorithm& a = kAlgorithms[GetParam().algorithm];
  const size_t count = (size_t{1} << 18) + 3;
  std::vector<Case> cases = {
      {count, PLX_FLOAT32, PLX_SUM, false, size_t{1} << 20},
      {count, PLX_BFLOAT16, PLX_AVG, true, size_t{1} << 20},
      {count, PLX_INT8, PLX_PROD, false, 64},  // 4097 slices per block
  };
  run_cases(a, GetParam().n, cases);
}

TEST_P(ReduceScatterAllgather, EagerSendsArriveBeforeTheirReceives) {
  // Eager sends complete at once, so fast ranks run ahead into later steps and later calls.
  const Algorithm& a = kAlgorithms[GetParam().algorithm];
  std::vector<Case> cases;
  for (plx_datatype_t dt : {PLX_INT32, PLX_FLOAT16, PLX_FLOAT64}) {
    cases.push_back({1009, dt, PLX_SUM, false, 64});
    cases.push_back({5, dt, PLX_AVG, true, 64});
    cases.push_back({1009, dt, PLX_MAX, true, 1 << 20});
  }
  run_cases(a, GetParam().n, cases, /*eager_bytes=*/1 << 12);
}

std::vector<Param> all_params() {
  std::vector<Param> params;
  for (size_t a = 0; a < std::size(kAlgorithms); ++a) {
    for (int n = 1; n <= 8; ++n) params.push_back({a, n});
  }
  return params;
}

INSTANTIATE_TEST_SUITE_P(Algorithms, ReduceScatterAllgather, ::testing::ValuesIn(all_params()),
                         [](const auto& info) {
                           return std::string(kAlgorithms[info.param.algorithm].name) + "_" +
                                  std::to_string(info.param.n) + "ranks";
                         });

// A rank that never joins: the others must fail with PLX_ERROR_TIMEOUT and a message naming
// themselves, neither hang nor crash (their in-flight requests are abandoned, see pipeline.h).
TEST(ReduceScatterAllgatherFailure, MissingRankTimesOut) {
  for (const Algorithm& a : kAlgorithms) {
    for (int n : {3, 4}) {
      expect_missing_rank_times_out(
          {.what = a.name, .ranks = n, .missing = n - 1, .floats = n * size_t{1009}},
          [&](Transport& t, float* send, float* recv) {
            CollArgs args;
            args.sendbuf = send;
            args.recvbuf = recv;
            args.count = 1009;
            args.chunk_bytes = 64;
            return a.fn(t, collective_tag_base(1), args);
          });
    }
  }
}

}  // namespace
}  // namespace plexus::comm
