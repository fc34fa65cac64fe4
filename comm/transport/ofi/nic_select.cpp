// nic_select.cpp - NIC choice by PCI locality (see nic_select.h).
#include "comm/transport/ofi/nic_select.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <set>
#include <tuple>

#include "topology/pci_bus_id.h"

namespace plexus::comm::ofi {

namespace {

// A PCI address as one number (domain, bus, device, function), so that devices behind one
// switch, whose bus numbers are adjacent, are close.
std::optional<uint64_t> pci_key(const std::string& bus_id) {
  unsigned domain = 0, bus = 0, device = 0, function = 0;
  if (bus_id.empty() ||
      std::sscanf(bus_id.c_str(), "%x:%x:%x.%x", &domain, &bus, &device, &function) != 4) {
    return std::nullopt;
  }
  return (uint64_t{domain} << 16) | (uint64_t{bus} << 8) | (uint64_t{device} << 3) | function;
}

// How far a NIC is from a GPU: NUMA nodes first (when both are known), then PCI addresses.
uint64_t distance(uint64_t gpu_key, int gpu_numa, uint64_t nic_key, int nic_numa) {
  const bool other_numa =
      gpu_numa != topology::kNoNuma && nic_numa != topology::kNoNuma && gpu_numa != nic_numa;
  const uint64_t pci = gpu_key > nic_key ? gpu_key - nic_key : nic_key - gpu_key;
  return (other_numa ? uint64_t{1} << 48 : 0) + pci;
}

struct Located {
  size_t index;  // into the candidates
  uint64_t key;
  int numa;
};

// Rule 2 of nic_select.h: even blocks by local rank, NICs in PCI order (then by name: "eth0"
// before "eth1" where neither has a PCI address).
NicChoice spread_by_local_rank(const std::vector<NicCandidate>& nics, const RankLocality& rank,
                               const std::string& why) {
  std::vector<size_t> order(nics.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::tie(nics[a].pci_bus_id, nics[a].domain) <
           std::tie(nics[b].pci_bus_id, nics[b].domain);
  });
  const size_t n = nics.size();
  const size_t l = static_cast<size_t>(std::max(rank.local_size, 1));
  const size_t r = std::min(static_cast<size_t>(std::max(rank.local_rank, 0)), l - 1);
  NicChoice choice;
  if (n >= l) {
    for (size_t i = r * n / l; i < (r + 1) * n / l; ++i) choice.nics.push_back(order[i]);
  } else {
    choice.nics.push_back(order[r * n / l]);
  }
  choice.reason = fmt::format("{}: local rank {} of {} takes {} of the {} NICs, spread evenly",
                              why, r, l, choice.nics.size(), n);
  return choice;
}

}  // namespace

std::vector<NicCandidate> nic_candidates(const fi_info* list) {
  std::vector<NicCandidate> out;
  std::set<std::string> seen;
  for (const fi_info* info = list; info != nullptr; info = info->next) {
    const char* domain = info->domain_attr != nullptr ? info->domain_attr->name : nullptr;
    if (domain == nullptr || !seen.insert(domain).second) continue;
    NicCandidate nic;
    nic.domain = domain;
    if (info->nic != nullptr && info->nic->bus_attr != nullptr &&
        info->nic->bus_attr->bus_type == FI_BUS_PCI) {
      const fi_pci_attr& pci = info->nic->bus_attr->attr.pci;
      nic.pci_bus_id =
          topology::format_pci_bus_id(pci.domain_id, pci.bus_id, pci.device_id, pci.function_id);
    }
    out.push_back(std::move(nic));
  }
  return out;
}

NicChoice choose_nics(const std::vector<NicCandidate>& nics, const RankLocality& rank,
                      const topology::HostTopology& host) {
  if (nics.empty()) return {};
  if (nics.size() == 1) return {{0}, "the only NIC"};

  // The candidates' PCI addresses and NUMA nodes (the host topology's when they carry none).
  std::vector<Located> located;
  for (size_t i = 0; i < nics.size(); ++i) {
    const std::optional<uint64_t> key = pci_key(nics[i].pci_bus_id);
    if (!key) continue;
    int numa = nics[i].numa_node;
    if (numa == topology::kNoNuma) {
      for (const topology::Nic& nic : host.nics) {
        if (nic.pci_bus_id == nics[i].pci_bus_id) numa = nic.numa_node;
      }
    }
    located.push_back({i, *key, numa});
  }

  const std::optional<std::string> gpu_id = topology::normalize_pci_bus_id(rank.gpu_pci_bus_id);
  const topology::Gpu* gpu = gpu_id ? host.find_gpu(*gpu_id) : nullptr;
  if (rank.gpu_pci_bus_id.empty()) return spread_by_local_rank(nics, rank, "no GPU");
  if (gpu == nullptr) {
    return spread_by_local_rank(nics, rank,
                                fmt::format("GPU {} not in the host topology", rank.gpu_pci_bus_id));
  }
  if (located.size() != nics.size()) {
    return spread_by_local_rank(nics, rank, "a NIC without a PCI address");
  }

  // Rule 1: every NIC belongs to its nearest GPU; the rank takes its GPU's.
  std::vector<std::pair<uint64_t, int>> gpus;  // key, NUMA node; in host order
  size_t mine = 0;
  for (const topology::Gpu& g : host.gpus) {
    const std::optional<uint64_t> key = pci_key(g.pci_bus_id);
    if (!key) continue;
    if (&g == gpu) mine = gpus.size();
    gpus.push_back({*key, g.numa_node});
  }
  const uint64_t my_key = *pci_key(gpu->pci_bus_id);
  // owner[i]: the GPU nearest located[i]; load[i]: GPUs using it.
  std::vector<size_t> owner(located.size(), 0);
  std::vector<size_t> load(located.size(), 1);
  std::vector<bool> owns_one(gpus.size(), false);
  for (size_t i = 0; i < located.size(); ++i) {
    for (size_t g = 1; g < gpus.size(); ++g) {
      if (distance(gpus[g].first, gpus[g].second, located[i].key, located[i].numa) <
          distance(gpus[owner[i]].first, gpus[owner[i]].second, located[i].key,
                   located[i].numa)) {
        owner[i] = g;
      }
    }
    owns_one[owner[i]] = true;
  }
  NicChoice choice;
  for (size_t i = 0; i < located.size(); ++i) {
    if (owner[i] == mine) choice.nics.push_back(located[i].index);
  }
  if (!choice.nics.empty()) {
    std::sort(choice.nics.begin(), choice.nics.end(), [&](size_t a, size_t b) {
      return distance(my_key, gpu->numa_node, located[a].key, located[a].numa) <
             distance(my_key, gpu->numa_node, located[b].key, located[b].numa);
    });
    choice.reason = fmt::format("GPU {}: the {} NIC{} nearest it", gpu->pci_bus_id,
                                choice.nics.size(), choice.nics.size() == 1 ? "" : "s");
    return choice;
  }
  // The GPUs owning no NIC share one each, in host order: the least used, then the nearest, so
  // that they spread instead of all taking the one nearest their side of the host.
  for (size_t g = 0; g < gpus.size(); ++g) {
    if (owns_one[g]) continue;
    size_t best = 0;
    for (size_t i = 1; i < located.size(); ++i) {
      const auto key = [&](size_t n) {
        return std::make_pair(load[n], distance(gpus[g].first, gpus[g].second, located[n].key,
                                                located[n].numa));
      };
      if (key(i) < key(best)) best = i;
    }
    ++load[best];
    if (g == mine) {
      choice.nics.push_back(located[best].index);
      choice.reason = fmt::format("GPU {}: owns no NIC, shares the least used one nearest it",
                                  gpu->pci_bus_id);
      return choice;
    }
  }
  return spread_by_local_rank(nics, rank, "internal: the GPU's NIC was not found");
}

}  // namespace plexus::comm::ofi
