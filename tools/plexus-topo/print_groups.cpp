#include "tools/plexus-topo/print_groups.h"

#include <array>
#include <map>
#include <string>

#include "tools/plexus-topo/format.h"

namespace plexus::topo_tool {

using namespace plexus::topology;

namespace {

// Pairs of ranks per path class. Pairs on different hosts are counted, not enumerated.
std::array<uint64_t, 4> count_paths(const ClusterTopology& cluster,
                                    const std::vector<RankLocation>& ranks, const RankGroups& g) {
  std::map<std::string, const HostTopology*> by_id;
  for (const HostTopology& host : cluster.hosts) by_id[host.host_id] = &host;
  std::array<uint64_t, 4> counts{};
  uint64_t n = ranks.size();
  uint64_t same_host_pairs = 0;
  for (size_t h = 0; h < g.hosts.size(); ++h) {
    auto it = by_id.find(g.host_ids[h]);
    const HostTopology* host = it == by_id.end() ? nullptr : it->second;
    const std::vector<int>& members = g.hosts[h];
    for (size_t i = 0; i < members.size(); ++i)
      for (size_t j = i + 1; j < members.size(); ++j) {
        ++counts[static_cast<size_t>(path_class(ranks[members[i]], ranks[members[j]], host))];
        ++same_host_pairs;
      }
  }
  counts[static_cast<size_t>(PathClass::Network)] = n * (n - 1) / 2 - same_host_pairs;
  return counts;
}

}  // namespace

void print_rank_groups(FILE* out, const ClusterTopology& cluster,
                       const std::vector<RankLocation>& ranks, const RankGroups& g) {
  std::string shape =
      g.uniform() ? std::to_string(g.hosts.front().size()) + " per host" : "uneven hosts";
  std::fprintf(out, "communicator: %d ranks on %zu host%s, %s\n", g.size(), g.hosts.size(),
               g.hosts.size() == 1 ? "" : "s", shape.c_str());
  for (size_t h = 0; h < g.hosts.size(); ++h)
    std::fprintf(out, "  host %zu %s: ranks %s\n", h, printable(g.host_ids[h]).c_str(),
                 format_ranks(g.hosts[h]).c_str());
  std::fprintf(out, "  rank  host  local  numa  gpu\n");
  for (int r = 0; r < g.size() && r < kMaxRankRows; ++r) {
    std::string local = std::to_string(g.local_rank[r]) + "/" + std::to_string(g.local_size[r]);
    std::string numa = ranks[r].numa_node == kNoNuma ? "-" : std::to_string(ranks[r].numa_node);
    std::fprintf(out, "  %4d  %4d  %5s  %4s  %s\n", r, g.host_of[r], local.c_str(), numa.c_str(),
                 ranks[r].gpu_pci_bus_id.empty() ? "-" : printable(ranks[r].gpu_pci_bus_id).c_str());
  }
  if (g.size() > kMaxRankRows)
    std::fprintf(out, "  ... (%d more ranks)\n", g.size() - kMaxRankRows);
  std::fprintf(out, "  NUMA domains: %zu\n", g.numa_domains.size());
  std::fprintf(out, "  rails (ranks with the same local rank, one per host):\n");
  for (size_t l = 0; l < g.rails.size(); ++l)
    std::fprintf(out, "    rail %zu: %s\n", l, format_ranks(g.rails[l]).c_str());
  std::array<uint64_t, 4> counts = count_paths(cluster, ranks, g);
  std::fprintf(out, "  rank pairs by closest path:");
  for (PathClass p :
       {PathClass::NvLink, PathClass::SameNuma, PathClass::SameHost, PathClass::Network})
    std::fprintf(out, " %s %llu%s", std::string(to_string(p)).c_str(),
                 static_cast<unsigned long long>(counts[static_cast<size_t>(p)]),
                 p == PathClass::Network ? "\n" : ",");
}

}  // namespace plexus::topo_tool
