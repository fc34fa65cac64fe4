// hierarchical_allreduce.cpp - two-level allreduce: reduce-scatter inside each host, allreduce of
// each shard between hosts along its lane, allgather inside each host.
//
// The decomposition of NCCL's hierarchical (NVLink + network) rings and of Horovod's
// hierarchical allreduce; J. L. Traeff and S. Hunold, "Decomposing MPI collectives for
// exploiting multi-lane communication", IEEE Cluster 2020 (the "full-lane" allreduce). Each
// phase is a pipelined ring (group_ring.h; Patarasuk & Yuan, JPDC 69(2), 2009). The host layout
// comes in CollArgs::hosts (host_layout.h; NULL means one host).
//
// The vector is cut into M = max_local() near-equal blocks, block j for lane j; on host h block
// j belongs to proxy(h, j), local rank j mod L_h (host_layout.h):
//
//   1. intra-host reduce-scatter (ring over the host's ranks, or their peer memory; below):
//      the owner of block j on host h gets the host's partial sum of block j, in recvbuf;
//   2. inter-host allreduce of block j along lane j (ring reduce-scatter then ring allgather
//      over lane_group(j), one rank per host, or recursive halving and doubling where the cost
//      model finds the ring's 2(K-1) latencies dearer: CollArgs::lane_halving, lane_halving.h),
//      for every lane this rank holds, in increasing j: block j is now reduced over every rank
//      (PLX_AVG divides it here, once);
//   3. intra-host allgather: every rank gets every block from its host's owners.
//
// Worked example, uneven hosts 3 + 2: hosts A = [0 1 2], B = [3 4]; M = 3 blocks b0 b1 b2.
//
//            host A               host B              lanes (one holder per host)
//   owns   0: b0  1: b1  2: b2    3: b0 b2   4: b1    lane 0 [0 3]  lane 1 [1 4]  lane 2 [2 3]
//
//   1. A reduce-scatters b0, b1, b2 over [0 1 2]; B reduce-scatters parts {b0, b2}, {b1} over
//      [3 4] (rank 3's part has two pieces).
//   2. lane 0: 0 <-> 3 allreduce b0;  lane 1: 1 <-> 4 allreduce b1;  lane 2: 2 <-> 3 allreduce b2
//      (rank 3 runs lane 0, then lane 2).
//   3. A allgathers b0, b1, b2 over [0 1 2]; B allgathers {b0, b2}, {b1} over [3 4].
//   Every block has exactly one owner per host, so every lane sums each host's partial once and
//   every element is reduced exactly once and delivered to every rank.
//
// Degenerate layouts: one host (H = 1) skips step 2, which leaves a ring reduce-scatter and ring
// allgather; one rank per host (M = 1) skips steps 1 and 3, which leaves a ring allreduce over
// every rank: ring_allreduce.cpp itself runs it, in slices of CollArgs::network_chunk_bytes.
//
// Pipelining (K > 1 hosts, M > 1 lanes). Run one after the other, the phases leave the network
// idle while the hosts reduce and gather, and on hosts whose ranks share cores the intra-host
// phases cost as much as a third of the time. So the vector is cut into S segments of about
// M * K * s, or M * 2 * s with halving lanes (whose first message is half the block)
// (hierarchical_segments.h: each lane-ring step then moves about s, one eager message
// of the transport where those keep the link busy, else between 256 KiB and chunk_bytes by the
// network's latency against its rate, or on RDMA-class links up to 16 MiB as the cost model's
// plan takes it, CollArgs::lane_step_bytes; at most 4096, at least M elements each where the
// count allows), the three steps run per segment, and the network step of up to
// kHierarchicalDepth + 1 segments is in flight while the host's ranks run the intra-host steps
// of their neighbours: NCCL's pipelining of its intra-node and network stages chunk by chunk,
// applied to Traeff & Hunold's node-local and lane phases:
//
//   time ->   RS 0 | RS 1 | RS 2 | AG 0 | RS 3 | AG 1 | ...          (intra-host, blocking)
//                   lanes 0 ------------->|                           (network, stepped by
//                          lanes 1 ------------------>|                 hierarchical_pipeline.h)
//
// In the loop for segment s: step 1 on segment s, then its lanes' rings are posted
// (hierarchical_pipeline.h: LaneRing, non-blocking); when more than kHierarchicalDepth
// segments are in flight, the oldest one's lanes are finished (blocking) and step 3 runs on
// it. Between the blocking steps every lane ring in flight is advanced; the transport moves
// posted messages in any wait, so a lane's step crosses the network while the host runs a ring.
// Every rank runs the same sequence of blocking steps, and each needs only peers at the same
// point of it, so the pipeline cannot deadlock. One host has nothing to overlap and runs the
// three steps once over the whole vector; one rank per host runs the ring (above).
//
// Intra-host steps through peer memory. When the communicator has a segment on every host with
// several ranks (CollArgs::peers, its members this host's ranks), steps 1 and 3 run through it
// (shm_group.h) instead of rings: per round of a slot every rank stages, waits for its host's
// ranks and reduces the blocks it owns straight from their slots into recvbuf; for step 3 the
// owners stage their final blocks and the others copy them. No intra-host byte then crosses
// the transport, which leaves the cores to the network step, and every wait for the host's ranks
// advances the lane rings in flight, as the pipeline's blocking steps do between them. A host of
// one rank, or none with a segment (PLEXUS_SHM=0, or it could not be made), runs the rings. A
// retiring segment's lanes are waited for step by step, the other segments' lanes advanced in
// between, so no posted lane waits for the next step's post longer than one step.
//
// Tags: every ring runs in its own window of the call's indices (group_ring.h). One host: the
// halves of the index space for steps 1 and 3. Pipelined: segment s has windows s(M + 2) ..
// s(M + 2) + M + 1: step 1, lane j's ring (1 + j), step 3. One rank per host: the ring's own.
//
// Bytes, K = H hosts of M ranks (m the vector): per rank (M-1)/M m each way inside the host in
// steps 1 and 3, and 2(K-1)/K m/M between hosts in step 2, so each host's network link carries
// 2(K-1)/K m each way, against 2(n-1)/n m for a flat ring whose ring crosses every host once.
// Pipelining changes no byte; it adds S - 1 messages per ring (comm/tuning/hierarchical_cost.cpp
// models the fill and drain).
#include <algorithm>
#include <cstring>
#include <deque>
#include <memory>
#include <vector>

#include "comm/algorithms/algorithms.h"
#include "comm/algorithms/group_ring.h"
#include "comm/algorithms/hierarchical_pipeline.h"
#include "comm/algorithms/hierarchical_segments.h"
#include "comm/algorithms/host_layout.h"
#include "comm/algorithms/lane_halving.h"
#include "comm/algorithms/shm_group.h"
#include "comm/algorithms/slices.h"
#include "comm/algorithms/trivial_reduction.h"
#include "comm/base/error.h"
#include "comm/reduce/reduce.h"

namespace plexus::comm {
namespace {

constexpr const char* kName = "allreduce:hierarchical";

struct Call {
  Transport& transport;
  const CollArgs& args;
  const HostLayout& layout;
  int h, i, local, hosts, lanes;
  size_t elem;
  size_t divisor;
};

// Steps 1 and 3 on `count` elements at element `first`: the host's ranks, and part p = the
// blocks of lanes j with j mod L_h == p.
RingGroup intra_group(const Call& c, size_t first, size_t count) {
  const auto* in = static_cast<const unsigned char*>(c.args.sendbuf);
  auto* out = static_cast<unsigned char*>(c.args.recvbuf);
  const Blocks blocks{count, static_cast<size_t>(c.lanes)};
  RingGroup intra{c.layout.hosts[c.h], static_cast<size_t>(c.i), std::vector<Part>(c.local)};
  for (int j = 0; j < c.lanes; ++j) {
    const size_t off = (first + blocks.begin(j)) * c.elem;
    intra.parts[j % c.local].push_back({in + off, out + off, blocks.size(j)});
  }
  return intra;
}

// One host: steps 1 and 3 once over the whole vector (step 2 has no other host to reach).
plx_result_t one_host(const Call& c, uint64_t tag_base) {
  const CollArgs& args = c.args;
  const RingGroup intra = intra_group(c, 0, args.count);
  // 1. Intra-host reduce-scatter; each block is final, and PLX_AVG divides it here.
  PLX_CHECK(host_reduce_scatter(c.transport, tag_window(tag_base, 0, 2), intra, args.peers,
                                args.datatype, args.op, c.divisor, args.chunk_bytes, kName,
                                nullptr));
  // 3. Intra-host allgather of the final blocks.
  return host_allgather(c.transport, tag_window(tag_base, 1, 2), intra, args.peers,
                        args.datatype, args.chunk_bytes, kName, nullptr);
}

// S: segments of hierarchical_segment_bytes() (hierarchical_segments.h: each step of a lane's
// ring moves about CollArgs::lane_step_bytes). At most one per M elements and
// hierarchical_max_segments() (which the cost model applies too).
size_t segment_count(const Call& c) {
  const size_t lanes = static_cast<size_t>(c.lanes);
  const size_t step_bytes = c.args.lane_step_bytes > 0
                                ? c.args.lane_step_bytes
                                : hierarchical_lane_step_bytes(c.args.chunk_bytes, 0, 0, 0, 1);
  const size_t target_bytes = hierarchical_segment_bytes(
      step_bytes, lanes, lane_steps_per_block(c.args.lane_halving, static_cast<size_t>(c.hosts)));
  size_t segments = (c.args.count * c.elem + target_bytes - 1) / target_bytes;
  segments = std::min({segments, c.args.count / lanes,
                       hierarchical_max_segments(lanes, static_cast<size_t>(c.hosts))});
  return std::max<size_t>(segments, 1);
}

// One segment in flight: its lanes' rings on this rank.
struct Segment {
  size_t index = 0;
  std::vector<std::unique_ptr<Lane>> lanes;
};

plx_result_t advance_all(std::deque<Segment>& flight) {
  for (Segment& segment : flight) {
    for (auto& lane : segment.lanes) PLX_CHECK(lane->advance());
  }
  return PLX_SUCCESS;
}

// Steps 1, 2 and 3 per segment, overlapped (see the header comment).
plx_result_t pipelined(const Call& c, uint64_t tag_base) {
  const CollArgs& args = c.args;
  // Steps 1 and 3 slice their rings (without peer memory) as the cost model does.
  const size_t intra_chunk = args.intra_chunk_bytes > 0 ? args.intra_chunk_bytes : args.chunk_bytes;
  auto* out = static_cast<unsigned char*>(args.recvbuf);
  const size_t lanes = static_cast<size_t>(c.lanes);
  const Blocks segments{args.count, segment_count(c)};
  const uint64_t per_segment = lanes + 2;
  const uint64_t windows = segments.parts * per_segment;
  const auto window = [&](size_t s, uint64_t w) {
    return tag_window(tag_base, s * per_segment + w, windows);
  };

  // The lanes' staging, reused from segment to segment (declared first: it outlives the lanes).
  StagingPool staging;
  std::deque<Segment> flight;
  // What the intra-host steps do while they wait for the host's ranks (through peer memory).
  const IdleWork idle = [&flight]() { return advance_all(flight); };
  // 3. for the oldest segment in flight: its lanes finish, step by step with the others
  // advanced in between, then the intra-host allgather.
  const auto retire = [&]() -> plx_result_t {
    Segment& oldest = flight.front();
    for (auto& lane : oldest.lanes) {
      while (!lane->done()) {
        PLX_CHECK(lane->wait_step());
        PLX_CHECK(advance_all(flight));
      }
    }
    const RingGroup intra =
        intra_group(c, segments.begin(oldest.index), segments.size(oldest.index));
    PLX_CHECK(host_allgather(c.transport, window(oldest.index, per_segment - 1), intra,
                             args.peers, args.datatype, intra_chunk, kName, &idle));
    flight.pop_front();
    return advance_all(flight);
  };

  for (size_t s = 0; s < segments.parts; ++s) {
    const size_t first = segments.begin(s), count = segments.size(s);
    // 1. Intra-host reduce-scatter of segment s.
    PLX_CHECK(host_reduce_scatter(c.transport, window(s, 0), intra_group(c, first, count),
                                  args.peers, args.datatype, args.op, 0, intra_chunk, kName,
                                  &idle));
    // 2. Its lanes' rings between the hosts, posted; they progress while the host works.
    Segment segment{s, {}};
    const Blocks blocks{count, lanes};
    for (int j = c.i; j < c.lanes; j += c.local) {
      if (blocks.size(j) == 0) continue;  // count < M: every holder skips it alike
      const LaneBlock lane{c.layout.lane_group(j), static_cast<size_t>(c.h),
                           out + (first + blocks.begin(j)) * c.elem, blocks.size(j),
                           args.datatype, args.op, c.divisor};
      if (args.lane_halving) {
        segment.lanes.push_back(
            std::make_unique<LaneHalving>(c.transport, window(s, 1 + j), lane, &staging));
      } else {
        segment.lanes.push_back(
            std::make_unique<LaneRing>(c.transport, window(s, 1 + j), lane, &staging));
      }
      PLX_CHECK(segment.lanes.back()->start());
    }
    flight.push_back(std::move(segment));
    PLX_CHECK(advance_all(flight));
    if (flight.size() > kHierarchicalDepth) PLX_CHECK(retire());
  }
  while (!flight.empty()) PLX_CHECK(retire());
  return PLX_SUCCESS;
}

}  // namespace

plx_result_t hierarchical_allreduce(Transport& transport, uint64_t tag_base,
                                    const CollArgs& args) {
  const int n = transport.size(), me = transport.rank();
  if (reduce_trivially(args, n)) return PLX_SUCCESS;
  HostLayout fallback;
  const HostLayout* layout = nullptr;
  PLX_CHECK(resolve_layout(args.hosts, n, me, "hierarchical_allreduce", &fallback, &layout));
  const Call call{transport,
                  args,
                  *layout,
                  layout->host_of[me],
                  layout->local_rank[me],
                  layout->local_size(me),
                  layout->host_count(),
                  layout->max_local(),
                  datatype_bytes(args.datatype),
                  static_cast<size_t>(n)};
  if (call.hosts > 1 && call.lanes == 1) {
    // One rank per host: lane 0 is every rank, and the allreduce along it is the ring, sliced
    // as a flat ring between hosts is (the cost model prices it so).
    CollArgs ring = args;
    if (args.network_chunk_bytes > 0) ring.chunk_bytes = args.network_chunk_bytes;
    return ring_allreduce(transport, tag_base, ring);
  }
  if (call.hosts == 1) return one_host(call, tag_base);
  return pipelined(call, tag_base);
}

}  // namespace plexus::comm
