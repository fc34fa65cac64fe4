// hierarchical_shm_thread_test.cpp - the intra-host phases of the hierarchical allreduce,
// reduce_scatter and allgather through peer memory (comm/algorithms/shm_group.h), on the
// in-process strict transport (tests/support/thread_transport.h): ranks are threads, and each
// host's threads open a real peer-memory segment among themselves (PeerMemory::open over the
// host's ranks, as a communicator spanning hosts does), passed as CollArgs::peers.
//
// Layouts: one host of 4, 2x2, 2x3, 3x2, uneven 3+2, interleaved uneven (A A B A B) and 2+1 (a
// host of one rank, which has no segment and runs its trivial ring). Every datatype and op, in
// place and out of place, count 1 (empty blocks and parts), 1009 in 64-byte slices (many
// pipeline segments, one round of a slot each) and 65539 with 4 KiB chunks (many rounds of the
// 4 KiB slots per segment); results against the closed forms of collective_reference.h, bit for
// bit. Every case on a rank with a segment must have used it (its piece counter moves). With
// inexact float inputs every rank's allreduce result must be bit-identical to every other's.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "comm/algorithms/algorithms.h"
#include "comm/algorithms/host_layout.h"
#include "comm/transport/peer_memory/peer_memory.h"
#include "tests/comm/thread_test_harness.h"

namespace plexus::comm {
namespace {

using namespace plexus::test;  // NOLINT: the harness and reference helpers

constexpr size_t kSlotBytes = 4096;

// The layout of the world under test (set before it runs), and each rank thread's segment.
const HostLayout* g_layout = nullptr;
thread_local std::unique_ptr<PeerMemory> t_peers;

template <AlgorithmFn F>
plx_result_t with_peers(Transport& t, uint64_t tag_base, const CollArgs& args) {
  CollArgs a = args;
  a.hosts = g_layout;
  a.peers = t_peers.get();
  return F(t, tag_base, a);
}

// This rank's host's segment, opened with tag base collective_tag_base(0) (the case list
// numbers its calls from 1).
plx_result_t open_host_segment(Transport& t) {
  t_peers.reset();
  const std::vector<int>& host = g_layout->hosts[g_layout->host_of[t.rank()]];
  if (host.size() < 2) return PLX_SUCCESS;
  PLX_CHECK(PeerMemory::open(t, collective_tag_base(0), host, true, kSlotBytes, 30000, nullptr,
                             &t_peers));
  return t_peers ? PLX_SUCCESS : PLX_ERROR_INTERNAL;
}

enum class Kind { Allreduce, ReduceScatter, Allgather };

struct Algorithm {
  const char* name;
  Kind kind;
  AlgorithmFn fn;
};

const Algorithm kAlgorithms[] = {
    {"hierarchical_allreduce", Kind::Allreduce, with_peers<hierarchical_allreduce>},
    {"hierarchical_reduce_scatter", Kind::ReduceScatter, with_peers<hierarchical_reduce_scatter>},
    {"hierarchical_allgather", Kind::Allgather, with_peers<hierarchical_allgather>},
};

struct Layout {
  const char* name;
  std::vector<std::string> host_ids;
};

const Layout kLayouts[] = {
    {"1x4", {"A", "A", "A", "A"}},
    {"2x2", {"A", "A", "B", "B"}},
    {"2x3", {"A", "A", "A", "B", "B", "B"}},
    {"3x2", {"A", "A", "B", "B", "C", "C"}},
    {"uneven_3p2", {"A", "A", "A", "B", "B"}},
    {"interleaved_3p2", {"A", "A", "B", "A", "B"}},
    {"uneven_2p1", {"A", "A", "B"}},
};

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
  if (rc != PLX_SUCCESS) return "returned " + std::to_string(rc) + ": " + plexus::last_error();
  const std::string why = check_periodic(
      out, c.count, c.dt,
      shifted(expected_pattern(c.op, c.dt, n), elem, r * c.count % input_period(c.op)));
  if (!why.empty()) return why;
  if (!send.guards_intact() || !recv.guards_intact()) return "wrote outside a buffer";
  if (c.in_place) {
    std::memcpy(send.data() + r * block_bytes, original.data() + r * block_bytes, block_bytes);
  }
  if (!(send == original)) return "modified sendbuf outside the output block";
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
  CollArgs args = args_of(Collective::Allgather, c);
  args.sendbuf = own;
  args.recvbuf = recv.data();
  const plx_result_t rc = a.fn(t, tag_base, args);
  if (rc != PLX_SUCCESS) return "returned " + std::to_string(rc) + ": " + plexus::last_error();
  for (int g = 0; g < n; ++g) {
    const std::string why =
        check_periodic(recv.data() + g * block_bytes, c.count, c.dt, broadcast_pattern(c.dt, g));
    if (!why.empty()) return "block " + std::to_string(g) + " " + why;
  }
  if (!send.guards_intact() || !recv.guards_intact()) return "wrote outside a buffer";
  return "";
}

std::string run_case(const Algorithm& a, const CallSpec& c, Transport& t, uint64_t tag_base) {
  const uint32_t before = t_peers ? t_peers->next_pieces(0) : 0;
  std::string why;
  switch (a.kind) {
    case Kind::Allreduce: why = check_allreduce(a.fn, c, t, tag_base); break;
    case Kind::ReduceScatter: why = run_reduce_scatter(a, c, t, tag_base); break;
    case Kind::Allgather: why = run_allgather(a, c, t, tag_base); break;
  }
  if (why.empty() && t_peers && t_peers->next_pieces(0) == before) {
    why = "the host's peer memory was not used";
  }
  return why;
}

void run_cases(const Algorithm& a, const Layout& l, const std::vector<CallSpec>& cases) {
  const HostLayout layout = host_layout(l.host_ids);
  g_layout = &layout;
  const int n = layout.size();
  run_case_list(
      n, cases.size(),
      [&](size_t k, Transport& t, uint64_t tag_base) -> std::string {
        if (k == 0 && open_host_segment(t) != PLX_SUCCESS) {
          return std::string("no peer memory: ") + plexus::last_error();
        }
        return run_case(a, cases[k], t, tag_base);
      },
      [&](size_t k) {
        return case_name(a.name, n, cases[k], std::string(" layout=") + l.name + " " +
                                                   op_name(cases[k].op));
      });
  g_layout = nullptr;
}

std::vector<CallSpec> matrix(const Algorithm& a) {
  std::vector<CallSpec> cases;
  const int ops = a.kind == Kind::Allgather ? 1 : PLX_NUM_OPS;
  for (const auto& [count, chunk] :
       {std::pair<size_t, size_t>{1, 1 << 20}, {1009, 64}, {65539, 4096}}) {
    for (int dt = 0; dt < PLX_NUM_DATATYPES; ++dt) {
      for (int op = 0; op < ops; ++op) {
        // The large count in a few datatypes only: it is about rounds, not arithmetic.
        if (count > 1009 && dt % 3 != 0) continue;
        for (bool in_place : {false, true}) {
          cases.push_back({count, static_cast<plx_datatype_t>(dt), static_cast<plx_red_op_t>(op),
                           in_place, chunk, 0});
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

class HierarchicalShm : public ::testing::TestWithParam<Param> {};

TEST_P(HierarchicalShm, EveryDatatypeOpAndPlacementThroughPeerMemory) {
  const Algorithm& a = kAlgorithms[GetParam().algorithm];
  run_cases(a, kLayouts[GetParam().layout], matrix(a));
}

std::vector<Param> all_params() {
  std::vector<Param> params;
  for (size_t a = 0; a < std::size(kAlgorithms); ++a) {
    for (size_t l = 0; l < std::size(kLayouts); ++l) params.push_back({a, l});
  }
  return params;
}

INSTANTIATE_TEST_SUITE_P(Layouts, HierarchicalShm, ::testing::ValuesIn(all_params()),
                         [](const auto& info) {
                           return std::string(kAlgorithms[info.param.algorithm].name) + "_" +
                                  kLayouts[info.param.layout].name;
                         });

// Inexact inputs (random floats): the sums depend on the order, so equal bits on every rank
// show that every element was reduced once and copied everywhere; PLX_AVG too.
TEST(HierarchicalShmBits, EveryRankEndsBitIdentical) {
  for (size_t l : {size_t{1}, size_t{4}, size_t{5}}) {
    const HostLayout layout = host_layout(kLayouts[l].host_ids);
    g_layout = &layout;
    const int n = layout.size();
    constexpr size_t kCount = 50021;
    for (plx_red_op_t op : {PLX_SUM, PLX_AVG}) {
      std::vector<std::vector<float>> results(n, std::vector<float>(kCount));
      ThreadWorld world(n);
      const auto rcs = world.run([&](int r, Transport& t) -> plx_result_t {
        PLX_CHECK(open_host_segment(t));
        std::mt19937 random(1234 + r);
        std::uniform_real_distribution<float> value(-1.0f, 1.0f);
        std::vector<float> send(kCount);
        for (float& v : send) v = value(random);
        CollArgs args;
        args.sendbuf = send.data();
        args.recvbuf = results[r].data();
        args.count = kCount;
        args.op = op;
        args.chunk_bytes = 4096;
        const plx_result_t rc =
            with_peers<hierarchical_allreduce>(t, collective_tag_base(1), args);
        t_peers.reset();
        return rc;
      });
      for (int r = 0; r < n; ++r) {
        ASSERT_EQ(rcs[r], PLX_SUCCESS) << kLayouts[l].name << " rank " << r;
        EXPECT_EQ(std::memcmp(results[r].data(), results[0].data(), kCount * sizeof(float)), 0)
            << kLayouts[l].name << " " << op_name(op) << ": rank " << r << " differs from rank 0";
      }
      expect_protocol_clean(world, kLayouts[l].name);
    }
    g_layout = nullptr;
  }
}

}  // namespace
}  // namespace plexus::comm
