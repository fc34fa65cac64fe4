// host_layout.cpp - see host_layout.h. The grouping is the same as topology/rank_groups.h's
// group_ranks (hosts in order of first rank, ranks increasing, rails in host order), kept here so
// that the algorithms depend on nothing outside comm/.
#include "comm/algorithms/host_layout.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <string_view>

#include "comm/base/error.h"

namespace plexus::comm {

int HostLayout::min_local() const {
  int fewest = 0;
  for (const std::vector<int>& ranks : hosts) {
    const int size = static_cast<int>(ranks.size());
    if (fewest == 0 || size < fewest) fewest = size;
  }
  return fewest;
}

std::vector<int> HostLayout::lane_group(int lane) const {
  std::vector<int> group;
  group.reserve(hosts.size());
  for (int h = 0; h < host_count(); ++h) group.push_back(proxy(h, lane));
  return group;
}

HostLayout host_layout(std::span<const std::string> host_ids) {
  HostLayout layout;
  const int n = static_cast<int>(host_ids.size());
  layout.host_of.resize(n);
  layout.local_rank.resize(n);
  std::map<std::string_view, int> index;
  for (int r = 0; r < n; ++r) {
    const auto [it, fresh] = index.emplace(host_ids[r], layout.host_count());
    if (fresh) layout.hosts.emplace_back();
    std::vector<int>& ranks = layout.hosts[it->second];
    layout.host_of[r] = it->second;
    layout.local_rank[r] = static_cast<int>(ranks.size());
    ranks.push_back(r);
  }
  for (const std::vector<int>& ranks : layout.hosts) {
    if (ranks.size() > layout.rails.size()) layout.rails.resize(ranks.size());
    for (size_t l = 0; l < ranks.size(); ++l) layout.rails[l].push_back(ranks[l]);
  }
  return layout;
}

HostLayout single_host_layout(int nranks) {
  const std::vector<std::string> ids(static_cast<size_t>(std::max(nranks, 0)), "host");
  return host_layout(ids);
}

plx_result_t resolve_layout(const HostLayout* given, int n, int rank, const char* algorithm,
                            HostLayout* fallback, const HostLayout** out) {
  if (given == nullptr) {
    *fallback = single_host_layout(n);
    *out = fallback;
    return PLX_SUCCESS;
  }
  if (given->size() != n) {
    return set_error(PLX_ERROR_INTERNAL,
                     fmt::format("{}: rank {}: the host layout describes {} ranks, the "
                                 "communicator has {}",
                                 algorithm, rank, given->size(), n));
  }
  *out = given;
  return PLX_SUCCESS;
}

}  // namespace plexus::comm
