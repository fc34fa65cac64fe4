// topology_bridge.h - the cost model (comm/tuning/cost_model.h) seen from a topology: the cost
// parameters a cluster's hardware implies, and every algorithm's predicted time on a
// communicator laid over it. The one header through which tools (plexus-topo) reach comm's
// tuning code: it includes only topology/, plexus/plexus.h and the standard library.
//
// Parameters from the topology (docs/topology.md, "Cost parameters from a topology"):
//   within a host   GPUs with NVLink: alpha kNvlinkAlphaS, beta 1 / (the first GPU's NVLinks x
//                   NVIDIA's per-link rate), gamma kGpuGammaSPerByte;
//                   GPUs without known NVLink: alpha kNvlinkAlphaS, beta 1 / kPcieBytesPerS;
//                   no GPUs: the library's defaults (kDefaultCostParams, comm/tuning/measure.h)
//   between hosts   the slowest host's NICs (a PCI device counted once, speeds from the file),
//                   pooled into links = min(NICs, most ranks on a host) links of equal rate:
//                   beta = links / (total NIC bytes/s); alpha kNetworkAlphaS; NICs of unknown
//                   speed count kDefaultNicMbitPerS
// PLEXUS_COST_MODEL's text, when given, replaces both (with three values, one level), and the
// host then has one link, as in a communicator. Ranks sharing a host without GPUs also share a
// peer-memory segment (TopologyCost::peer_memory) unless PLEXUS_SHM=0.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "plexus/plexus.h"
#include "topology/host_topology.h"
#include "topology/rank_groups.h"

namespace plexus::comm {

inline constexpr double kNvlinkAlphaS = 2e-6;         // one message between GPUs of a host
inline constexpr double kGpuGammaSPerByte = 1e-12;    // reducing on a GPU, 1 TB/s
inline constexpr double kPcieBytesPerS = 25e9;        // GPUs without NVLink: PCIe 4.0 x16
inline constexpr double kNetworkAlphaS = 10e-6;       // one message between hosts
inline constexpr uint64_t kDefaultNicMbitPerS = 10000;  // a NIC of unknown speed: 10 Gbit/s

struct TopologyCost {
  double alpha_s = 0, beta_s_per_byte = 0, gamma_s_per_byte = 0;  // within a host
  double inter_alpha_s = 0, inter_beta_s_per_byte = 0;            // between hosts; 0: one level
  int links_per_host = 1;    // network links a host's messages spread over
  // On hosts without GPUs, the ranks of each host map a peer-memory segment, as in the
  // communicator (comm/core/communicator_peers.cpp), unless PLEXUS_SHM=0: on one host the shm
  // algorithms are priced, across hosts the hierarchical ones' intra-host phases run at memory
  // speed. False when no host has two ranks.
  bool peer_memory = false;
  std::string intra_source;  // "NVLink: 18 links x 25 GB/s = 450 GB/s per GPU each way"
  std::string inter_source;  // "32 NICs, 3200 Gbit/s per host, as 8 links of 400 Gbit/s"
};

// The hierarchical allreduce's prediction taken apart (comm/tuning/hierarchical_cost.h
// HierarchicalAllreduceParts, seen from here): the vector in `segments` segments of
// `segment_bytes`; per segment, each phase's seconds split into latency (alpha), bytes (beta, or
// copies at memory speed with peer memory) and reduction (gamma), the slowest host counting.
// seconds = host + network + boundaries + (segments - 1) max(host, network_stage): the network's
// share per segment with the lanes of several segments in flight (hierarchical_cost.h).
struct PhaseSeconds {
  double latency = 0, bytes = 0, reduction = 0;
  double total() const { return latency + bytes + reduction; }
};
struct HierarchicalPhases {
  double segments = 1, segment_bytes = 0;
  PhaseSeconds reduce_scatter, allgather, network;  // within a host: the first two
  double boundaries = 0;
  double network_stage = 0;
  double seconds = 0;
  bool lane_halving = false;  // the lanes run recursive halving and doubling, not the ring
  double lane_step_bytes = 0;  // the lane step the segments are cut for (hierarchical_segments.h)
  // Seconds of network.bytes that the pipeline's steady stage does not pay: halving lanes on a
  // host count not a power of two return the folded blocks beside the next segment's fold
  // (HierarchicalAllreduceParts::network_return_bytes).
  double network_return = 0;
  double host() const { return reduce_scatter.total() + allgather.total(); }
};

struct AlgorithmPrediction {
  std::string algorithm;  // as PLEXUS_ALGO names it ("ring")
  double seconds = 0;
};

// The cost model of one communicator (`groups`) laid over `cluster`.
class TopologyCostModel {
 public:
  // `cost_model_text`: PLEXUS_COST_MODEL's value ("" = from the topology). Every host of
  // `groups` must be in `cluster`. PLX_ERROR_INVALID_ARGUMENT with PLEXUS_COST_MODEL's message
  // for bad text, PLEXUS_SHM's for a bad value of it, or naming a host id the cluster lacks;
  // *out is written only on success.
  static plx_result_t create(const topology::ClusterTopology& cluster,
                             const topology::RankGroups& groups, std::string_view cost_model_text,
                             size_t chunk_bytes, std::unique_ptr<TopologyCostModel>* out,
                             std::string* error);
  // PLEXUS_COST_MODEL's text alone, as create() checks it: PLX_ERROR_INVALID_ARGUMENT with its
  // message for bad text, so that a tool can refuse it before printing anything.
  static plx_result_t check_cost_model_text(std::string_view cost_model_text, std::string* error);
  // PLEXUS_HIERARCHICAL_LANES, as create() reads it: PLX_ERROR_INVALID_ARGUMENT with its
  // message for a value that is no schedule, for the same purpose.
  static plx_result_t check_lane_schedule(std::string* error);
  ~TopologyCostModel();
  TopologyCostModel(const TopologyCostModel&) = delete;
  TopologyCostModel& operator=(const TopologyCostModel&) = delete;

  const TopologyCost& cost() const;
  int nranks() const;
  // The slice the flat algorithms cut their messages into (cost_model.h flat_slice_bytes): the
  // chunk on one host, across hosts what the network moves in 1 ms if that is less.
  size_t flat_slice_bytes() const;

  // Every algorithm of `collective` ("allreduce", "reduce_scatter", ...) for `bytes` as
  // cost_model.h defines them (reduce_scatter and allgather: one rank's block), the cost model's
  // choice first, then the others fastest first. PLX_ERROR_INVALID_ARGUMENT naming the
  // collective and the valid names when it is unknown.
  plx_result_t predict(std::string_view collective, size_t bytes,
                       std::vector<AlgorithmPrediction>* out, std::string* error) const;
  // Every algorithm of `collective` in algorithm order with its bandwidth bound: the time its
  // bytes alone take under its own schedule, every latency and reduction term at 0
  // (cost_model.h bound_seconds; the hierarchical allreduce keeps its own segments and counts
  // copies through peer memory as bytes). 0 where no bound is computed: the shm algorithms,
  // priced by memory speed alone, and the hierarchical reduce, broadcast, reduce_scatter and
  // allgather on several hosts. Errors as predict().
  plx_result_t predict_bounds(std::string_view collective, size_t bytes,
                              std::vector<AlgorithmPrediction>* out, std::string* error) const;
  // The hierarchical allreduce of `bytes` taken apart into its phases (cost_model.h
  // explain_hierarchical_allreduce); nullopt on one host and on hosts of one rank each.
  std::optional<HierarchicalPhases> explain_hierarchical_allreduce(size_t bytes) const;

 private:
  TopologyCostModel();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// nccl-tests' bus bandwidth factor (doc/PERFORMANCE.md): allreduce 2(n-1)/n, reduce_scatter and
// allgather (n-1)/n, broadcast and reduce 1; 0 for other names.
double bus_factor(std::string_view collective, int nranks);

}  // namespace plexus::comm
