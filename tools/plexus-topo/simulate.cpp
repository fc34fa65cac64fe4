// simulate.cpp - see simulate.h.
#include "tools/plexus-topo/simulate.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "comm/topology_bridge.h"
#include "tools/plexus-topo/format.h"

namespace plexus::topo_tool {

using plexus::comm::AlgorithmPrediction;
using plexus::comm::TopologyCostModel;

std::vector<std::string> simulated_algorithms(bool peer_memory) {
  std::vector<std::string> names = {"ring", "double_binary_tree", "rabenseifner",
                                    "recursive_doubling", "hierarchical"};
  if (peer_memory) names.push_back("shm");
  return names;
}

namespace {

nlohmann::json phase_json(const comm::PhaseSeconds& p) {
  return {{"latency_s", p.latency}, {"bytes_s", p.bytes}, {"reduction_s", p.reduction}};
}

std::string phase_text(const char* name, const comm::PhaseSeconds& p) {
  return std::string(name) + " " + format_seconds(p.total()) + " (latency " +
         format_seconds(p.latency) + ", bytes " + format_seconds(p.bytes) + ", reduction " +
         format_seconds(p.reduction) + ")";
}

// Why a network-bound pipeline's steady stage is less than the network phase, if it is.
std::string network_share(const comm::HierarchicalPhases& h) {
  if (h.network_stage == h.network.total()) return "";
  if (h.network_return > 0 && h.network_stage == h.network.bytes - h.network_return) {
    return " (the network's share: its bytes less the folded blocks' return, which crosses "
           "beside the next segment's fold)";
  }
  return " (the network's share: lanes of several segments in flight)";
}

// --explain's second line: the phases of one segment and how the pipeline adds them up.
std::string phases_text(const comm::HierarchicalPhases& h) {
  const double net = h.network.total();
  const bool host_bound = h.host() >= h.network_stage;
  const std::string phases = phase_text("reduce-scatter", h.reduce_scatter) + " + " +
                             phase_text("allgather", h.allgather) + " within a host, " +
                             phase_text(h.lane_halving ? "network (lanes: recursive halving)"
                                                       : "network (lanes: ring)",
                                        h.network);
  if (h.segments <= 1) {
    return "hierarchical: one segment of " +
           format_bytes(static_cast<uint64_t>(h.segment_bytes)) + ", nothing to overlap: " +
           phases + ", one after the other = " + format_seconds(h.seconds);
  }
  return "hierarchical: " + fmt::format("{:g}", h.segments) + " segments of " +
         format_bytes(static_cast<uint64_t>(h.segment_bytes)) + " (lane steps of " +
         format_bytes(static_cast<uint64_t>(h.lane_step_bytes)) + "); per segment " + phases +
         "; the " + (host_bound ? "host" : "network") +
         " stage bounds the pipeline: " + format_seconds(h.host() + net + h.boundaries) +
         " fill and drain + " + fmt::format("{:g}", h.segments - 1) + " x " +
         format_seconds(host_bound ? h.host() : h.network_stage) +
         (host_bound ? "" : network_share(h)) + " = " + format_seconds(h.seconds);
}

}  // namespace

plx_result_t print_simulation(FILE* out, const topology::ClusterTopology& cluster,
                              const topology::RankGroups& g, const SimulateOptions& options,
                              std::string* error) {
  const int n = g.size();
  if (n < 2) {
    *error = "--simulate: a communicator of " + std::to_string(n) +
             " rank has nothing to simulate (give --ranks 2 or more)";
    return PLX_ERROR_INVALID_ARGUMENT;
  }
  std::unique_ptr<TopologyCostModel> model;
  if (plx_result_t rc = TopologyCostModel::create(cluster, g, options.cost_model_text,
                                                  options.chunk_bytes, &model, error);
      rc != PLX_SUCCESS)
    return rc;
  const comm::TopologyCost& cost = model->cost();
  const double factor = comm::bus_factor("allreduce", n);
  const std::vector<std::string> names =
      simulated_algorithms(cost.peer_memory && g.hosts.size() == 1);
  const std::string per_host =
      g.uniform() ? std::to_string(g.hosts.front().size()) : std::string("uneven");

  nlohmann::json rows = nlohmann::json::array();
  if (!options.json) {
    std::fprintf(out, "simulate: allreduce, %d ranks on %zu host%s (%s per host), %s\n", n,
                 g.hosts.size(), g.hosts.size() == 1 ? "" : "s", per_host.c_str(),
                 format_slices(options.chunk_bytes, model->flat_slice_bytes()).c_str());
    std::fprintf(out, "  within a host: %s; between hosts: %s\n", cost.intra_source.c_str(),
                 cost.inter_source.c_str());
    std::fprintf(out, "  busbw GB/s (time) per algorithm, busbw = size / time x 2(n-1)/n; "
                      "* = the cost model's choice\n");
    std::fprintf(out, "  %9s", "size");
    for (const std::string& name : names)
      std::fprintf(out, name == names.back() ? "  %s" : "  %-20s", name.c_str());
    std::fprintf(out, "\n");
  }
  for (uint64_t size : options.sizes) {
    std::vector<AlgorithmPrediction> ranked;
    if (plx_result_t rc = model->predict("allreduce", static_cast<size_t>(size), &ranked, error);
        rc != PLX_SUCCESS)
      return rc;
    std::map<std::string, double> seconds;
    for (const AlgorithmPrediction& p : ranked) seconds[p.algorithm] = p.seconds;
    const std::string& chosen = ranked.front().algorithm;
    nlohmann::json algorithms = nlohmann::json::object();
    if (!options.json) std::fprintf(out, "  %9s", format_bytes(size).c_str());
    for (const std::string& name : names) {
      const double t = seconds[name];
      const double busbw = t > 0 ? static_cast<double>(size) / t * factor : 0;
      algorithms[name] = {{"seconds", t},
                          {"busbw_gbs", t > 0 ? nlohmann::json(busbw / 1e9) : nlohmann::json()}};
      if (!options.json) {
        std::string cell = format_busbw(static_cast<double>(size), t, factor) + " (" +
                           format_seconds(t) + ")" +
                           (name == chosen ? "*" : "");
        std::fprintf(out, name == names.back() ? "  %s" : "  %-20s",
                     cell.c_str());
      }
    }
    if (!options.json) std::fprintf(out, "\n");
    nlohmann::json row = {{"bytes", size}, {"chosen", chosen}, {"algorithms", algorithms}};
    if (options.explain) {
      std::vector<AlgorithmPrediction> bounds;
      if (plx_result_t rc = model->predict_bounds("allreduce", static_cast<size_t>(size), &bounds,
                                                  error);
          rc != PLX_SUCCESS)
        return rc;
      std::string line = "bounds (bytes only), busbw GB/s:";
      for (const std::string& name : names) {
        const auto found =
            std::find_if(bounds.begin(), bounds.end(),
                         [&](const AlgorithmPrediction& b) { return b.algorithm == name; });
        if (found == bounds.end()) continue;
        const AlgorithmPrediction& b = *found;
        const double busbw = b.seconds > 0 ? static_cast<double>(size) / b.seconds * factor : 0;
        row["algorithms"][b.algorithm]["bound_seconds"] = b.seconds;
        row["algorithms"][b.algorithm]["bound_busbw_gbs"] =
            b.seconds > 0 ? nlohmann::json(busbw / 1e9) : nlohmann::json();
        line += " " + b.algorithm + " " +
                format_busbw(static_cast<double>(size), b.seconds, factor);
      }
      const std::optional<comm::HierarchicalPhases> phases =
          model->explain_hierarchical_allreduce(static_cast<size_t>(size));
      if (phases) {
        row["hierarchical_phases"] = {{"segments", phases->segments},
                                      {"segment_bytes", phases->segment_bytes},
                                      {"seconds", phases->seconds},
                                      {"reduce_scatter", phase_json(phases->reduce_scatter)},
                                      {"allgather", phase_json(phases->allgather)},
                                      {"network", phase_json(phases->network)},
                                      {"boundaries_s", phases->boundaries},
                                      {"network_stage_s", phases->network_stage},
                                      {"network_return_s", phases->network_return},
                                      {"lane_schedule", phases->lane_halving ? "halving" : "ring"},
                                      {"lane_step_bytes", phases->lane_step_bytes}};
      }
      if (!options.json) {
        std::fprintf(out, "  %9s  %s\n", "", line.c_str());
        if (phases) std::fprintf(out, "  %9s  %s\n", "", phases_text(*phases).c_str());
      }
    }
    rows.push_back(std::move(row));
  }
  if (options.json) {
    nlohmann::json doc = {
        {"collective", "allreduce"},
        {"nranks", n},
        {"hosts", g.hosts.size()},
        {"ranks_per_host", g.uniform() ? nlohmann::json(g.hosts.front().size()) : nlohmann::json()},
        {"chunk_bytes", options.chunk_bytes},
        {"bus_factor", factor},
        {"cost",
         {{"alpha_s", cost.alpha_s},
          {"beta_s_per_byte", cost.beta_s_per_byte},
          {"gamma_s_per_byte", cost.gamma_s_per_byte},
          {"inter_alpha_s", cost.inter_alpha_s},
          {"inter_beta_s_per_byte", cost.inter_beta_s_per_byte},
          {"links_per_host", cost.links_per_host},
          {"peer_memory", cost.peer_memory},
          {"intra", cost.intra_source},
          {"inter", cost.inter_source}}},
        {"rows", rows}};
    std::fprintf(out, "%s\n", doc.dump(2).c_str());
  }
  return PLX_SUCCESS;
}

}  // namespace plexus::topo_tool
