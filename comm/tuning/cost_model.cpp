// cost_model.cpp - the alpha-beta-gamma formulas of every algorithm, and choose().
//
// Notation: p ranks, alpha a, beta b, gamma g; m the whole vector, blk one rank's block;
// L = ceil(log2 p); p2 = the largest power of two <= p and r = p - p2 the extra ranks;
// c = chunk_bytes; slices(x) = ceil(x / c), at least 1.
//
// Two levels (cost_shape.h): on a shape with several hosts and parameters with inter_* values, a
// step whose busiest host link carries `load` messages pays A(load) = load > 0 ? a_e : a and
// B(load) = load > 0 ? max(b, ceil(load / nics) b_e) : b per byte instead of a and b. Each
// formula below then uses its pattern's loads: the rings and the chain the ring's (one load for
// every step: they all have the same pattern), the halving/doubling family and the binomial
// trees one load per step distance, Bruck and dissemination theirs, the pairwise exchange one
// per step. Gather/scatter: the root's link carries the blocks of the ranks on other hosts. With
// one level A = a and B = b and every formula is the one-level one (the per-step forms are only
// evaluated with two levels, so one-level predictions keep their exact values).
//
// Sources:
//   [TRG]  R. Thakur, R. Rabenseifner and W. Gropp, "Optimization of collective communication
//          operations in MPICH", IJHPCA 19(1), 2005 (section numbers below are theirs).
//   [CHPV] E. Chan, M. Heimlich, A. Purkayastha and R. van de Geijn, "Collective communication:
//          theory, practice, and experience", CCPE 19(13), 2007 (pipelining, MST trees).
//   [PY]   P. Patarasuk and X. Yuan, "Bandwidth optimal all-reduce algorithms for clusters of
//          workstations", JPDC 69(2), 2009 (the pipelined ring).
//   [SST]  P. Sanders, J. Speck and J. L. Traeff, "Two-tree algorithms for full bandwidth
//          broadcast, reduction and scan", Parallel Computing 35(12), 2009 (double binary tree).
//   [BHKUW] J. Bruck, C.-T. Ho, S. Kipnis, E. Upfal and D. Weathersby, "Efficient algorithms for
//          all-to-all communications in multiport message-passing systems", IEEE TPDS 8(11), 1997.
//   [HFM]  D. Hensgen, R. Finkel and U. Manber, "Two algorithms for barrier synchronization",
//          IJPP 17(1), 1988 (dissemination).
//   [NCCL] NVIDIA NCCL, src/graph/tuning.cc: a ring or tree that spans nodes runs at the
//          network's bandwidth, the slowest link it crosses (the two-level charge above).
//   The hierarchical algorithms' formulas are in hierarchical_cost.cpp, the peer-memory (shm)
//   ones in shm_cost.cpp.
#include "comm/tuning/cost_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "comm/tuning/cost_terms.h"
#include "comm/tuning/hierarchical_cost.h"
#include "comm/tuning/shm_cost.h"

namespace plexus::comm {
namespace {

struct Model {
  double p;       // ranks
  int n;          // ranks, as an int
  double a, b, g; // alpha, beta, gamma
  size_t c;       // chunk_bytes
  const CostShape& s;
  double ae = 0, be = 0;  // between hosts
  bool links = false;     // two levels: charge steps by their host-link load

  // A(load) and B(load) of the file comment.
  double A(int load) const { return links && load > 0 ? ae : a; }
  double B(int load) const {
    if (!links || load <= 0) return b;
    const int per_link = (load + s.nics_per_host - 1) / std::max(s.nics_per_host, 1);
    return std::max(b, per_link * be);
  }
  static int at(const std::vector<int>& loads, size_t i) { return i < loads.size() ? loads[i] : 0; }
  int busiest(const std::vector<int>& loads) const {
    return loads.empty() ? 0 : *std::max_element(loads.begin(), loads.end());
  }

  // Folding for non-powers of two ([TRG] 4.4, 4.5): the r extra ranks first send their whole
  // vector to a partner, which reduces it (a + m b + m g), and get their result back at the end
  // (a + back b); the main phase then runs on p2 ranks.
  double fold(double m, double back) const {
    const int r = n - floor_pow2(n);
    return r > 0 ? 2 * A(s.fold) + m * B(s.fold) + m * g + back * B(s.fold) : 0;
  }
  // The halving/doubling steps at distance p2/2, p2/4, .., 1: step i moves m / 2^i over the
  // pattern of distance p2 / 2^i (two levels only).
  template <typename Step>
  double halving_steps(Step step) const {
    double t = 0, share = 1;
    for (int d = floor_pow2(n) / 2; d >= 1; d /= 2) {
      share /= 2;
      t += step(at(s.halving, static_cast<size_t>(std::log2(d))), share);
    }
    return t;
  }

  // ---- allreduce (m = the vector) ----
  // [PY], [TRG] 4.4: ring reduce-scatter then ring allgather, 2(p-1) steps of one segment m/p,
  // each segment cut into slices(m/p) messages:
  //   2(p-1) slices(m/p) a + 2(p-1)/p m b + (p-1)/p m g.
  double ring_allreduce(double m) const {
    const double k = slices(std::ceil(m / p), c);
    return 2 * (p - 1) * k * A(s.ring) + 2 * (p - 1) / p * m * B(s.ring) + (p - 1) / p * m * g;
  }
  // [TRG] 4.4 (Rabenseifner): recursive-halving reduce-scatter and recursive-doubling allgather
  // on p2 ranks, plus the fold:
  //   2 log2(p2) a + 2(p2-1)/p2 m b + (p2-1)/p2 m g + [r > 0](2a + 2m b + m g).
  // Two levels: each halving and doubling step at its own distance's load.
  double rabenseifner_allreduce(double m) const {
    const double p2 = floor_pow2(n);
    if (links) {
      return halving_steps([&](int load, double x) { return 2 * (A(load) + x * m * B(load)); }) +
             (p2 - 1) / p2 * m * g + fold(m, m);
    }
    return 2 * std::log2(p2) * a + 2 * (p2 - 1) / p2 * m * b + (p2 - 1) / p2 * m * g +
           fold(m, m);
  }
  // [TRG] 4.4: log2(p2) exchanges of the whole vector, plus the fold. Each exchange is cut into
  // slices(m) messages, one in flight at a time (the vector is reduced into the buffer it is
  // sent from), so each slice pays alpha:
  //   log2(p2)(slices(m) a + m b + m g) + [r > 0](2a + 2m b + m g).
  double recursive_doubling_allreduce(double m) const {
    if (links) {
      return halving_steps([&](int load, double) {
               return slices(m, c) * A(load) + m * B(load) + m * g;
             }) +
             fold(m, m);
    }
    return std::log2(floor_pow2(n)) * (slices(m, c) * a + m * b + m * g) + fold(m, m);
  }
  // [SST], pipelined as in [CHPV], on double_binary_tree_allreduce.cpp's systolic schedule
  // (tree_pipeline.h): each tree reduces then broadcasts half the vector in S = slices(m/2)
  // slices of x = m/(2S); slice k crosses the edge above a node of height h going up at step
  // k + h and the edge above a node of depth d going down at step k + H + d, so the last slice
  // is home after S - 1 + 2H steps, H the trees' height. Filling and draining the pipeline, a
  // step carries one slice over an edge (2H single steps); in the S - 1 full steps every edge
  // of both trees carries a slice each way at once, so a rank sends deg slices (its degree over
  // both trees: 4 for most ranks, a leaf in one tree and interior in the other) and reduces
  // kids (its children, 2), and a host link carries one slice per tree edge it has to another
  // host (CostShape::double_tree, L):
  //   2H (A(1) + x B(1) + x g) + (S - 1)(deg A(L) + x max(deg b, B(L)) + kids x g).
  // One level (B = b): the full step is deg (a + x b) + kids x g.
  double double_binary_tree_allreduce(double m) const {
    const double k = slices(m / 2, c);
    const double x = m / (2 * k);
    const int one = links ? 1 : 0;
    const int load = s.double_tree;
    const double single = A(one) + x * B(one) + x * g;
    const double full = s.double_tree_degree * A(load) +
                        x * std::max(s.double_tree_degree * b, B(load)) +
                        s.double_tree_children * x * g;
    return 2 * s.double_tree_height * single + (k - 1) * full;
  }

  // ---- reduce (m = the vector) ----
  // [TRG] 4.3 (short messages): binomial tree, L rounds of the whole vector; slicing it into
  // slices(m) messages pipelines the subtrees, but the root still receives and reduces L
  // vectors, one slice message at a time:
  //   L (slices(m) a + m b + m g).
  double binomial_reduce(double m) const {
    if (links) {
      double t = 0;
      for (int j = 0; j < ceil_log2(n); ++j) {
        t += slices(m, c) * A(at(s.binomial, j)) + m * B(at(s.binomial, j)) + m * g;
      }
      return t;
    }
    return ceil_log2(n) * (slices(m, c) * a + m * b + m * g);
  }
  // [TRG] 4.3 (long messages, Rabenseifner's reduce = reduce-scatter + gather), with the ring
  // reduce-scatter of [PY] and the root receiving the p-1 other segments directly:
  //   2(p-1) slices(m/p) a + 2(p-1)/p m b + (p-1)/p m g.
  double ring_reduce(double m) const {
    const double k = slices(std::ceil(m / p), c);
    return 2 * (p - 1) * k * A(s.ring) + 2 * (p - 1) / p * m * B(s.ring) + (p - 1) / p * m * g;
  }

  // ---- broadcast (m = the vector) ----
  // [TRG] 4.1 (short messages): binomial tree, L rounds of the whole vector:
  //   L (a + m b).
  double binomial_broadcast(double m) const {
    if (links) {
      double t = 0;
      for (int j = 0; j < ceil_log2(n); ++j) t += A(at(s.binomial, j)) + m * B(at(s.binomial, j));
      return t;
    }
    return ceil_log2(n) * (a + m * b);
  }
  // [CHPV] pipelined chain: k = slices(m) slices of m/k hop down p-1 links, the last arrives
  // after p-1 + k-1 slice times:
  //   (p - 2 + k)(a + m/k b).
  double chain_broadcast(double m) const {
    const double k = slices(m, c);
    return (p - 2 + k) * (A(s.ring) + m / k * B(s.ring));
  }
  // [TRG] 4.1 (long messages, van de Geijn): binomial scatter (L a + (p-1)/p m b), then ring
  // allgather of the m/p blocks, each sliced (p-1 steps of slices(m/p) messages):
  //   L a + (p-1) slices(m/p) a + 2(p-1)/p m b.
  // Two levels: the scatter's rounds at their binomial loads, its bytes at the busiest round's.
  double scatter_allgather_broadcast(double m) const {
    const double k = slices(std::ceil(m / p), c);
    if (links) {
      double t = 0;
      for (int j = 0; j < ceil_log2(n); ++j) t += A(at(s.binomial, j));
      return t + (p - 1) / p * m * B(busiest(s.binomial)) + (p - 1) * k * A(s.ring) +
             (p - 1) / p * m * B(s.ring);
    }
    return ceil_log2(n) * a + (p - 1) * k * a + 2 * (p - 1) / p * m * b;
  }

  // ---- reduce_scatter (blk = one rank's block, m = p blk) ----
  // [TRG] 4.5 / [PY]: p-1 ring steps of one sliced block:
  //   (p-1) slices(blk) a + (p-1) blk (b + g).
  double ring_reduce_scatter(double blk) const {
    return (p - 1) * slices(blk, c) * A(s.ring) + (p - 1) * blk * (B(s.ring) + g);
  }
  // [TRG] 4.5 (recursive halving, for commutative ops) on p2 ranks, plus the fold (the extra
  // rank gets only its block back):
  //   log2(p2) a + (p2-1)/p2 m (b + g) + [r > 0](2a + m b + m g + blk b).
  double recursive_halving_reduce_scatter(double blk) const {
    const double p2 = floor_pow2(n);
    const double m = p * blk;
    if (links) {
      return halving_steps([&](int load, double x) { return A(load) + x * m * (B(load) + g); }) +
             fold(m, blk);
    }
    return std::log2(p2) * a + (p2 - 1) / p2 * m * (b + g) + fold(m, blk);
  }

  // ---- allgather (blk = one rank's block) ----
  // [TRG] 4.2 (ring): p-1 steps of one sliced block:
  //   (p-1) slices(blk) a + (p-1) blk b.
  double ring_allgather(double blk) const {
    return (p - 1) * slices(blk, c) * A(s.ring) + (p - 1) * blk * B(s.ring);
  }
  // [BHKUW], [TRG] 4.2 (dissemination / Bruck, any p): L steps, p-1 blocks received in all,
  // plus the final local rotation of all p blocks (one pass over the output, costed like a
  // reduction pass, g per byte) that the ring does not need:
  //   L a + (p-1) blk b + p blk g.
  // Two levels: step k sends min(2^k, p - 2^k) blocks to r - 2^k.
  double bruck_allgather(double blk) const {
    if (links) {
      double t = p * blk * g;
      for (int k = 0; k < ceil_log2(n); ++k) {
        const double blocks = std::min(std::ldexp(1.0, k), p - std::ldexp(1.0, k));
        t += A(at(s.doubling, k)) + blocks * blk * B(at(s.doubling, k));
      }
      return t;
    }
    return ceil_log2(n) * a + (p - 1) * blk * b + p * blk * g;
  }

  // ---- alltoall (blk = one block per destination) ----
  // [TRG] 4.6 (long messages, pairwise exchange): p-1 steps of one block:
  //   (p-1)(a + blk b).
  // Two levels: each step at its own load (cost_shape.h counts how many steps have each).
  double pairwise_alltoall(double blk) const {
    if (links) {
      double t = 0;
      for (size_t load = 0; load < s.pairwise.size(); ++load) {
        const int l = static_cast<int>(load);
        t += s.pairwise[load] * (A(l) + blk * B(l));
      }
      return t;
    }
    return (p - 1) * (a + blk * b);
  }
  // [BHKUW], [TRG] 4.6 (short messages): step k sends the blocks whose index i < p has bit k
  // set, packed in one message; for a power of two that is p/2 blocks per step, (m/2) L b in all.
  // Packing and unpacking copy those blocks twice more (2 blk g each, g per byte as a pass over
  // memory), which the pairwise exchange does not do:
  //   sum over k < L of (a + |{i < p : i & 2^k}| blk (b + 2g)).
  double bruck_alltoall(double blk) const {
    double t = 0;
    for (int k = 0; k < ceil_log2(n); ++k) {
      const long long period = 2LL << k, half = 1LL << k;
      const long long blocks = n / period * half + std::max(0LL, n % period - half);
      const int load = at(s.doubling, k);
      t += A(load) + static_cast<double>(blocks) * blk * (B(load) + 2 * g);
    }
    return t;
  }

  // ---- gather / scatter (blk = one rank's block) ----
  // The flat tree: the root exchanges with the p-1 others one after another:
  //   (p-1)(a + blk b).
  // Two levels: the blocks of the ranks on other hosts cross the root's link (root 0's).
  double linear(double blk) const {
    if (links) {
      const double near = s.root_host_ranks - 1, far = p - s.root_host_ranks;
      return near * (a + blk * b) + far * (ae + blk * B(1));
    }
    return (p - 1) * (a + blk * b);
  }
  // [CHPV] (minimum spanning tree), [TRG]: L rounds, round j moving 2^j blocks through the root:
  //   L a + (p-1) blk b.
  double binomial_tree(double blk) const {
    if (links) {
      double t = 0;
      for (int j = 0; j < ceil_log2(n); ++j) t += A(at(s.binomial, j));
      return t + (p - 1) * blk * B(busiest(s.binomial));
    }
    return ceil_log2(n) * a + (p - 1) * blk * b;
  }

  // ---- barrier ----
  // [HFM], [TRG] 4.8: L rounds of zero-byte messages:
  //   L a.
  // ---- hierarchical, on one host ----
  // What each hierarchical algorithm degenerates to on one host (comm/algorithms/
  // hierarchical_*.cpp): allreduce is a ring reduce-scatter then a ring allgather, the ring's
  // time plus a for the pipeline that drains between them; reduce is binomial_reduce's tree;
  // broadcast a binomial tree pipelined in k = slices(m) slices, the root sending m to each of
  // its L children, L (k a + m b); reduce_scatter and allgather are the rings. Listed after
  // those algorithms, a hierarchical one never wins on one host.
  double hierarchical_on_one_host(AlgorithmId algorithm, double x) const {
    switch (algorithm) {
      case AlgorithmId::AllreduceHierarchical: return ring_allreduce(x) + a;
      case AlgorithmId::ReduceHierarchical: return binomial_reduce(x);
      case AlgorithmId::BroadcastHierarchical: {
        const double k = slices(x, c);
        return k == 1 ? binomial_broadcast(x) : ceil_log2(n) * (k * a + x * b);
      }
      case AlgorithmId::ReduceScatterHierarchical: return ring_reduce_scatter(x);
      case AlgorithmId::AllgatherHierarchical: return ring_allgather(x);
      default: return 0;
    }
  }

  double dissemination_barrier() const {
    if (links) {
      double t = 0;
      for (int k = 0; k < ceil_log2(n); ++k) t += A(at(s.doubling, k));
      return t;
    }
    return ceil_log2(n) * a;
  }
};

}  // namespace

namespace {

// The two levels of predict_seconds' hierarchical formulas.
TwoLevelParams two_levels(const CostShape& shape, const CostParams& params) {
  const bool links = shape.multi_host() && params.two_level();
  return TwoLevelParams{.alpha_intra = params.alpha_s,
                        .beta_intra = params.beta_s_per_byte,
                        .alpha_inter = links ? params.inter_alpha_s : params.alpha_s,
                        .beta_inter = links ? params.inter_beta_s_per_byte : params.beta_s_per_byte,
                        .gamma = params.gamma_s_per_byte,
                        .shared_link = links};
}

// The hierarchical allreduce across hosts of one rank each is the ring allreduce
// (hierarchical_allreduce.cpp).
bool runs_the_ring(AlgorithmId algorithm, const CostShape& shape) {
  return algorithm == AlgorithmId::AllreduceHierarchical && shape.multi_host() &&
         shape.max_local == 1;
}

// predict_seconds with the flat algorithms' slice given (bound_seconds keeps the run's slice
// while it zeroes the latencies the slice is computed from).
double predict_with_slice(AlgorithmId algorithm, size_t bytes, const CostShape& shape,
                          const CostParams& params, size_t chunk_bytes, size_t slice_bytes) {
  const int nranks = shape.nranks;
  if (nranks <= 1) return 0;
  const bool links = shape.multi_host() && params.two_level();
  const double ae = links ? params.inter_alpha_s : params.alpha_s;
  const double be = links ? params.inter_beta_s_per_byte : params.beta_s_per_byte;
  // slice_bytes for the flat algorithms (and a shm algorithm's flat fallback); the hierarchical
  // ones cut by their own rule from chunk_bytes (hierarchical_segments.h).
  const Model model{static_cast<double>(nranks), nranks, params.alpha_s, params.beta_s_per_byte,
                    params.gamma_s_per_byte, slice_bytes, shape, ae, be, links};
  const double x = static_cast<double>(bytes);
  switch (algorithm) {
    case AlgorithmId::AllreduceRing: return model.ring_allreduce(x);
    case AlgorithmId::AllreduceRabenseifner: return model.rabenseifner_allreduce(x);
    case AlgorithmId::AllreduceRecursiveDoubling: return model.recursive_doubling_allreduce(x);
    case AlgorithmId::AllreduceDoubleBinaryTree: return model.double_binary_tree_allreduce(x);
    case AlgorithmId::ReduceBinomial: return model.binomial_reduce(x);
    case AlgorithmId::ReduceRing: return model.ring_reduce(x);
    case AlgorithmId::BroadcastBinomial: return model.binomial_broadcast(x);
    case AlgorithmId::BroadcastChain: return model.chain_broadcast(x);
    case AlgorithmId::BroadcastScatterAllgather: return model.scatter_allgather_broadcast(x);
    case AlgorithmId::ReduceScatterRing: return model.ring_reduce_scatter(x);
    case AlgorithmId::ReduceScatterRecursiveHalving:
      return model.recursive_halving_reduce_scatter(x);
    case AlgorithmId::AllgatherRing: return model.ring_allgather(x);
    case AlgorithmId::AllgatherBruck: return model.bruck_allgather(x);
    case AlgorithmId::AlltoallPairwise:
    case AlgorithmId::AlltoallvPairwise: return model.pairwise_alltoall(x);
    case AlgorithmId::AlltoallBruck: return model.bruck_alltoall(x);
    case AlgorithmId::GatherLinear:
    case AlgorithmId::ScatterLinear: return model.linear(x);
    case AlgorithmId::GatherBinomial:
    case AlgorithmId::ScatterBinomial: return model.binomial_tree(x);
    case AlgorithmId::BarrierDissemination: return model.dissemination_barrier();
    case AlgorithmId::AllreduceHierarchical:
    case AlgorithmId::ReduceHierarchical:
    case AlgorithmId::BroadcastHierarchical:
    case AlgorithmId::ReduceScatterHierarchical:
    case AlgorithmId::AllgatherHierarchical: {
      if (!shape.multi_host()) return model.hierarchical_on_one_host(algorithm, x);
      // One rank per host: the allreduce runs the ring, sliced as a flat ring between hosts.
      if (runs_the_ring(algorithm, shape)) return model.ring_allreduce(x);
      return hierarchical_seconds(algorithm, x, shape, two_levels(shape, params), chunk_bytes);
    }
    case AlgorithmId::AllreduceShm:
    case AlgorithmId::AllreduceShmOneshot:
    case AlgorithmId::ReduceShm:
    case AlgorithmId::BroadcastShm:
    case AlgorithmId::ReduceScatterShm:
    case AlgorithmId::AllgatherShm:
    case AlgorithmId::AlltoallShm:
      // Without a segment they run (and cost) their flat fallback, listed before them.
      if (!shape.peer_memory || shape.multi_host()) {
        return predict_with_slice(shm_fallback(algorithm), bytes, shape, params, chunk_bytes,
                                  slice_bytes);
      }
      return shm_seconds(algorithm, x, nranks, params.alpha_s, params.gamma_s_per_byte,
                         chunk_bytes);
    case AlgorithmId::kCount: break;
  }
  return 0;
}

}  // namespace

std::optional<HierarchicalAllreduceParts> explain_hierarchical_allreduce(
    size_t bytes, const CostShape& shape, const CostParams& params, size_t chunk_bytes) {
  if (shape.nranks <= 1 || !shape.multi_host()) return std::nullopt;
  if (runs_the_ring(AlgorithmId::AllreduceHierarchical, shape)) return std::nullopt;
  return hierarchical_allreduce_parts(static_cast<double>(bytes), shape,
                                      two_levels(shape, params), chunk_bytes);
}

HierarchicalLanePlan hierarchical_lane_plan(size_t bytes, const CostShape& shape,
                                            const CostParams& params, size_t chunk_bytes) {
  const auto parts = explain_hierarchical_allreduce(bytes, shape, params, chunk_bytes);
  if (!parts) return {};
  // One-level parameters price one segment whatever the step: the run takes the step the rule
  // gives without a two-level model (hierarchical_segments.h: the 256 KiB floor, or the chunk).
  if (!params.two_level()) {
    return {parts->lane_halving, hierarchical_lane_step_bytes(shape, chunk_bytes, 0, 0)};
  }
  return {parts->lane_halving, parts->lane_step_bytes};
}

double bound_seconds(AlgorithmId algorithm, size_t bytes, const CostShape& shape,
                     const CostParams& params, size_t chunk_bytes) {
  if (shape.nranks <= 1) return 0;
  if (const AlgorithmId fallback = shm_fallback(algorithm); fallback != algorithm) {
    // A shm algorithm: priced by memory speed alone with a segment, else its flat fallback.
    const bool segment = shape.peer_memory && !shape.multi_host();
    return segment ? 0 : bound_seconds(fallback, bytes, shape, params, chunk_bytes);
  }
  switch (algorithm) {
    case AlgorithmId::AllreduceHierarchical:
      if (runs_the_ring(algorithm, shape)) {
        return bound_seconds(AlgorithmId::AllreduceRing, bytes, shape, params, chunk_bytes);
      }
      if (shape.multi_host()) {
        return explain_hierarchical_allreduce(bytes, shape, params, chunk_bytes)->bytes_total();
      }
      break;
    case AlgorithmId::ReduceHierarchical:
    case AlgorithmId::BroadcastHierarchical:
    case AlgorithmId::ReduceScatterHierarchical:
    case AlgorithmId::AllgatherHierarchical:
      if (shape.multi_host()) return 0;
      break;
    default: break;
  }
  CostParams bytes_only = params;
  bytes_only.alpha_s = 0;
  bytes_only.gamma_s_per_byte = 0;
  bytes_only.inter_alpha_s = 0;
  // The slice the run uses, from the real parameters (flat_slice_bytes reads alpha_e).
  return predict_with_slice(algorithm, bytes, shape, bytes_only, chunk_bytes,
                            flat_slice_bytes(shape, params, chunk_bytes));
}

size_t flat_slice_bytes(const CostShape& shape, const CostParams& params, size_t chunk_bytes) {
  if (chunk_bytes == 0 || !shape.multi_host() || !params.two_level()) return chunk_bytes;
  constexpr double kSliceSeconds = 1e-3;        // on the wire per slice, at most
  constexpr double kSliceLatencies = 8;         // alpha's worth of bytes, at least
  constexpr size_t kMinSliceBytes = size_t{16} << 10;
  const double beta = params.inter_beta_s_per_byte;
  const double bytes = std::min(std::max(kSliceSeconds, kSliceLatencies * params.inter_alpha_s) /
                                    beta, 1e15);
  return std::min(chunk_bytes, std::max(kMinSliceBytes, static_cast<size_t>(bytes)));
}

double predict_seconds(AlgorithmId algorithm, size_t bytes, const CostShape& shape,
                       const CostParams& params, size_t chunk_bytes) {
  return predict_with_slice(algorithm, bytes, shape, params, chunk_bytes,
                            flat_slice_bytes(shape, params, chunk_bytes));
}

double predict_seconds(AlgorithmId algorithm, size_t bytes, int nranks, const CostParams& params,
                       size_t chunk_bytes) {
  return predict_seconds(algorithm, bytes, flat_cost_shape(nranks), params, chunk_bytes);
}

std::string format_seconds(double seconds) {
  if (seconds < 1e-3) return fmt::format("{:.1f} us", seconds * 1e6);
  if (seconds < 1) return fmt::format("{:.2f} ms", seconds * 1e3);
  return fmt::format("{:.2f} s", seconds);
}

std::string format_cost_params(const CostParams& params) {
  std::string text =
      fmt::format("alpha {:.3g} us, beta {:.3g} ns/B, gamma {:.3g} ns/B", params.alpha_s * 1e6,
                  params.beta_s_per_byte * 1e9, params.gamma_s_per_byte * 1e9);
  if (params.two_level()) {
    text += fmt::format("; between hosts alpha {:.3g} us, beta {:.3g} ns/B",
                        params.inter_alpha_s * 1e6, params.inter_beta_s_per_byte * 1e9);
  }
  return text;
}

AlgorithmChoice choose(Collective collective, size_t bytes, int nranks, const CostParams& params,
                       size_t chunk_bytes, const AlgoOverrides& overrides) {
  return choose(collective, bytes, flat_cost_shape(nranks), params, chunk_bytes, overrides);
}

AlgorithmChoice choose(Collective collective, size_t bytes, const CostShape& shape,
                       const CostParams& params, size_t chunk_bytes,
                       const AlgoOverrides& overrides, bool explain) {
  AlgorithmChoice choice;
  const auto candidates = algorithms_of(collective);
  const auto head = [&] {
    std::string text = fmt::format("{} {} B x {} ranks", collective_name(collective), bytes,
                                   shape.nranks);
    if (shape.multi_host()) text += fmt::format(" on {} hosts", shape.hosts);
    return text;
  };
  if (candidates.empty()) {
    choice.reason = head() + ": unknown collective";
    return choice;
  }
  if (const auto forced = overrides.get(collective)) {
    choice.algorithm = *forced;
    choice.predicted_s = predict_seconds(*forced, bytes, shape, params, chunk_bytes);
    if (explain) {
      choice.reason = fmt::format("{}: {} ({}): forced by {}", head(), algorithm_name(*forced),
                                  format_seconds(choice.predicted_s), overrides.source);
    }
    return choice;
  }
  // Predictions in table order; the first strictly faster (beyond 1e-9 relative) one wins.
  struct Prediction {
    AlgorithmId id;
    double seconds;
  };
  std::array<Prediction, kAlgorithmCount> predictions{};
  size_t count = 0;
  for (const AlgorithmInfo& info : candidates) {
    predictions[count++] = {info.id, predict_seconds(info.id, bytes, shape, params, chunk_bytes)};
  }
  size_t best = 0;
  for (size_t i = 1; i < count; ++i) {
    if (predictions[i].seconds < predictions[best].seconds * (1 - 1e-9)) best = i;
  }
  choice.algorithm = predictions[best].id;
  choice.predicted_s = predictions[best].seconds;
  if (!explain) return choice;

  std::string others;
  std::vector<Prediction> rest;
  for (size_t i = 0; i < count; ++i) {
    if (i != best) rest.push_back(predictions[i]);
  }
  std::stable_sort(rest.begin(), rest.end(),
                   [](const Prediction& x, const Prediction& y) { return x.seconds < y.seconds; });
  for (const Prediction& other : rest) {
    others += fmt::format("{}{} ({})", others.empty() ? " over " : ", ",
                          algorithm_name(other.id), format_seconds(other.seconds));
  }
  if (rest.empty()) others = ", the only algorithm";
  choice.reason = fmt::format("{}: {} ({}){}; {}", head(), algorithm_name(choice.algorithm),
                              format_seconds(choice.predicted_s), others,
                              format_cost_params(params));
  return choice;
}

}  // namespace plexus::comm
