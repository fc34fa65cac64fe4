#include "tools/plexus-topo/print_collectives.h"

#include <string>

#include "tools/plexus-topo/format.h"

namespace plexus::topo_tool {

using namespace plexus::topology;

namespace {

void print_links(FILE* out, const HostTopology& host) {
  uint64_t mbit = host.network_mbit_per_s();
  if (mbit)
    std::fprintf(out, "  network per host (%s): %zu NIC%s, %s in all\n", host.host_id.c_str(),
                 host.nics.size(), host.nics.size() == 1 ? "" : "s", format_mbit(mbit).c_str());
  else
    std::fprintf(out, "  network per host (%s): %zu NIC%s, speed unknown\n", host.host_id.c_str(),
                 host.nics.size(), host.nics.size() == 1 ? "" : "s");
  if (host.gpus.empty()) return;
  const Gpu& gpu = host.gpus.front();
  uint64_t links = 0, bytes_per_second = 0;
  for (const NvLinkGroup& g : gpu.nvlinks) {
    links += g.links;
    bytes_per_second += g.links * nvlink_bytes_per_second_per_direction(g.version);
  }
  if (links == 0) {
    std::fprintf(out, "  NVLink per GPU (%s): none%s\n", gpu.pci_bus_id.c_str(),
                 host.nvlink_known ? "" : " known");
    return;
  }
  std::string rate = bytes_per_second ? ", " + std::to_string(bytes_per_second / 1'000'000'000ull) +
                                            " GB/s each way (NVIDIA's per-link rate)"
                                      : "";
  std::fprintf(out, "  NVLink per GPU (%s): %llu links%s\n", gpu.pci_bus_id.c_str(),
               static_cast<unsigned long long>(links), rate.c_str());
}

}  // namespace

void print_collective_choices(FILE* out, const ClusterTopology& cluster, const RankGroups& g) {
  std::fprintf(out, "collectives:\n");
  std::fprintf(out,
               "  per-collective algorithm, predicted time and busbw: not available yet "
               "(the cost model in comm/tuning is not connected to plexus-topo)\n");
  if (!cluster.hosts.empty()) print_links(out, cluster.hosts.front());
  const size_t k = g.hosts.size();
  const int n = g.size();
  if (k < 2 || n < 2) return;
  if (!g.uniform()) {
    std::fprintf(out, "  allreduce traffic per host: hosts are uneven, no single figure\n");
    return;
  }
  std::fprintf(out,
               "  allreduce bytes each host sends per byte of buffer: flat ring over %d ranks "
               "2(n-1)/n = %.3f; hierarchical (%zu rails over %zu hosts) 2(K-1)/K = %.3f\n",
               n, 2.0 * (n - 1) / n, g.rails.size(), k,
               2.0 * static_cast<double>(k - 1) / static_cast<double>(k));
}

}  // namespace plexus::topo_tool
