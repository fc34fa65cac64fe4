#include "topology/rank_groups.h"

#include <map>
#include <utility>

namespace plexus::topology {

bool RankGroups::uniform() const {
  for (const std::vector<int>& ranks : hosts)
    if (ranks.size() != hosts.front().size()) return false;
  return true;
}

RankGroups group_ranks(std::span<const RankLocation> ranks) {
  RankGroups g;
  const int n = static_cast<int>(ranks.size());
  g.host_of.resize(n);
  g.local_rank.resize(n);
  g.local_size.resize(n);
  g.numa_domain_of.assign(n, -1);
  std::map<std::string_view, int> host_index;
  std::map<std::pair<int, int>, int> domain_index;  // (host, numa) -> domain
  for (int r = 0; r < n; ++r) {
    auto [it, fresh] = host_index.emplace(ranks[r].host_id, static_cast<int>(g.hosts.size()));
    if (fresh) {
      g.host_ids.push_back(ranks[r].host_id);
      g.hosts.emplace_back();
    }
    int h = it->second;
    g.host_of[r] = h;
    g.local_rank[r] = static_cast<int>(g.hosts[h].size());
    g.hosts[h].push_back(r);
    if (ranks[r].numa_node != kNoNuma) {
      auto [d, new_domain] = domain_index.emplace(std::make_pair(h, ranks[r].numa_node),
                                                  static_cast<int>(g.numa_domains.size()));
      if (new_domain) g.numa_domains.emplace_back();
      g.numa_domains[d->second].push_back(r);
      g.numa_domain_of[r] = d->second;
    }
  }
  for (const std::vector<int>& members : g.hosts) {
    for (int r : members) g.local_size[r] = static_cast<int>(members.size());
    if (members.size() > g.rails.size()) g.rails.resize(members.size());
    for (size_t l = 0; l < members.size(); ++l) g.rails[l].push_back(members[l]);
  }
  return g;
}

PathClass path_class(const RankLocation& a, const RankLocation& b, const HostTopology* host) {
  if (a.host_id != b.host_id) return PathClass::Network;
  if (host != nullptr && !a.gpu_pci_bus_id.empty() && !b.gpu_pci_bus_id.empty() &&
      nvlink_connected(*host, a.gpu_pci_bus_id, b.gpu_pci_bus_id))
    return PathClass::NvLink;
  if (a.numa_node != kNoNuma && a.numa_node == b.numa_node) return PathClass::SameNuma;
  return PathClass::SameHost;
}

std::string_view to_string(PathClass path) {
  switch (path) {
    case PathClass::NvLink:
      return "nvlink";
    case PathClass::SameNuma:
      return "same-numa";
    case PathClass::SameHost:
      return "same-host";
    case PathClass::Network:
      return "network";
  }
  return "network";
}

}  // namespace plexus::topology
