#include "topology/host_check.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <vector>

#include "topology/cpu_list.h"

namespace plexus::topology {

namespace {

std::string at(std::string_view list, size_t i, std::string_view key) {
  return std::string(list) + "[" + std::to_string(i) + "]." + std::string(key);
}

// "0, 1": the os_index values a reference may take.
template <typename T>
std::string index_list(const std::vector<T>& items) {
  std::string s;
  for (const T& x : items) s.append(s.empty() ? "" : ", ").append(std::to_string(x.os_index));
  return s.empty() ? "none listed" : s;
}

std::optional<HostProblem> first_duplicate(std::string_view list, std::string_view key,
                                           const std::vector<std::string>& values) {
  std::map<std::string, size_t> seen;
  for (size_t i = 0; i < values.size(); ++i) {
    auto [it, fresh] = seen.emplace(values[i], i);
    if (!fresh)
      return HostProblem{at(list, i, key), values[i] + " is already used by " + std::string(list) +
                                               "[" + std::to_string(it->second) + "]"};
  }
  return std::nullopt;
}

// No CPU in two NUMA nodes' cpus (each list is valid by now): the later node is named.
std::optional<HostProblem> check_cpus_disjoint(const HostTopology& h) {
  std::map<uint32_t, std::pair<uint32_t, size_t>> taken;  // first -> (last, node index)
  for (size_t i = 0; i < h.numa_nodes.size(); ++i) {
    auto ranges = cpu_list_ranges(h.numa_nodes[i].cpus);
    if (!ranges) continue;
    for (const auto& [first, last] : *ranges) {
      auto next = taken.upper_bound(last);  // ranges starting after ours cannot overlap
      if (next != taken.begin()) {
        auto prev = std::prev(next);
        if (prev->second.first >= first) {
          const uint32_t cpu = std::max(first, prev->first);
          return HostProblem{at("numa_nodes", i, "cpus"),
                             "cpu " + std::to_string(cpu) + " is also in numa_nodes[" +
                                 std::to_string(prev->second.second) + "].cpus (\"" +
                                 h.numa_nodes[prev->second.second].cpus + "\")"};
        }
      }
      taken.emplace(first, std::make_pair(last, i));
    }
  }
  return std::nullopt;
}

std::optional<HostProblem> check_counts(const HostTopology& h) {
  if (h.numa_nodes.empty())
    return HostProblem{"numa_nodes", "expected at least one NUMA node, got []"};
  auto fewer = [](uint32_t pus, uint32_t cores) {
    return std::to_string(pus) + " is fewer than cores (" + std::to_string(cores) + ")";
  };
  for (size_t i = 0; i < h.packages.size(); ++i)
    if (h.packages[i].pus < h.packages[i].cores)
      return HostProblem{at("packages", i, "pus"), fewer(h.packages[i].pus, h.packages[i].cores)};
  for (size_t i = 0; i < h.numa_nodes.size(); ++i) {
    const NumaNode& n = h.numa_nodes[i];
    if (n.pus < n.cores) return HostProblem{at("numa_nodes", i, "pus"), fewer(n.pus, n.cores)};
    if (n.cpus.empty()) continue;
    std::optional<uint32_t> listed = cpu_list_size(n.cpus);
    if (!listed)
      return HostProblem{at("numa_nodes", i, "cpus"),
                         "expected a CPU list like \"0-23,48-71\", got \"" + n.cpus + "\""};
    if (*listed != n.pus)
      return HostProblem{at("numa_nodes", i, "cpus"),
                         "\"" + n.cpus + "\" lists " + std::to_string(*listed) +
                             " CPUs, but pus is " + std::to_string(n.pus)};
  }
  return check_cpus_disjoint(h);
}

std::optional<HostProblem> check_unique(const HostTopology& h) {
  std::vector<std::string> v;
  for (const Package& p : h.packages) v.push_back(std::to_string(p.os_index));
  if (auto p = first_duplicate("packages", "os_index", v)) return p;
  v.clear();
  for (const NumaNode& n : h.numa_nodes) v.push_back(std::to_string(n.os_index));
  if (auto p = first_duplicate("numa_nodes", "os_index", v)) return p;
  v.clear();
  for (const PciDevice& d : h.pci_devices) v.push_back(d.bus_id);
  if (auto p = first_duplicate("pci_devices", "bus_id", v)) return p;
  v.clear();
  for (const Gpu& g : h.gpus) v.push_back(g.pci_bus_id);
  if (auto p = first_duplicate("gpus", "pci_bus_id", v)) return p;
  v.clear();
  for (const Nic& n : h.nics) v.push_back(n.name);
  return first_duplicate("nics", "name", v);
}

std::optional<HostProblem> check_references(const HostTopology& h) {
  for (size_t i = 0; i < h.numa_nodes.size(); ++i) {
    int pkg = h.numa_nodes[i].package;
    bool found = pkg == kNoNuma;
    for (const Package& p : h.packages) found = found || p.os_index == pkg;
    if (!found)
      return HostProblem{at("numa_nodes", i, "package"), std::to_string(pkg) +
                                                             " is not the os_index of a package (" +
                                                             index_list(h.packages) + ")"};
  }
  auto numa = [&](std::string_view list, size_t i, int node) -> std::optional<HostProblem> {
    if (node == kNoNuma || h.find_numa_node(node) != nullptr) return std::nullopt;
    return HostProblem{at(list, i, "numa_node"), std::to_string(node) +
                                                     " is not the os_index of a NUMA node (" +
                                                     index_list(h.numa_nodes) + ")"};
  };
  for (size_t i = 0; i < h.pci_devices.size(); ++i)
    if (auto p = numa("pci_devices", i, h.pci_devices[i].numa_node)) return p;
  for (size_t i = 0; i < h.gpus.size(); ++i)
    if (auto p = numa("gpus", i, h.gpus[i].numa_node)) return p;
  for (size_t i = 0; i < h.nics.size(); ++i)
    if (auto p = numa("nics", i, h.nics[i].numa_node)) return p;
  for (size_t i = 0; i < h.gpus.size(); ++i)
    for (size_t l = 0; l < h.gpus[i].nvlinks.size(); ++l) {
      const NvLinkGroup& g = h.gpus[i].nvlinks[l];
      if (g.remote != NvLinkRemote::Gpu || h.find_gpu(g.remote_pci_bus_id) != nullptr) continue;
      std::string path = at("gpus", i, "nvlinks[" + std::to_string(l) + "].remote_pci_bus_id");
      if (g.remote_pci_bus_id.empty())
        return HostProblem{path, "expected the peer GPU's PCI bus id, got \"\""};
      return HostProblem{path,
                         g.remote_pci_bus_id + " is not the pci_bus_id of a GPU of this host"};
    }
  return std::nullopt;
}

}  // namespace

std::optional<HostProblem> check_host(const HostTopology& host) {
  if (auto p = check_counts(host)) return p;
  if (auto p = check_unique(host)) return p;
  return check_references(host);
}

}  // namespace plexus::topology
