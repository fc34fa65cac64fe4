// hierarchical_cost.cpp - the two-level formulas of the hierarchical algorithms.
//
// Notation: K hosts (shape.hosts), M = shape.max_local lanes, L a host's size (every distinct
// size in shape.local_sizes is tried and the slowest host counts), q = ceil(M / min_local) the
// most lanes one rank holds; a_i, b_i within a host, a_e, b_e between hosts, g per byte reduced;
// c = chunk_bytes and slices(x) = ceil(x / c) >= 1 (cost_terms.h).
//
// Every phase is a pipelined ring or tree whose cost is the flat formula of cost_model.cpp on
// the phase's group ([TRG], [PY]), with one twist for the network phase: the lanes of a host run
// at once and share its link (cost_shape.h), so a phase that moves B bytes per lane costs
//
//   lane_beta(B) = max(M B b_e / min(nics, M),  q B b_e)
//
// the link's total, or one rank's q lanes in sequence, whichever is slower. Between phases the
// pipeline drains: one a_i per phase boundary.
//
// The allreduce overlaps its phases over S segments of about M K s bytes, s the lane step
// (comm/algorithms/hierarchical_segments.h: one eager message of the transport where those keep
// the link busy, else min(c, max(256 KiB, 8 a_e / b_e)); on RDMA-class links a power of two
// times that where priced faster, allreduce_parts below), hierarchical_allreduce.cpp,
// as NCCL pipelines its NVLink and network stages and [TH] its node-local and lane phases): the
// host's ranks run the intra-host reduce-scatter and allgather of the neighbouring segments
// while a segment's lanes cross the network. A two-stage pipeline of S items, stage times
// t_host = RS(y/S) + AG(y/S) and t_net = lanes(y/S), costs the fill and drain plus S - 1 times
// its slower stage ([CHPV]):
//
//   RS(y/S) + lanes(y/S) + AG(y/S) + 2 a_i + (S - 1) max(t_host, t_net')
//
// where t_net' = max(the lanes' bytes term, t_net / D): the lanes of D = min(S, 3) segments are
// in flight at once (hierarchical_allreduce.cpp), so their latencies and reductions overlap the
// link's bytes (the emulated 2 x 2 cluster at 1 Gbit/s with 16 KiB steps ran 1 MiB at 99 % of
// the link bound, which the serial sum, a latency of 33 us per 137 us step, priced at 81 %).
//
// S = 1 (no slicing, or a vector of one segment) is the sum of the phases. The overlap needs the
// two levels to be different resources; with one-level parameters (shared_link false: the
// network costs what memory does) the phases are summed, S = 1.
//
// With a peer-memory segment on every host (shape.peer_memory; comm/algorithms/shm_group.h) the
// intra-host phases send no messages and are priced at memory speed, as shm_cost.h prices the
// one-host shm algorithms: a phase over a group vector of t bytes (M y for the allreduce's
// segment, n b for the reduce-scatter and allgather) of which a rank of a host of L ranks owns u
// takes rounds of a slot (k = slices(t, slot), the slot chunk_bytes rounded up to a page), each
// one wait a_i (two for a reduce-scatter), and
//
//   reduce-scatter   2k a_i + (t - u) kCopyGamma g + (L-1) u g    stage the others' parts,
//                                                                   reduce its own from L-1 slots
//   allgather        k a_i + t kCopyGamma g                         stage its own, copy the rest
//
// Sources:
//   [TRG] R. Thakur, R. Rabenseifner and W. Gropp, IJHPCA 19(1), 2005 (the flat formulas).
//   [PY]  P. Patarasuk and X. Yuan, JPDC 69(2), 2009 (pipelined rings).
//   [TH]  J. L. Traeff and S. Hunold, "Decomposing MPI collectives for exploiting multi-lane
//         communication", IEEE Cluster 2020 (node-local and lane phases, lanes in parallel).
//   [UY]  Y. Ueno and R. Yokota, "Exhaustive study of hierarchical AllReduce patterns for large
//         messages between GPUs", CCGrid 2019 (intra reduce-scatter, inter allreduce, intra
//         allgather, and its cost as the sum of the phases).
//   [CHPV] E. Chan, M. Heimlich, A. Purkayastha and R. van de Geijn, CCPE 19(13), 2007
//         (pipelined chains and trees: depth + slices - 1 slice steps).
#include "comm/tuning/hierarchical_cost.h"

#include <algorithm>
#include <cmath>

#include "comm/algorithms/hierarchical_segments.h"
#include "comm/tuning/cost_terms.h"
#include "comm/tuning/shm_cost.h"

namespace plexus::comm {
namespace {

// Halving lanes are taken only where the model prices them at most this fraction of the ring
// lanes: they cost what it does not price on hosts whose ranks share cores. On the emulated
// 4 x 2 cluster at 1 Gbit/s (8 ranks on 2 cores, 2026-12-07), priced 1 % faster than the ring,
// they ran 1.29-1.63x slower than priced (the ring 1.04-1.06): twice the segments, each with
// its intra-host waits, and four smaller lane messages for two. At 250 and 500 Mbit/s they ran
// at 0.99-1.04 of the price.
constexpr double kHalvingGain = 0.9;

struct Hier {
  const CostShape& s;
  const TwoLevelParams& p;
  size_t c;

  double K() const { return s.hosts; }
  double M() const { return s.max_local; }
  double q() const { return std::ceil(M() / std::max(s.min_local, 1)); }

  // lane_beta above: B bytes per lane, every lane of a host at once.
  double lane_beta(double lane_bytes) const {
    const double rank = q() * lane_bytes * p.beta_inter;
    if (!p.shared_link) return rank;
    const double links = std::max(1, std::min(s.nics_per_host, s.max_local));
    return std::max(M() * lane_bytes * p.beta_inter / links, rank);
  }

  // The slowest host's intra-host ring, [PY]: L-1 steps of a part made of `pieces(L)` pieces
  // of `piece` bytes each (every piece sliced on its own, in slices of `slice` bytes); reducing
  // adds g per byte.
  template <typename Pieces>
  PhaseCost intra_ring(double piece, Pieces pieces, bool reduces, size_t slice) const {
    PhaseCost worst;
    for (const int L : s.local_sizes) {
      if (L < 2) continue;
      const double steps = L - 1, n = pieces(L);
      const PhaseCost ring{steps * n * slices(piece, slice) * p.alpha_intra,
                           steps * n * piece * p.beta_intra,
                           reduces ? steps * n * piece * p.gamma : 0.0};
      if (ring.total() > worst.total()) worst = ring;
    }
    return worst;
  }
  double boundary() const { return s.max_local > 1 ? p.alpha_intra : 0; }

  // An intra-host reduce-scatter (reduces) or allgather whose part on a host of L ranks is
  // pieces(L) pieces of `piece` bytes, out of a group vector of `total` bytes: the ring (in
  // slices of `ring_slice`, the chunk but for the pipelined allreduce's), or with peer memory
  // the header's formulas (the copies counted as bytes moved), the slowest host counting.
  template <typename Pieces>
  PhaseCost intra(double piece, Pieces pieces, double total, bool reduces,
                  size_t ring_slice) const {
    if (!s.peer_memory) return intra_ring(piece, pieces, reduces, ring_slice);
    const size_t slot = c == 0 ? 0 : (c + 4095) / 4096 * 4096;
    const double k = slices(total, slot);
    PhaseCost worst;
    for (const int L : s.local_sizes) {
      if (L < 2) continue;
      const double u = std::min(total, piece * pieces(L));
      const PhaseCost phase =
          reduces ? PhaseCost{2 * k * p.alpha_intra, (total - u) * kCopyGamma * p.gamma,
                              (L - 1) * u * p.gamma}
                  : PhaseCost{k * p.alpha_intra, total * kCopyGamma * p.gamma, 0.0};
      if (phase.total() > worst.total()) worst = phase;
    }
    return worst;
  }

  // The lanes' allreduce of y bytes per lane between the K hosts, lanes in parallel: the ring
  // ([PY]: 2(K-1) steps of y/K), or recursive halving and doubling ([TRG]; lane_halving.h:
  // 2 log2 P steps moving 2(P-1)/P y, and for K not a power of two one step more each way that
  // moves the whole block, which the paired hosts' links carry: the fold in, the result back
  // out, one after the other in a segment but in opposite directions, so that in the pipeline
  // one segment's return crosses beside the next one's fold: return_bytes below).
  // A ring step is one message of up to max(c, step) bytes (c = 0: unsliced): the run sends each
  // step whole, and a lane step longer than the chunk (hierarchical_lane_step_limit) is one
  // message.
  PhaseCost lanes(double y, bool halving, size_t step) const {
    if (!halving) {
      const size_t message = c == 0 ? 0 : std::max(c, step);
      return PhaseCost{q() * 2 * (K() - 1) * slices(y / K(), message) * p.alpha_inter,
                       lane_beta(2 * (K() - 1) / K() * y), q() * (K() - 1) / K() * y * p.gamma};
    }
    const int pow2 = floor_pow2(s.hosts);
    const double P = pow2, L = ceil_log2(pow2);
    const double extra = K() > P ? 1 : 0;
    return PhaseCost{q() * (2 * L + 2 * extra) * p.alpha_inter,
                     lane_beta(2 * (P - 1) / P * y + 2 * extra * y),
                     q() * ((P - 1) / P + extra) * y * p.gamma};
  }
  // The halving lanes' return of the folded hosts' blocks (lanes() above): one whole block,
  // priced at the link's rate, when K is not a power of two.
  double return_bytes(double y) const {
    return s.hosts > floor_pow2(s.hosts) ? lane_beta(y) : 0.0;
  }
  // [UY], [TH]: per segment of m/S, intra reduce-scatter of the M blocks y = m/(S M) (a host
  // of L ranks holds ceil(M/L) of them), the lanes' allreduce of each block between the K hosts,
  // intra allgather; two boundaries; the S segments pipelined as the header says.
  HierarchicalAllreduceParts allreduce_parts(double m, bool halving, size_t step) const {
    HierarchicalAllreduceParts parts;
    const double S = segments(m, halving, step);
    const double y = m / (S * M());
    const auto blocks = [&](int L) { return std::ceil(M() / L); };
    parts.segments = S;
    parts.segment_bytes = m / S;
    parts.in_flight = std::min(S, static_cast<double>(kHierarchicalDepth + 1));
    parts.lane_halving = halving;
    parts.lane_step_bytes = step;
    parts.network = lanes(y, halving, step);
    parts.network_return_bytes = halving ? return_bytes(y) : 0;
    // The pipelined allreduce's intra-host rings slice by hierarchical_intra_slice_bytes.
    const size_t slice = hierarchical_intra_slice_bytes(c, p.alpha_intra, p.beta_intra);
    parts.reduce_scatter = intra(y, blocks, M() * y, true, slice);
    parts.allgather = intra(y, blocks, M() * y, false, slice);
    parts.boundaries = 2 * boundary();
    return parts;
  }
  // The lanes' schedule the run uses for a lane step: halving where it is clearly faster
  // (kHalvingGain); never with one lane (the run is the flat ring then), for K = 2, where both
  // move the same bytes in the same two steps, or with one-level parameters (the price has one
  // segment there, S = 1, while the run still cuts the vector by the lane step: the ring's
  // slices(y/K) latencies stand for its segments, halving's price would have none). A schedule
  // the user forced (CostShape::lanes) is taken wherever halving may run by these rules.
  HierarchicalAllreduceParts allreduce_parts_at(double m, size_t step) const {
    const HierarchicalAllreduceParts ring = allreduce_parts(m, false, step);
    if (s.hosts <= 2 || s.max_local < 2 || !p.shared_link) return ring;
    if (s.lanes == LaneSchedule::Ring) return ring;
    const HierarchicalAllreduceParts halving = allreduce_parts(m, true, step);
    if (s.lanes == LaneSchedule::Halving) return halving;
    return halving.total() <= kHalvingGain * ring.total() ? halving : ring;
  }
  // The plan the run uses (hierarchical_lane_plan): the lane step s of
  // hierarchical_lane_step_bytes, or a power of two times it up to
  // hierarchical_lane_step_limit where that is priced faster (each with its lanes' schedule
  // above); the shorter step where two price alike. Steps stop growing once a segment holds
  // the whole vector.
  HierarchicalAllreduceParts allreduce_parts(double m) const {
    const size_t first = step();
    HierarchicalAllreduceParts best = allreduce_parts_at(m, first);
    if (c == 0 || s.max_local < 2 || !p.shared_link) return best;
    const size_t limit = hierarchical_lane_step_limit(c, p.alpha_inter, p.beta_inter,
                                                      s.eager_bytes, lanes_per_link());
    double segments = best.segments;
    for (size_t longer = first * 2; longer <= limit && segments > 1; longer *= 2) {
      const HierarchicalAllreduceParts parts = allreduce_parts_at(m, longer);
      segments = parts.segments;
      if (parts.total() < best.total()) best = parts;
    }
    return best;
  }
  size_t lanes_per_link() const {
    return comm::lanes_per_link(static_cast<size_t>(std::max(s.max_local, 1)),
                                static_cast<size_t>(std::max(s.nics_per_host, 1)));
  }
  // hierarchical_lane_step_bytes's s on this shape.
  size_t step() const {
    return hierarchical_lane_step_bytes(c, p.alpha_inter, p.beta_inter, s.eager_bytes,
                                        lanes_per_link());
  }
  double allreduce(double m) const { return allreduce_parts(m).total(); }
  // S of hierarchical_allreduce.cpp: segments of hierarchical_segment_bytes() (each lane-ring
  // step moves about `step` bytes; with halving lanes a segment's block is two steps, so that
  // the first and largest halving message is one step), at most hierarchical_max_segments() (1
  // without slicing, with one lane, or without two distinct levels).
  double segments(double m, bool halving, size_t step) const {
    if (c == 0 || s.max_local < 2 || !p.shared_link) return 1;
    const double bytes = static_cast<double>(hierarchical_segment_bytes(
        step, static_cast<size_t>(s.max_local),
        lane_steps_per_block(halving, static_cast<size_t>(s.hosts))));
    return std::clamp(std::ceil(m / bytes), 1.0,
                      static_cast<double>(hierarchical_max_segments(
                          static_cast<size_t>(s.max_local), static_cast<size_t>(s.hosts))));
  }
  // [TH]: intra reduce-scatter (a part is ceil(M/L) lanes of about K blocks), then a ring
  // reduce-scatter of each lane's K blocks b between the hosts: K-1 steps.
  double reduce_scatter(double b) const {
    const auto blocks = [&](int L) { return std::ceil(M() / L) * K(); };
    const double inter = q() * (K() - 1) * slices(b, c) * p.alpha_inter +
                         lane_beta((K() - 1) * b) + q() * (K() - 1) * b * p.gamma;
    return intra(b, blocks, s.nranks * b, true, c).total() + inter + boundary();
  }
  // [TH]: the mirror of reduce_scatter, without the reduction.
  double allgather(double b) const {
    const auto blocks = [&](int L) { return std::ceil(M() / L) * K(); };
    const double inter = q() * (K() - 1) * slices(b, c) * p.alpha_inter + lane_beta((K() - 1) * b);
    return inter + intra(b, blocks, s.nranks * b, false, c).total() + boundary();
  }
  // [CHPV], host_tree.h: a pipeline of k = slices(m) slices of x = m/k takes the sum of its
  // stages for the first slice plus k - 1 times its slowest stage. The stages: the network hops
  // between leaders (ceil(log2 K) of them on the binomial tree of one slice, K - 1 on the chain
  // of several), each t_net = a_e + x b_e, and the host's binomial tree, whose leader sends
  // every slice to ceil(log2 M) children, t_host = ceil(log2 M)(a_i + x b_i):
  //   depth t_net + t_host + (k - 1) max(t_net, t_host).
  double broadcast(double m) const {
    const double k = slices(m, c), x = m / k, lM = ceil_log2(s.max_local);
    const double depth = k == 1 ? ceil_log2(s.hosts) : K() - 1;
    const double net = p.alpha_inter + x * p.beta_inter;
    const double host = lM * (p.alpha_intra + x * p.beta_intra);
    return depth * net + host + (k - 1) * std::max(net, host);
  }
  // The broadcast's tree run upwards (tree_pipeline.h's systolic schedule): every stage also
  // reduces what it receives (x g per partial), and a leader reduces its ceil(log2 M) host
  // children's slices and the previous leader's, (ceil(log2 M) + 1) x g per step:
  //   depth (t_net + x g) + t_host + (k - 1)(max(t_net, t_host') + (ceil(log2 M) + 1) x g),
  // with t_host = ceil(log2 M)(a_i + x b_i + x g) and t_host' without the g.
  double reduce(double m) const {
    const double k = slices(m, c), x = m / k, lM = ceil_log2(s.max_local);
    const double depth = k == 1 ? ceil_log2(s.hosts) : K() - 1;
    const double net = p.alpha_inter + x * p.beta_inter;
    const double host = lM * (p.alpha_intra + x * p.beta_intra);
    return depth * (net + x * p.gamma) + (host + lM * x * p.gamma) +
           (k - 1) * (std::max(net, host) + (lM + 1) * x * p.gamma);
  }
};

}  // namespace

size_t hierarchical_lane_step_bytes(const CostShape& shape, size_t chunk_bytes,
                                    double alpha_inter_s, double beta_inter_s_per_byte) {
  const TwoLevelParams params{.alpha_inter = alpha_inter_s, .beta_inter = beta_inter_s_per_byte};
  return Hier{shape, params, chunk_bytes}.step();
}

HierarchicalAllreduceParts hierarchical_allreduce_parts(double bytes, const CostShape& shape,
                                                        const TwoLevelParams& params,
                                                        size_t chunk_bytes) {
  return Hier{shape, params, chunk_bytes}.allreduce_parts(bytes);
}

HierarchicalAllreduceParts hierarchical_allreduce_parts(double bytes, const CostShape& shape,
                                                        const TwoLevelParams& params,
                                                        size_t chunk_bytes, bool lane_halving) {
  const Hier model{shape, params, chunk_bytes};
  return model.allreduce_parts(bytes, lane_halving, model.step());
}

double hierarchical_seconds(AlgorithmId algorithm, double bytes, const CostShape& shape,
                            const TwoLevelParams& params, size_t chunk_bytes) {
  const Hier model{shape, params, chunk_bytes};
  switch (algorithm) {
    case AlgorithmId::AllreduceHierarchical: return model.allreduce(bytes);
    case AlgorithmId::ReduceHierarchical: return model.reduce(bytes);
    case AlgorithmId::BroadcastHierarchical: return model.broadcast(bytes);
    case AlgorithmId::ReduceScatterHierarchical: return model.reduce_scatter(bytes);
    case AlgorithmId::AllgatherHierarchical: return model.allgather(bytes);
    default: return 0;
  }
}

}  // namespace plexus::comm
