// topology_bridge.cpp - see topology_bridge.h.
#include "comm/topology_bridge.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>
#include <set>

#include "comm/algorithms/host_layout.h"
#include "comm/base/config.h"
#include "comm/base/error.h"
#include "comm/tuning/algo_override.h"
#include "comm/tuning/algorithm_id.h"
#include "comm/tuning/cost_cache.h"
#include "comm/tuning/cost_model.h"
#include "comm/tuning/measure.h"

namespace plexus::comm {

using topology::ClusterTopology;
using topology::HostTopology;
using topology::RankGroups;

namespace {

std::string gbytes(double bytes_per_s) { return fmt::format("{:g} GB/s", bytes_per_s / 1e9); }

// The host parameters: NVLink, PCIe or the library's defaults (topology_bridge.h).
void intra_params(const HostTopology& host, TopologyCost* cost) {
  if (host.gpus.empty()) {
    cost->alpha_s = kDefaultCostParams.alpha_s;
    cost->beta_s_per_byte = kDefaultCostParams.beta_s_per_byte;
    cost->gamma_s_per_byte = kDefaultCostParams.gamma_s_per_byte;
    cost->intra_source = "no GPUs: the library's defaults";  // the values follow it
    return;
  }
  uint64_t links = 0, bytes_per_s = 0;
  for (const topology::NvLinkGroup& g : host.gpus.front().nvlinks) {
    links += g.links;
    bytes_per_s += g.links * topology::nvlink_bytes_per_second_per_direction(g.version);
  }
  cost->alpha_s = kNvlinkAlphaS;
  cost->gamma_s_per_byte = kGpuGammaSPerByte;
  if (bytes_per_s > 0) {
    cost->beta_s_per_byte = 1.0 / static_cast<double>(bytes_per_s);
    cost->intra_source =
        fmt::format("NVLink: {} links, {} per GPU each way", links,
                    gbytes(static_cast<double>(bytes_per_s)));
  } else {
    cost->beta_s_per_byte = 1.0 / kPcieBytesPerS;
    cost->intra_source = fmt::format("GPUs without known NVLink rate: PCIe default {}",
                                     gbytes(kPcieBytesPerS));
  }
}

// One host's network: distinct NIC links (a PCI device once) and their total rate, a NIC of
// unknown speed counted at kDefaultNicMbitPerS. Saturates instead of overflowing.
void host_network(const HostTopology& host, int* nics, uint64_t* mbit) {
  std::set<std::string> seen;
  *nics = 0;
  *mbit = 0;
  for (const topology::Nic& nic : host.nics) {
    if (!nic.pci_bus_id.empty() && !seen.insert(nic.pci_bus_id).second) continue;
    const uint64_t speed = nic.speed_mbit_per_s.value_or(kDefaultNicMbitPerS);
    *mbit = speed > std::numeric_limits<uint64_t>::max() - *mbit
                ? std::numeric_limits<uint64_t>::max()
                : *mbit + speed;
    ++*nics;
  }
}

// PLEXUS_HIERARCHICAL_LANES as a communicator reads it; PLX_ERROR_INVALID_ARGUMENT with its
// message in *error for a value that is no schedule.
plx_result_t read_lane_schedule(LaneSchedule* lanes, std::string* error) {
  if (lane_schedule_from_env(-1, lanes) == PLX_SUCCESS) return PLX_SUCCESS;
  *error = last_error();
  return PLX_ERROR_INVALID_ARGUMENT;
}

}  // namespace

struct TopologyCostModel::Impl {
  TopologyCost cost;
  CostParams params;
  CostShape shape;
  size_t chunk_bytes = 0;
  int nranks = 0;
};

TopologyCostModel::TopologyCostModel() : impl_(std::make_unique<Impl>()) {}
TopologyCostModel::~TopologyCostModel() = default;
const TopologyCost& TopologyCostModel::cost() const { return impl_->cost; }

size_t TopologyCostModel::flat_slice_bytes() const {
  return comm::flat_slice_bytes(impl_->shape, impl_->params, impl_->chunk_bytes);
}
int TopologyCostModel::nranks() const { return impl_->nranks; }

plx_result_t TopologyCostModel::check_cost_model_text(std::string_view cost_model_text,
                                                      std::string* error) {
  CostParams given;
  if (parse_cost_model(cost_model_text, 0, &given) != PLX_SUCCESS) {
    *error = last_error();
    return PLX_ERROR_INVALID_ARGUMENT;
  }
  return PLX_SUCCESS;
}

plx_result_t TopologyCostModel::check_lane_schedule(std::string* error) {
  LaneSchedule lanes = LaneSchedule::Auto;
  return read_lane_schedule(&lanes, error);
}

plx_result_t TopologyCostModel::create(const ClusterTopology& cluster, const RankGroups& groups,
                                       std::string_view cost_model_text, size_t chunk_bytes,
                                       std::unique_ptr<TopologyCostModel>* out,
                                       std::string* error) {
  std::map<std::string, const HostTopology*> by_id;
  for (const HostTopology& host : cluster.hosts) by_id[host.host_id] = &host;
  std::vector<const HostTopology*> hosts;
  for (const std::string& id : groups.host_ids) {
    auto it = by_id.find(id);
    if (it == by_id.end()) {
      *error = "TopologyCostModel: host \"" + id + "\" of the communicator is not in the topology";
      return PLX_ERROR_INVALID_ARGUMENT;
    }
    hosts.push_back(it->second);
  }
  std::unique_ptr<TopologyCostModel> model(new TopologyCostModel());
  Impl& m = *model->impl_;
  m.nranks = groups.size();
  m.chunk_bytes = chunk_bytes;
  std::vector<std::string> host_of_rank;
  for (int r = 0; r < groups.size(); ++r) host_of_rank.push_back(groups.host_ids[groups.host_of[r]]);
  m.shape = cost_shape(host_layout(host_of_rank));
  if (plx_result_t rc = read_lane_schedule(&m.shape.lanes, error); rc != PLX_SUCCESS) return rc;
  TopologyCost& cost = m.cost;

  if (!cost_model_text.empty()) {
    CostParams given;
    if (parse_cost_model(cost_model_text, 0, &given) != PLX_SUCCESS) {
      *error = last_error();
      return PLX_ERROR_INVALID_ARGUMENT;
    }
    cost.alpha_s = given.alpha_s;
    cost.beta_s_per_byte = given.beta_s_per_byte;
    cost.gamma_s_per_byte = given.gamma_s_per_byte;
    cost.inter_alpha_s = given.inter_alpha_s;
    cost.inter_beta_s_per_byte = given.inter_beta_s_per_byte;
    cost.intra_source = "PLEXUS_COST_MODEL=" + std::string(cost_model_text);
    cost.inter_source = given.two_level() ? cost.intra_source + ", one link per host"
                                          : "none (PLEXUS_COST_MODEL has one level)";
  } else {
    if (!hosts.empty()) intra_params(*hosts.front(), &cost);
    if (hosts.size() > 1) {
      int nics = 0;
      uint64_t mbit = std::numeric_limits<uint64_t>::max();
      for (const HostTopology* host : hosts) {  // the slowest host bounds every step
        int n = 0;
        uint64_t rate = 0;
        host_network(*host, &n, &rate);
        if (n == 0) {
          n = 1;
          rate = kDefaultNicMbitPerS;
        }
        if (rate < mbit || nics == 0) {  // the first host even if its total saturated
          mbit = rate;
          nics = n;
        }
      }
      cost.links_per_host = std::max(1, std::min(nics, m.shape.max_local));
      const double bytes_per_s = static_cast<double>(mbit) * 1e6 / 8;
      cost.inter_alpha_s = kNetworkAlphaS;
      cost.inter_beta_s_per_byte = cost.links_per_host / bytes_per_s;
      cost.inter_source = fmt::format(
          "{} NIC{}, {} Gbit/s per host, as {} link{} of {:g} Gbit/s", nics, nics == 1 ? "" : "s",
          static_cast<double>(mbit) / 1000, cost.links_per_host,
          cost.links_per_host == 1 ? "" : "s",
          static_cast<double>(mbit) / 1000 / cost.links_per_host);
    } else {
      cost.inter_source = "none (one host)";
    }
  }
  const bool cpu_hosts = std::all_of(hosts.begin(), hosts.end(),
                                     [](const HostTopology* h) { return h->gpus.empty(); });
  if (cpu_hosts && m.shape.max_local >= 2) {
    std::optional<int64_t> enabled;
    if (config_integer("PLEXUS_SHM", 0, 1, &enabled) != PLX_SUCCESS) {
      *error = last_error();
      return PLX_ERROR_INVALID_ARGUMENT;
    }
    cost.peer_memory = enabled.value_or(1) != 0;
    m.shape.peer_memory = cost.peer_memory;
  }
  m.params = CostParams{cost.alpha_s, cost.beta_s_per_byte, cost.gamma_s_per_byte,
                        cost.inter_alpha_s, cost.inter_beta_s_per_byte};
  m.shape.nics_per_host = cost.links_per_host;
  *out = std::move(model);
  return PLX_SUCCESS;
}

namespace {

// The collective named `collective`, or nullopt with *error naming `caller` and the valid names.
std::optional<Collective> known_collective(std::string_view caller, std::string_view collective,
                                           std::string* error) {
  std::optional<Collective> c = find_collective(collective);
  if (!c) {
    *error = fmt::format("{}: collective \"{}\" is not one of {}", caller, collective,
                         collective_names());
  }
  return c;
}

}  // namespace

plx_result_t TopologyCostModel::predict(std::string_view collective, size_t bytes,
                                        std::vector<AlgorithmPrediction>* out,
                                        std::string* error) const {
  const std::optional<Collective> c = known_collective("predict", collective, error);
  if (!c) return PLX_ERROR_INVALID_ARGUMENT;
  const Impl& m = *impl_;
  const AlgorithmChoice choice = choose(*c, bytes, m.shape, m.params, m.chunk_bytes);
  std::vector<AlgorithmPrediction> ranked;
  for (const AlgorithmInfo& info : algorithms_of(*c)) {
    if (info.id == choice.algorithm) continue;
    ranked.push_back({std::string(info.name),
                      predict_seconds(info.id, bytes, m.shape, m.params, m.chunk_bytes)});
  }
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const auto& a, const auto& b) { return a.seconds < b.seconds; });
  ranked.insert(ranked.begin(),
                {std::string(algorithm_name(choice.algorithm)), choice.predicted_s});
  *out = std::move(ranked);
  return PLX_SUCCESS;
}

plx_result_t TopologyCostModel::predict_bounds(std::string_view collective, size_t bytes,
                                               std::vector<AlgorithmPrediction>* out,
                                               std::string* error) const {
  const std::optional<Collective> c = known_collective("predict_bounds", collective, error);
  if (!c) return PLX_ERROR_INVALID_ARGUMENT;
  const Impl& m = *impl_;
  std::vector<AlgorithmPrediction> bounds;
  for (const AlgorithmInfo& info : algorithms_of(*c)) {
    bounds.push_back({std::string(info.name),
                      bound_seconds(info.id, bytes, m.shape, m.params, m.chunk_bytes)});
  }
  *out = std::move(bounds);
  return PLX_SUCCESS;
}

std::optional<HierarchicalPhases> TopologyCostModel::explain_hierarchical_allreduce(
    size_t bytes) const {
  const Impl& m = *impl_;
  const std::optional<HierarchicalAllreduceParts> parts =
      comm::explain_hierarchical_allreduce(bytes, m.shape, m.params, m.chunk_bytes);
  if (!parts) return std::nullopt;
  const auto seconds = [](const PhaseCost& p) {
    return PhaseSeconds{p.latency, p.bytes, p.reduction};
  };
  return HierarchicalPhases{parts->segments,       parts->segment_bytes,
                            seconds(parts->reduce_scatter), seconds(parts->allgather),
                            seconds(parts->network), parts->boundaries,
                            parts->network_stage(),          parts->total(),
                            parts->lane_halving,
                            static_cast<double>(parts->lane_step_bytes),
                            parts->network_return_bytes};
}

double bus_factor(std::string_view collective, int nranks) {
  const double n = nranks;
  if (nranks < 1) return 0;
  if (collective == "allreduce") return 2 * (n - 1) / n;
  if (collective == "reduce_scatter" || collective == "allgather") return (n - 1) / n;
  if (collective == "broadcast" || collective == "reduce") return 1;
  return 0;
}

}  // namespace plexus::comm
