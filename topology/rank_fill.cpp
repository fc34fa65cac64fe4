#include "topology/rank_fill.h"

namespace plexus::topology {

plx_result_t fill_hosts(const ClusterTopology& cluster, int nranks, int per_host,
                        std::vector<RankLocation>* out, std::string* error) {
  auto invalid = [&](std::string message) {
    if (error) *error = "fill_hosts: " + message;
    return PLX_ERROR_INVALID_ARGUMENT;
  };
  if (nranks < 1) return invalid("nranks " + std::to_string(nranks) + " is not at least 1");
  if (per_host < 1) return invalid("per_host " + std::to_string(per_host) + " is not at least 1");
  size_t hosts_needed = (static_cast<size_t>(nranks) + per_host - 1) / per_host;
  if (hosts_needed > cluster.hosts.size())
    return invalid(std::to_string(nranks) + " ranks at " + std::to_string(per_host) +
                   " per host need " + std::to_string(hosts_needed) + " hosts; the topology has " +
                   std::to_string(cluster.hosts.size()));
  std::vector<RankLocation> ranks(nranks);
  for (int r = 0; r < nranks; ++r) {
    const HostTopology& host = cluster.hosts[r / per_host];
    size_t local = static_cast<size_t>(r % per_host);
    RankLocation& loc = ranks[r];
    loc.host_id = host.host_id;
    if (local < host.gpus.size()) {
      loc.gpu_pci_bus_id = host.gpus[local].pci_bus_id;
      loc.numa_node = host.gpus[local].numa_node;
    }
    if (loc.numa_node == kNoNuma && !host.numa_nodes.empty())
      loc.numa_node = host.numa_nodes[local * host.numa_nodes.size() / per_host].os_index;
  }
  *out = std::move(ranks);
  return PLX_SUCCESS;
}

}  // namespace plexus::topology
