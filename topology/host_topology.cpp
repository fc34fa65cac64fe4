#include "topology/host_topology.h"

#include <algorithm>
#include <limits>
#include <map>

namespace plexus::topology {

uint32_t HostTopology::core_count() const {
  uint32_t n = 0;
  for (const NumaNode& node : numa_nodes) n += node.cores;
  return n;
}

uint32_t HostTopology::pu_count() const {
  uint32_t n = 0;
  for (const NumaNode& node : numa_nodes) n += node.pus;
  return n;
}

uint64_t HostTopology::memory_bytes() const {
  uint64_t n = 0;
  for (const NumaNode& node : numa_nodes)
    n = node.memory_bytes > std::numeric_limits<uint64_t>::max() - n
            ? std::numeric_limits<uint64_t>::max()
            : n + node.memory_bytes;
  return n;
}

const NumaNode* HostTopology::find_numa_node(int os_index) const {
  for (const NumaNode& node : numa_nodes)
    if (node.os_index == os_index) return &node;
  return nullptr;
}

const Gpu* HostTopology::find_gpu(std::string_view pci_bus_id) const {
  for (const Gpu& gpu : gpus)
    if (gpu.pci_bus_id == pci_bus_id) return &gpu;
  return nullptr;
}

uint64_t HostTopology::network_mbit_per_s() const {
  std::map<std::string, uint64_t> per_device;  // PCI bus id -> fastest NIC on it
  uint64_t off_pci = 0;
  for (const Nic& nic : nics) {
    if (!nic.speed_mbit_per_s) continue;
    if (nic.pci_bus_id.empty()) {
      off_pci = off_pci > std::numeric_limits<uint64_t>::max() - *nic.speed_mbit_per_s
                    ? std::numeric_limits<uint64_t>::max()
                    : off_pci + *nic.speed_mbit_per_s;
    } else {
      uint64_t& speed = per_device[nic.pci_bus_id];
      speed = std::max(speed, *nic.speed_mbit_per_s);
    }
  }
  // Saturates, though speeds are at most kMaxNicMbitPerS (a HostTopology may be built in code).
  const auto add = [](uint64_t a, uint64_t b) {
    return b > std::numeric_limits<uint64_t>::max() - a ? std::numeric_limits<uint64_t>::max()
                                                        : a + b;
  };
  uint64_t total = 0;
  for (const auto& [bus_id, speed] : per_device) total = add(total, speed);
  return add(total, off_pci);
}

bool HostTopology::same_hardware(const HostTopology& other) const {
  HostTopology a = *this;
  a.host_id = other.host_id;
  a.hostname = other.hostname;
  a.description = other.description;
  return a == other;
}

bool nvlink_connected(const HostTopology& host, std::string_view gpu_a, std::string_view gpu_b) {
  const Gpu* a = host.find_gpu(gpu_a);
  const Gpu* b = host.find_gpu(gpu_b);
  if (a == nullptr || b == nullptr || a == b) return false;
  auto reaches_switch = [](const Gpu& gpu) {
    return std::any_of(gpu.nvlinks.begin(), gpu.nvlinks.end(), [](const NvLinkGroup& group) {
      return group.remote == NvLinkRemote::Switch && group.links > 0;
    });
  };
  auto reaches = [](const Gpu& from, const Gpu& to) {
    return std::any_of(from.nvlinks.begin(), from.nvlinks.end(), [&](const NvLinkGroup& group) {
      return group.remote == NvLinkRemote::Gpu && group.links > 0 &&
             group.remote_pci_bus_id == to.pci_bus_id;
    });
  };
  return reaches(*a, *b) || reaches(*b, *a) || (reaches_switch(*a) && reaches_switch(*b));
}

uint64_t nvlink_bytes_per_second_per_direction(uint32_t version) {
  switch (version) {
    case 1:
      return 20'000'000'000ull;
    case 2:
    case 3:
    case 4:
      return 25'000'000'000ull;
    case 5:
      return 50'000'000'000ull;
    default:
      return 0;
  }
}

std::string_view to_string(CacheType type) {
  switch (type) {
    case CacheType::Unified:
      return "unified";
    case CacheType::Data:
      return "data";
    case CacheType::Instruction:
      return "instruction";
  }
  return "unified";
}

std::string_view to_string(NvLinkRemote remote) {
  switch (remote) {
    case NvLinkRemote::Gpu:
      return "gpu";
    case NvLinkRemote::Switch:
      return "switch";
    case NvLinkRemote::Cpu:
      return "cpu";
    case NvLinkRemote::Unknown:
      return "unknown";
  }
  return "unknown";
}

std::string_view to_string(NicKind kind) {
  switch (kind) {
    case NicKind::Network:
      return "network";
    case NicKind::OpenFabrics:
      return "openfabrics";
    case NicKind::Efa:
      return "efa";
  }
  return "network";
}

}  // namespace plexus::topology
