// print_collectives.cpp - see print_collectives.h.
#include "tools/plexus-topo/print_collectives.h"

#include <memory>
#include <string>

#include "comm/topology_bridge.h"
#include "tools/plexus-topo/format.h"

namespace plexus::topo_tool {

using namespace plexus::topology;
using plexus::comm::AlgorithmPrediction;
using plexus::comm::TopologyCostModel;

namespace {

void print_links(FILE* out, const HostTopology& host) {
  uint64_t mbit = host.network_mbit_per_s();
  if (mbit)
    std::fprintf(out, "  network per host (%s): %zu NIC%s, %s in all\n",
                 printable(host.host_id).c_str(), host.nics.size(),
                 host.nics.size() == 1 ? "" : "s", format_mbit(mbit).c_str());
  else
    std::fprintf(out, "  network per host (%s): %zu NIC%s, speed unknown\n",
                 printable(host.host_id).c_str(), host.nics.size(),
                 host.nics.size() == 1 ? "" : "s");
  if (host.gpus.empty()) return;
  const Gpu& gpu = host.gpus.front();
  uint64_t links = 0, bytes_per_second = 0;
  for (const NvLinkGroup& g : gpu.nvlinks) {
    links += g.links;
    bytes_per_second += g.links * nvlink_bytes_per_second_per_direction(g.version);
  }
  if (links == 0) {
    std::fprintf(out, "  NVLink per GPU (%s): none%s\n", printable(gpu.pci_bus_id).c_str(),
                 host.nvlink_known ? "" : " known");
    return;
  }
  std::string rate = bytes_per_second ? ", " + std::to_string(bytes_per_second / 1'000'000'000ull) +
                                            " GB/s each way (NVIDIA's per-link rate)"
                                      : "";
  std::fprintf(out, "  NVLink per GPU (%s): %llu links%s\n", printable(gpu.pci_bus_id).c_str(),
               static_cast<unsigned long long>(links), rate.c_str());
}

std::string seconds_params(double alpha, double beta) {
  char buf[96];
  const std::string rate = beta > 0 ? format_gbs(1 / beta) + " GB/s" : "no limit";
  std::snprintf(buf, sizeof(buf), "alpha %s, beta %.4g ns/B (%s)", format_seconds(alpha).c_str(),
                beta * 1e9, rate.c_str());
  return buf;
}

}  // namespace

const std::vector<std::string>& table_collectives() {
  static const std::vector<std::string> names = {"allreduce", "reduce_scatter", "allgather",
                                                 "broadcast", "reduce"};
  return names;
}

size_t model_bytes(const std::string& collective, uint64_t size, int nranks) {
  if ((collective == "reduce_scatter" || collective == "allgather") && nranks > 0) {
    const uint64_t block = size / static_cast<uint64_t>(nranks);
    return static_cast<size_t>(block > 0 ? block : 1);
  }
  return static_cast<size_t>(size);
}

plx_result_t print_collective_choices(FILE* out, const ClusterTopology& cluster,
                                      const RankGroups& g, const CollectiveTableOptions& options,
                                      std::string* error) {
  std::unique_ptr<TopologyCostModel> model;
  if (plx_result_t rc = TopologyCostModel::create(cluster, g, options.cost_model_text,
                                                  options.chunk_bytes, &model, error);
      rc != PLX_SUCCESS)
    return rc;
  const comm::TopologyCost& cost = model->cost();
  std::fprintf(out, "collectives:\n");
  if (!cluster.hosts.empty()) print_links(out, cluster.hosts.front());
  const size_t k = g.hosts.size();
  const int n = g.size();
  if (k >= 2 && n >= 2 && g.uniform())
    std::fprintf(out,
                 "  allreduce bytes each host sends per byte of buffer: flat ring over %d ranks "
                 "2(n-1)/n = %.3f; hierarchical (%zu rails over %zu hosts) 2(K-1)/K = %.3f\n",
                 n, 2.0 * (n - 1) / n, g.rails.size(), k,
                 2.0 * static_cast<double>(k - 1) / static_cast<double>(k));
  std::fprintf(out, "  cost model within a host: %s; %s, gamma %.4g ns/B\n",
               cost.intra_source.c_str(), seconds_params(cost.alpha_s, cost.beta_s_per_byte).c_str(),
               cost.gamma_s_per_byte * 1e9);
  if (cost.inter_beta_s_per_byte > 0)
    std::fprintf(out, "  cost model between hosts: %s; %s per link\n", cost.inter_source.c_str(),
                 seconds_params(cost.inter_alpha_s, cost.inter_beta_s_per_byte).c_str());
  else
    std::fprintf(out, "  cost model between hosts: %s\n", cost.inter_source.c_str());
  if (cost.peer_memory && k == 1)
    std::fprintf(out, "  peer memory: the ranks share one segment; the shm algorithms are priced "
                      "(PLEXUS_SHM=0 turns them off)\n");
  else if (cost.peer_memory)
    std::fprintf(out, "  peer memory: the ranks of each host share one segment; the hierarchical "
                      "algorithms' intra-host phases are priced at memory speed (PLEXUS_SHM=0 "
                      "turns it off)\n");
  if (n < 2) {
    std::fprintf(out, "  one rank: nothing moves, every collective takes no time\n");
    return PLX_SUCCESS;
  }
  std::fprintf(out, "  sizes as nccl-tests counts them; busbw = size / time x bus factor; %s\n",
               format_slices(options.chunk_bytes, model->flat_slice_bytes()).c_str());
  for (const std::string& collective : table_collectives()) {
    const double factor = comm::bus_factor(collective, n);
    std::fprintf(out, "  %s (bus factor %.3f)\n", collective.c_str(), factor);
    std::fprintf(out, "    %10s  %-20s %10s %11s  %s\n", "size", "algorithm", "time",
                 "busbw GB/s", "runner-up");
    for (uint64_t size : options.sizes) {
      std::vector<AlgorithmPrediction> ranked;
      if (plx_result_t rc = model->predict(collective, model_bytes(collective, size, n), &ranked,
                                           error);
          rc != PLX_SUCCESS)
        return rc;
      const AlgorithmPrediction& best = ranked.front();
      std::string runner_up = ranked.size() > 1 ? ranked[1].algorithm + " (" +
                                                      format_seconds(ranked[1].seconds) + ")"
                                                : "-";
      std::fprintf(out, "    %10s  %-20s %10s %11s  %s\n", format_bytes(size).c_str(),
                   best.algorithm.c_str(), format_seconds(best.seconds).c_str(),
                   format_busbw(static_cast<double>(size), best.seconds, factor).c_str(),
                   runner_up.c_str());
    }
  }
  return PLX_SUCCESS;
}

}  // namespace plexus::topo_tool
