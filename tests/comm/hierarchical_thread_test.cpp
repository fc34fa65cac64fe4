// hierarchical_thread_test.cpp - unit tests of the hierarchical algorithms (allreduce, reduce,
// broadcast, reduce_scatter, allgather) on the in-process strict transport
// (tests/support/thread_transport.h): ranks are threads, sends are rendezvous, receive sizes
// must match exactly, duplicate tags and unmatched messages are errors.
//
// Host layouts (hosts x ranks, as host ids per rank): 1x1, 1x4, 2x2, 2x3, 3x2, one rank per host
// (4x1), uneven 3+2, interleaved hosts (ranks 0,2 on A and 1,3 on B) and interleaved uneven
// (A A B A B). Every datatype, every op (for the reductions), in place and out of place, counts
// 1 and 2 (fewer elements than lanes: empty blocks) in one slice and 1009 (prime) in 64-byte
// slices; roots rotate over the ranks; guard bytes around every buffer. A large count and eager
// sends (ranks running ahead into later phases and calls) on the uneven layouts. The allreduce
// with halving lanes on 3 to 9 hosts.
//
// Expected values are the closed forms of tests/comm/collective_reference.h, exact in every
// datatype whatever the combining order, so the check is bit for bit; a failure names the
// algorithm, layout, case, rank and index.
#include <gtest/gtest.h>

#include <cstring>
#include <iterator>
#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "comm/algorithms/algorithms.h"
#include "comm/algorithms/hierarchical_pipeline.h"
#include "comm/algorithms/host_layout.h"
#include "tests/comm/thread_test_harness.h"

namespace plexus::comm {
namespace {

using namespace plexus::test;  // NOLINT: the harness and reference helpers

// The layout the algorithms under test see (set before each world runs; read by its threads).
const HostLayout* g_layout = nullptr;

template <AlgorithmFn F>
plx_result_t on_layout(Transport& t, uint64_t tag_base, const CollArgs& args) {
  CollArgs with_hosts = args;
  with_hosts.hosts = g_layout;
  return F(t, tag_base, with_hosts);
}

// The allreduce with its lanes by recursive halving and doubling (lane_halving.h), as the cost
// model picks them on many hosts.
plx_result_t halving_lanes(Transport& t, uint64_t tag_base, const CollArgs& args) {
  CollArgs with_hosts = args;
  with_hosts.hosts = g_layout;
  with_hosts.lane_halving = true;
  return hierarchical_allreduce(t, tag_base, with_hosts);
}

// The allreduce with lane steps of 8 chunks, as the cost model's plan takes them on RDMA-class
// links (hierarchical_segments.h hierarchical_lane_step_limit): each step one message past the
// chunk; the ring's or halving's lanes.
template <bool Halving>
plx_result_t long_lane_steps(Transport& t, uint64_t tag_base, const CollArgs& args) {
  CollArgs with_hosts = args;
  with_hosts.hosts = g_layout;
  with_hosts.lane_halving = Halving;
  with_hosts.lane_step_bytes = 8 * args.chunk_bytes;
  return hierarchical_allreduce(t, tag_base, with_hosts);
}

enum class Kind { Allreduce, Reduce, Broadcast, ReduceScatter, Allgather };

struct Algorithm {
  const char* name;
  Kind kind;
  AlgorithmFn fn;
};

const Algorithm kAlgorithms[] = {
    {"hierarchical_allreduce", Kind::Allreduce, on_layout<hierarchical_allreduce>},
    {"hierarchical_reduce", Kind::Reduce, on_layout<hierarchical_reduce>},
    {"hierarchical_broadcast", Kind::Broadcast, on_layout<hierarchical_broadcast>},
    {"hierarchical_reduce_scatter", Kind::ReduceScatter, on_layout<hierarchical_reduce_scatter>},
    {"hierarchical_allgather", Kind::Allgather, on_layout<hierarchical_allgather>},
};

struct Layout {
  const char* name;
  std::vector<std::string> host_ids;  // per rank
};

const Layout kLayouts[] = {
    {"1x1", {"A"}},
    {"1x4", {"A", "A", "A", "A"}},
    {"2x2", {"A", "A", "B", "B"}},
    {"2x3", {"A", "A", "A", "B", "B", "B"}},
    {"3x2", {"A", "A", "B", "B", "C", "C"}},
    {"4x1", {"A", "B", "C", "D"}},
    {"uneven_3p2", {"A", "A", "A", "B", "B"}},
    {"interleaved_2x2", {"A", "B", "A", "B"}},
    {"interleaved_3p2", {"A", "A", "B", "A", "B"}},
};

bool reduces(Kind k) {
  return k == Kind::Allreduce || k == Kind::Reduce || k == Kind::ReduceScatter;
}
bool rooted(Kind k) { return k == Kind::Reduce || k == Kind::Broadcast; }

struct Case {
  CallSpec spec;
  std::string name(const Algorithm& a, const Layout& l, int n) const {
    std::string detail = std::string(" layout=") + l.name;
    if (reduces(a.kind)) detail += std::string(" ") + op_name(spec.op);
    if (rooted(a.kind)) detail += " root=" + std::to_string(spec.root);
    return case_name(a.name, n, spec, detail);
  }
};


std::string failed(plx_result_t rc) {
  return "returned " + std::to_string(rc) + ": " + plexus::last_error();
}

// Reduce to c.root; non-roots pass recvbuf NULL on even counts, else a buffer that must stay
// untouched.
std::string run_reduce(const Algorithm& a, const CallSpec& c, Transport& t, uint64_t tag_base) {
  const int n = t.size(), r = t.rank();
  const bool root = r == c.root;
  const size_t elem = datatype_bytes(c.dt);
  Guarded send(c.count * elem), recv(c.count * elem);
  fill_periodic(send.data(), c.count, elem, input_pattern(c.op, c.dt, r));
  if (root && c.in_place) recv = send;
  const Guarded original = send;
  CollArgs args = args_of(Collective::Reduce, c);
  args.sendbuf = root && c.in_place ? recv.data() : send.data();
  args.recvbuf = root || c.count % 2 == 1 ? recv.data() : nullptr;
  const plx_result_t rc = a.fn(t, tag_base, args);
  if (rc != PLX_SUCCESS) return failed(rc);
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

// send[n*count] -> recv[count]; in place, recv is block r of send.
std::string run_reduce_scatter(const Algorithm& a, const CallSpec& c, Transport& t,
                               uint64_t tag_base) {
  const int n = t.size(), r = t.rank();
  const size_t elem = datatype_bytes(c.dt), block_bytes = c.count * elem;
  Guarded send(n * block_bytes), recv(block_bytes);
  fill_periodic(send.data(), n * c.count, elem, input_pattern(c.op, c.dt, r));
  const Guarded original = send;
  unsigned char* out = c.in_place ? send.data() + r * block_bytes : recv.data();
  CollArgs args = args_of(Collective::ReduceScatter, c);
  args.sendbuf = send.data();
  args.recvbuf = out;
  const plx_result_t rc = a.fn(t, tag_base, args);
  if (rc != PLX_SUCCESS) return failed(rc);
  const std::vector<unsigned char> want =
      shifted(expected_pattern(c.op, c.dt, n), elem, r * c.count % input_period(c.op));
  const std::string why = check_periodic(out, c.count, c.dt, want);
  if (!why.empty()) return why;
  if (!send.guards_intact() || !recv.guards_intact()) return "wrote outside a buffer";
  if (c.in_place) {  // every block but r unchanged
    std::memcpy(send.data() + r * block_bytes, original.data() + r * block_bytes, block_bytes);
  }
  if (!(send == original)) return "modified sendbuf outside the output block";
  if (!c.in_place && !recv.guards_intact()) return "wrote outside recvbuf";
  return "";
}

// send[count] -> recv[n*count]; in place, send is block r of recv.
std::string run_allgather(const Algorithm& a, const CallSpec& c, Transport& t, uint64_t tag_base) {
  const int n = t.size(), r = t.rank();
  const size_t elem = datatype_bytes(c.dt), block_bytes = c.count * elem;
  Guarded send(block_bytes), recv(n * block_bytes);
  fill_periodic(recv.data(), n * c.count, elem, broadcast_pattern(c.dt, n + 1));  // stale data
  unsigned char* own = c.in_place ? recv.data() + r * block_bytes : send.data();
  fill_periodic(own, c.count, elem, broadcast_pattern(c.dt, r));
  const Guarded original = send;
  CollArgs args = args_of(Collective::Allgather, c);
  args.sendbuf = own;
  args.recvbuf = recv.data();
  const plx_result_t rc = a.fn(t, tag_base, args);
  if (rc != PLX_SUCCESS) return failed(rc);
  for (int g = 0; g < n; ++g) {
    const std::string why =
        check_periodic(recv.data() + g * block_bytes, c.count, c.dt, broadcast_pattern(c.dt, g));
    if (!why.empty()) return "block " + std::to_string(g) + " " + why;
  }
  if (!send.guards_intact() || !recv.guards_intact()) return "wrote outside a buffer";
  if (!(send == original)) return "modified sendbuf";
  return "";
}

std::string run_case(const Algorithm& a, const CallSpec& c, Transport& t, uint64_t tag_base) {
  switch (a.kind) {
    case Kind::Allreduce: return check_allreduce(a.fn, c, t, tag_base);
    case Kind::Reduce: return run_reduce(a, c, t, tag_base);
    case Kind::Broadcast: return check_broadcast(a.fn, c, t, tag_base);
    case Kind::ReduceScatter: return run_reduce_scatter(a, c, t, tag_base);
    case Kind::Allgather: return run_allgather(a, c, t, tag_base);
  }
  return "unknown kind";
}

void run_cases(const Algorithm& a, const Layout& l, const std::vector<Case>& cases,
               size_t eager_bytes = 0) {
  const HostLayout layout = host_layout(l.host_ids);
  g_layout = &layout;
  const int n = layout.size();
  run_case_list(
      n, cases.size(),
      [&](size_t k, Transport& t, uint64_t tag_base) {
        return run_case(a, cases[k].spec, t, tag_base);
      },
      [&](size_t k) { return cases[k].name(a, l, n); }, eager_bytes);
  g_layout = nullptr;
}

// Every datatype (and op, when the algorithm reduces) in and out of place: counts 1 and 2 in one
// slice, 1009 in 64-byte slices; roots rotate over the ranks.
std::vector<Case> matrix(const Algorithm& a, int n) {
  std::vector<Case> cases;
  const int ops = reduces(a.kind) ? PLX_NUM_OPS : 1;
  int root = 0;
  for (const auto& [count, chunk] : {std::pair<size_t, size_t>{1, 1 << 20}, {2, 1 << 20},
                                     {1009, 64}}) {
    for (int dt = 0; dt < PLX_NUM_DATATYPES; ++dt) {
      for (int op = 0; op < ops; ++op) {
        for (bool in_place : {false, true}) {
          CallSpec spec{count, static_cast<plx_datatype_t>(dt), static_cast<plx_red_op_t>(op),
                        in_place, chunk, rooted(a.kind) ? root++ % n : 0};
          cases.push_back({spec});
        }
      }
    }
  }
  return cases;
}

struct Param {
  size_t algorithm;
  size_t layout;
};

void PrintTo(const Param& p, std::ostream* os) {
  *os << kAlgorithms[p.algorithm].name << " on " << kLayouts[p.layout].name;
}

class Hierarchical : public ::testing::TestWithParam<Param> {};

TEST_P(Hierarchical, EveryDatatypeOpAndPlacement) {
  const Algorithm& a = kAlgorithms[GetParam().algorithm];
  const Layout& l = kLayouts[GetParam().layout];
  run_cases(a, l, matrix(a, static_cast<int>(l.host_ids.size())));
}

std::vector<Param> all_params() {
  std::vector<Param> params;
  for (size_t a = 0; a < std::size(kAlgorithms); ++a) {
    for (size_t l = 0; l < std::size(kLayouts); ++l) params.push_back({a, l});
  }
  return params;
}

INSTANTIATE_TEST_SUITE_P(Layouts, Hierarchical, ::testing::ValuesIn(all_params()),
                         [](const auto& info) {
                           return std::string(kAlgorithms[info.param.algorithm].name) + "_" +
                                  kLayouts[info.param.layout].name;
                         });

// A large count on the uneven layouts: many slices per lane and per host, in both slice sizes.
TEST(HierarchicalLarge, UnevenLayoutsLargeCount) {
  const size_t count = (size_t{1} << 16) + 3;
  for (size_t l : {size_t{6}, size_t{8}}) {
    for (const Algorithm& a : kAlgorithms) {
      const int n = static_cast<int>(kLayouts[l].host_ids.size());
      const std::vector<Case> cases = {
          {{count, PLX_FLOAT32, PLX_SUM, false, size_t{1} << 20, n - 1}},
          {{count, PLX_BFLOAT16, PLX_AVG, true, 4096, 1}},
          {{count, PLX_INT8, PLX_MAX, false, 64, 0}},
      };
      run_cases(a, kLayouts[l], cases);
    }
  }
}

// Eager sends complete at once, so fast ranks run ahead into later phases and later calls.
TEST(HierarchicalEager, RanksRunAheadIntoLaterPhases) {
  for (size_t l : {size_t{4}, size_t{6}, size_t{8}}) {
    for (const Algorithm& a : kAlgorithms) {
      std::vector<Case> cases;
      int root = 0;
      for (plx_datatype_t dt : {PLX_INT32, PLX_FLOAT16, PLX_FLOAT64}) {
        cases.push_back({{1009, dt, PLX_SUM, false, 64, root++}});
        cases.push_back({{5, dt, PLX_AVG, true, 64, root++}});
        cases.push_back({{1009, dt, PLX_MAX, true, 1 << 20, root++}});
      }
      const int n = static_cast<int>(kLayouts[l].host_ids.size());
      for (Case& c : cases) c.spec.root %= n;
      run_cases(a, kLayouts[l], cases, /*eager_bytes=*/1 << 12);
    }
  }
}

// Halving lanes on 3 to 9 hosts: powers of two (4, 8: three halving levels), one host (3, 5, 9)
// and three hosts (7) outside the halving, hosts of uneven sizes (lanes with holders on some
// hosts only), interleaved hosts.
const Algorithm kHalving{"hierarchical_allreduce_halving_lanes", Kind::Allreduce, halving_lanes};
const Layout kHalvingLayouts[] = {
    {"3x2", {"A", "A", "B", "B", "C", "C"}},
    {"4x2", {"A", "A", "B", "B", "C", "C", "D", "D"}},
    {"5x2", {"A", "A", "B", "B", "C", "C", "D", "D", "E", "E"}},
    {"7x2", {"A", "A", "B", "B", "C", "C", "D", "D", "E", "E", "F", "F", "G", "G"}},
    {"8x2", {"A", "A", "B", "B", "C", "C", "D", "D", "E", "E", "F", "F", "G", "G", "H", "H"}},
    {"9_hosts", {"A", "A", "B", "C", "D", "E", "F", "G", "H", "I"}},
    {"uneven_2p3p1p2", {"A", "A", "B", "B", "B", "C", "D", "D"}},
    {"interleaved_3x2", {"A", "B", "C", "A", "B", "C"}},
};

// Every datatype and op, in and out of place (counts 1 and 2 leave shards empty).
TEST(HierarchicalHalving, EveryDatatypeOpAndPlacementOnThreeToNineHosts) {
  for (const Layout& l : kHalvingLayouts) {
    run_cases(kHalving, l, matrix(kHalving, static_cast<int>(l.host_ids.size())));
  }
}

// Eager sends: ranks run ahead into later steps, segments and calls.
TEST(HierarchicalHalving, EagerSendsRunAheadOnThreeToNineHosts) {
  const std::vector<Case> eager = {{{1009, PLX_FLOAT32, PLX_SUM, false, 64, 0}},
                                   {{5, PLX_BFLOAT16, PLX_AVG, true, 64, 0}},
                                   {{(size_t{1} << 14) + 3, PLX_INT64, PLX_MAX, true, 4096, 0}}};
  for (const Layout& l : kHalvingLayouts) run_cases(kHalving, l, eager, /*eager_bytes=*/1 << 12);
}

// Lane steps of 8 chunks (the cost model's longer steps): several segments, each step one
// message of up to 8 chunks, ring and halving lanes, eager sends running ahead or not.
TEST(HierarchicalLongLaneSteps, StepsPastTheChunkOnRingAndHalvingLanes) {
  const Algorithm ring{"hierarchical_allreduce_long_ring_steps", Kind::Allreduce,
                       long_lane_steps<false>};
  const Algorithm halving{"hierarchical_allreduce_long_halving_steps", Kind::Allreduce,
                          long_lane_steps<true>};
  const std::vector<Case> cases = {{{(size_t{1} << 15) + 3, PLX_FLOAT32, PLX_SUM, false, 64, 0}},
                                   {{4099, PLX_BFLOAT16, PLX_AVG, true, 256, 0}},
                                   {{1009, PLX_INT64, PLX_MAX, false, 64, 0}}};
  for (const Layout* l : {&kHalvingLayouts[0], &kHalvingLayouts[2], &kHalvingLayouts[6]}) {
    for (const Algorithm* a : {&ring, &halving}) {
      run_cases(*a, *l, cases);
      run_cases(*a, *l, cases, /*eager_bytes=*/1 << 12);
    }
  }
}

// The lanes' staging pool (hierarchical_pipeline.h): a handed-back buffer serves any later lane
// it is large enough for, the smallest such first; only a larger need allocates.
TEST(HierarchicalStagingPool, ReusesTheSmallestBufferLargeEnough) {
  StagingPool pool;
  size_t a_size = 0, b_size = 0, c_size = 0;
  std::unique_ptr<unsigned char[]> a = pool.take(100, &a_size);
  EXPECT_EQ(a_size, 100u);
  EXPECT_EQ(pool.allocations(), 1u);
  unsigned char* const a_at = a.get();
  pool.give(std::move(a), a_size);
  std::unique_ptr<unsigned char[]> b = pool.take(50, &b_size);  // the 100-byte one again
  EXPECT_EQ(b.get(), a_at);
  EXPECT_EQ(b_size, 100u);
  std::unique_ptr<unsigned char[]> c = pool.take(200, &c_size);  // none free: a new one
  EXPECT_EQ(c_size, 200u);
  EXPECT_EQ(pool.allocations(), 2u);
  unsigned char* const c_at = c.get();
  pool.give(std::move(c), c_size);
  pool.give(std::move(b), b_size);
  size_t d_size = 0, e_size = 0;
  std::unique_ptr<unsigned char[]> d = pool.take(100, &d_size);  // the 100, not the 200
  EXPECT_EQ(d.get(), a_at);
  std::unique_ptr<unsigned char[]> e = pool.take(101, &e_size);  // the 200
  EXPECT_EQ(e.get(), c_at);
  EXPECT_EQ(e_size, 200u);
  EXPECT_EQ(pool.allocations(), 2u);
  pool.give(nullptr, 0);  // a leaked lane's empty staging: nothing kept
  size_t f_size = 0;
  EXPECT_NE(pool.take(1, &f_size), nullptr);
  EXPECT_EQ(pool.allocations(), 3u);
}

// With NULL hosts every algorithm runs as on one host.
TEST(HierarchicalNoLayout, NullHostsMeansOneHost) {
  for (const Algorithm& a : kAlgorithms) {
    const std::vector<Case> cases = {{{1009, PLX_INT64, PLX_SUM, false, 64, 2}},
                                     {{7, PLX_FLOAT32, PLX_PROD, true, 1 << 20, 0}}};
    const int n = 5;
    g_layout = nullptr;
    run_case_list(
        n, cases.size(),
        [&](size_t k, Transport& t, uint64_t tag_base) {
          return run_case(a, cases[k].spec, t, tag_base);
        },
        [&](size_t k) { return std::string(a.name) + " null hosts case " + std::to_string(k); });
  }
}

// A layout that does not describe the communicator is an internal error naming the algorithm and
// the rank, on every rank, with nothing sent.
TEST(HierarchicalNoLayout, MismatchedLayoutIsAnInternalError) {
  const HostLayout three = host_layout(std::vector<std::string>{"A", "A", "B"});
  test::ThreadWorld world(4);
  std::vector<std::string> messages(4);
  const auto results = world.run([&](int r, Transport& t) {
    std::vector<float> send(8, 1.0f), recv(8, 0.0f);
    CollArgs args;
    args.sendbuf = send.data();
    args.recvbuf = recv.data();
    args.count = 8;
    args.hosts = &three;
    const plx_result_t rc = hierarchical_allreduce(t, collective_tag_base(1), args);
    messages[r] = plexus::last_error();
    return rc;
  });
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(results[r], PLX_ERROR_INTERNAL) << r;
    EXPECT_EQ(messages[r], "hierarchical_allreduce: rank " + std::to_string(r) +
                               ": the host layout describes 3 ranks, the communicator has 4");
  }
  expect_protocol_clean(world, "mismatched layout");
}

}  // namespace
}  // namespace plexus::comm
