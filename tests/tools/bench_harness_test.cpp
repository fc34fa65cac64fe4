// bench_harness_test.cpp - the pieces of plexus-bench's harness, without ranks: size parsing,
// the size sequence, datatype rounding (half, bfloat16, integer wrap), number formatting, every
// collective's bus factor, nccl-tests' count and size conventions and in-place offsets, the
// expected values against closed forms, and the #wrong count.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "perf/collectives/collectives.h"
#include "perf/harness/options.h"
#include "perf/harness/report.h"
#include "perf/harness/runner.h"
#include "perf/harness/values.h"

namespace plexus::bench {
namespace {

TEST(BenchHarness, ParsesSizesWithSuffixes) {
  EXPECT_EQ(parse_bytes("8"), 8u);
  EXPECT_EQ(parse_bytes("64K"), 65536u);
  EXPECT_EQ(parse_bytes("64k"), 65536u);
  EXPECT_EQ(parse_bytes("32M"), 32u << 20);
  EXPECT_EQ(parse_bytes("1G"), 1u << 30);
  EXPECT_EQ(parse_bytes("2KB"), 2048u);
  EXPECT_FALSE(parse_bytes(""));
  EXPECT_FALSE(parse_bytes("-1"));
  EXPECT_FALSE(parse_bytes("12Q"));
  EXPECT_FALSE(parse_bytes("1K1"));
  EXPECT_FALSE(parse_bytes("99999999999999999999G"));
}

TEST(BenchHarness, SizeSequence) {
  BenchOptions o;
  o.min_bytes = 8;
  o.max_bytes = 65536;
  o.step_factor = 4;
  EXPECT_EQ(message_sizes(o), (std::vector<size_t>{8, 32, 128, 512, 2048, 8192, 32768}));
  o.min_bytes = 1024;
  o.max_bytes = 4096;
  o.step_bytes = 1024;
  EXPECT_EQ(message_sizes(o), (std::vector<size_t>{1024, 2048, 3072, 4096}));
  o.min_bytes = 0;
  o.max_bytes = 8;
  o.step_bytes = 0;
  o.step_factor = 2;
  EXPECT_EQ(message_sizes(o), (std::vector<size_t>{0}));  // 0 * factor would never grow
}

TEST(BenchHarness, HalfRoundsToNearestEven) {
  EXPECT_EQ(round_to_datatype(1.0 + std::ldexp(1.0, -11), PLX_FLOAT16), 1.0);  // tie: to even
  EXPECT_EQ(round_to_datatype(1.0 + 3 * std::ldexp(1.0, -11), PLX_FLOAT16),
            1.0 + std::ldexp(1.0, -9));  // tie: up to even
  EXPECT_EQ(round_to_datatype(65504.0, PLX_FLOAT16), 65504.0);
  EXPECT_TRUE(std::isinf(round_to_datatype(65520.0, PLX_FLOAT16)));
  EXPECT_EQ(round_to_datatype(std::ldexp(1.0, -24), PLX_FLOAT16), std::ldexp(1.0, -24));
  EXPECT_EQ(round_to_datatype(std::ldexp(1.0, -25), PLX_FLOAT16), 0.0);
  EXPECT_EQ(round_to_datatype(3 * std::ldexp(1.0, -25), PLX_FLOAT16), std::ldexp(1.0, -23));
  EXPECT_EQ(round_to_datatype(-2.5, PLX_FLOAT16), -2.5);
  EXPECT_EQ(round_to_datatype(1.0 / 3.0, PLX_FLOAT16), 0x555 * std::ldexp(1.0, -12));
}

TEST(BenchHarness, BfloatAndIntegersRound) {
  EXPECT_EQ(round_to_datatype(1.0 + std::ldexp(1.0, -8), PLX_BFLOAT16), 1.0);
  EXPECT_EQ(round_to_datatype(1.0 + 3 * std::ldexp(1.0, -8), PLX_BFLOAT16),
            1.0 + std::ldexp(1.0, -6));
  EXPECT_EQ(round_to_datatype(255.0, PLX_BFLOAT16), 255.0);  // 8 significant bits
  EXPECT_EQ(round_to_datatype(257.0, PLX_BFLOAT16), 256.0);  // tie: to even
  EXPECT_EQ(round_to_datatype(259.0, PLX_BFLOAT16), 260.0);  // tie: up to even
  EXPECT_EQ(round_to_datatype(128.0, PLX_INT8), -128.0);
  EXPECT_EQ(round_to_datatype(-1.0, PLX_UINT8), 255.0);
  EXPECT_EQ(round_to_datatype(-1.0, PLX_UINT32), 4294967295.0);
  EXPECT_EQ(round_to_datatype(-7.0, PLX_INT64), -7.0);
}

TEST(BenchHarness, NamesRoundTrip) {
  for (int t = 0; t < PLX_NUM_DATATYPES; ++t) {
    auto d = static_cast<plx_datatype_t>(t);
    EXPECT_EQ(parse_datatype(datatype_name(d)), d);
  }
  for (int o = 0; o < PLX_NUM_OPS; ++o) {
    auto op = static_cast<plx_red_op_t>(o);
    EXPECT_EQ(parse_op(op_name(op)), op);
  }
  EXPECT_EQ(parse_datatype("bf16"), PLX_BFLOAT16);
  EXPECT_FALSE(parse_datatype("complex"));
}

TEST(BenchHarness, FormatsNumbersToWidth) {
  EXPECT_EQ(format_number(12.5, 7), "  12.50");
  EXPECT_EQ(format_number(0.0, 6), "  0.00");
  EXPECT_EQ(format_number(1234.5, 6), "1234.5");
  EXPECT_EQ(format_number(123456.0, 6), "123456");
  EXPECT_EQ(format_number(1234567.0, 6), " 1e+06");
  EXPECT_EQ(format_number(1234567.0, 7), "1234567");
  EXPECT_EQ(format_number(12345678.0, 7), "1.2e+07");
}

TEST(BenchHarness, BusFactors) {
  EXPECT_DOUBLE_EQ(make_allreduce()->bus_factor(4), 1.5);
  EXPECT_DOUBLE_EQ(make_allreduce()->bus_factor(1), 0.0);
  EXPECT_DOUBLE_EQ(make_broadcast()->bus_factor(7), 1.0);
  EXPECT_DOUBLE_EQ(make_reduce()->bus_factor(7), 1.0);
  EXPECT_DOUBLE_EQ(make_sendrecv()->bus_factor(7), 1.0);
  for (auto make : {make_reduce_scatter, make_allgather, make_alltoall, make_gather,
                    make_scatter}) {
    EXPECT_DOUBLE_EQ(make()->bus_factor(4), 0.75) << make()->name();
    EXPECT_DOUBLE_EQ(make()->bus_factor(1), 0.0) << make()->name();
  }
}

// nccl-tests' sizes: a 1200-element message on 4 ranks is count 300 per rank for the per-rank
// collectives, whose size column is then the larger buffer, 4 * 300 elements.
TEST(BenchHarness, CountsAndSizesFollowNcclTests) {
  struct Want {
    std::unique_ptr<Collective> c;
    size_t count, send, recv, send_offset, recv_offset;
  };
  const int n = 4, r = 3;
  Want wants[] = {
      {make_allreduce(), 1203, 1203, 1203, 0, 0},
      {make_broadcast(), 1203, 1203, 1203, 0, 0},
      {make_reduce(), 1203, 1203, 1203, 0, 0},
      {make_sendrecv(), 1203, 1203, 1203, 0, 0},
      {make_reduce_scatter(), 300, 1200, 300, 0, 900},
      {make_allgather(), 300, 300, 1200, 900, 0},
      {make_alltoall(), 300, 1200, 1200, 0, 0},
      {make_gather(), 300, 300, 1200, 900, 0},
      {make_scatter(), 300, 1200, 300, 0, 900},
  };
  for (const Want& w : wants) {
    CaseParams p{w.c->count_column(1203, n), PLX_INT32, PLX_SUM, 0, r, n};
    EXPECT_EQ(p.count, w.count) << w.c->name();
    EXPECT_EQ(w.c->send_count(p), w.send) << w.c->name();
    EXPECT_EQ(w.c->recv_count(p), w.recv) << w.c->name();
    EXPECT_EQ(w.c->in_place_send_offset(p), w.send_offset) << w.c->name();
    EXPECT_EQ(w.c->in_place_recv_offset(p), w.recv_offset) << w.c->name();
    EXPECT_EQ(row_bytes(*w.c, p), std::max(w.send, w.recv) * 4) << w.c->name();
  }
}

// Inputs (7i + 5r) % 11 on 3 ranks, written out, for the collectives that move data unchanged.
double v(int rank, size_t i) { return static_cast<double>((7 * i + 5 * rank) % 11); }

TEST(BenchHarness, DataMovementExpectedValuesAreClosedForm) {
  const int n = 3;
  for (int r = 0; r < n; ++r) {
    CaseParams p{10, PLX_FLOAT32, PLX_SUM, 1, r, n};
    for (size_t j = 0; j < 30; ++j) {
      EXPECT_EQ(make_allgather()->expected(p, j), v(static_cast<int>(j / 10), j % 10)) << j;
      EXPECT_EQ(make_gather()->expected(p, j), v(static_cast<int>(j / 10), j % 10)) << j;
      // Block j/10 of rank r's recv is block r of rank j/10's send.
      EXPECT_EQ(make_alltoall()->expected(p, j), v(static_cast<int>(j / 10), 10 * r + j % 10))
          << j;
    }
    for (size_t i = 0; i < 10; ++i) {
      EXPECT_EQ(make_scatter()->expected(p, i), v(1, 10 * r + i)) << i;
      EXPECT_EQ(make_sendrecv()->expected(p, i), v((r + 2) % 3, i)) << i;
      EXPECT_EQ(make_allgather()->input(p, r, i), v(r, i)) << i;
    }
    // Only the root's scatter input is data; the others hold the sentinel so an in-place
    // receive that is never written is caught.
    EXPECT_EQ(make_scatter()->input(p, r, 4), r == 1 ? v(1, 4) : -1.0);
    EXPECT_EQ(make_gather()->checked_count(p), r == 1 ? 30u : 0u);
    EXPECT_EQ(make_reduce()->checked_count(p), r == 1 ? 10u : 0u);
    EXPECT_EQ(make_scatter()->checked_count(p), 10u);
  }
}

TEST(BenchHarness, ReduceScatterExpectsTheSumOfItsBlock) {
  auto rs = make_reduce_scatter();
  auto reduce = make_reduce();
  for (int r = 0; r < 3; ++r) {
    CaseParams p{10, PLX_FLOAT32, PLX_SUM, 0, r, 3};
    for (size_t i = 0; i < 10; ++i) {
      const size_t k = 10 * r + i;  // the send index rank r receives at i
      EXPECT_EQ(rs->expected(p, i), v(0, k) + v(1, k) + v(2, k)) << r << " " << i;
      EXPECT_EQ(reduce->expected(p, k), v(0, k) + v(1, k) + v(2, k)) << k;
    }
    p.op = PLX_MAX;
    for (size_t i = 0; i < 10; ++i) {
      const size_t k = 10 * r + i;
      EXPECT_EQ(rs->expected(p, i), std::max({v(0, k), v(1, k), v(2, k)})) << i;
    }
  }
}

TEST(BenchHarness, AllreduceExpectedValuesAreClosedForm) {
  auto c = make_allreduce();
  CaseParams p{100, PLX_FLOAT32, PLX_SUM, 0, 0, 3};
  // Inputs (7i + 5r) % 11 for r = 0, 1, 2.
  for (size_t i = 0; i < 100; ++i) {
    double want = 0, lo = 1e9, hi = -1e9;
    for (int r = 0; r < 3; ++r) {
      double v = static_cast<double>((7 * i + 5 * r) % 11);
      want += v;
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
    p.op = PLX_SUM;
    EXPECT_EQ(c->expected(p, i), want) << i;
    p.op = PLX_MIN;
    EXPECT_EQ(c->expected(p, i), lo) << i;
    p.op = PLX_MAX;
    EXPECT_EQ(c->expected(p, i), hi) << i;
    p.op = PLX_PROD;
    EXPECT_EQ(c->expected(p, i), 1.0 + static_cast<double>(i % 3)) << i;
    p.op = PLX_AVG;
    EXPECT_DOUBLE_EQ(c->expected(p, i), want / 3) << i;
    p.datatype = PLX_INT32;
    EXPECT_EQ(c->expected(p, i), std::trunc(want / 3)) << i;
    p.datatype = PLX_FLOAT32;
  }
}

TEST(BenchHarness, BroadcastExpectsTheRootsInput) {
  auto c = make_broadcast();
  CaseParams p{50, PLX_INT32, PLX_SUM, 2, 0, 4};
  for (size_t i = 0; i < 50; ++i) EXPECT_EQ(c->expected(p, i), c->input(p, 2, i)) << i;
}

TEST(BenchHarness, CountsWrongElements) {
  auto c = make_allreduce();
  CaseParams p{64, PLX_FLOAT16, PLX_SUM, 0, 1, 3};
  std::vector<uint16_t> recv(64);
  for (size_t i = 0; i < 64; ++i) store_element(recv.data(), i, p.datatype, c->expected(p, i));
  EXPECT_EQ(count_wrong(*c, p, recv.data()), 0);
  store_element(recv.data(), 5, p.datatype, c->expected(p, 5) + 1);
  store_element(recv.data(), 63, p.datatype, -1);
  EXPECT_EQ(count_wrong(*c, p, recv.data()), 2);

  // avg on half may be one unit in the last place off (the division rounds), not two.
  p.op = PLX_AVG;
  for (size_t i = 0; i < 64; ++i) store_element(recv.data(), i, p.datatype, c->expected(p, i));
  EXPECT_EQ(count_wrong(*c, p, recv.data()), 0);
  const double v = round_to_datatype(c->expected(p, 7), p.datatype);
  ASSERT_GE(v, 1.0);
  const double ulp = std::ldexp(1.0, static_cast<int>(std::floor(std::log2(v))) - 10);
  store_element(recv.data(), 7, p.datatype, v + ulp);
  EXPECT_EQ(count_wrong(*c, p, recv.data()), 0);
  store_element(recv.data(), 7, p.datatype, v + 2 * ulp);
  EXPECT_EQ(count_wrong(*c, p, recv.data()), 1);
}

}  // namespace
}  // namespace plexus::bench
