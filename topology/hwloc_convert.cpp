#include "topology/hwloc_convert.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <tuple>

#include "topology/pci_bus_id.h"

namespace plexus::topology {

namespace {

constexpr uint16_t kClass3dController = 0x0302;
constexpr uint16_t kVendorAmazon = 0x1d0f;

int os_index_of(hwloc_obj_t obj) {
  return obj->os_index == HWLOC_UNKNOWN_INDEX ? static_cast<int>(obj->logical_index)
                                              : static_cast<int>(obj->os_index);
}

std::string trimmed(const char* text) {
  std::string s = text ? text : "";
  size_t end = s.find_last_not_of(" \t");
  if (end == std::string::npos) return "";
  size_t start = s.find_first_not_of(" \t");
  return s.substr(start, end - start + 1);
}

uint32_t count_inside(hwloc_topology_t topo, hwloc_const_cpuset_t set, hwloc_obj_type_t type) {
  if (set == nullptr || hwloc_bitmap_iszero(set)) return 0;
  int n = hwloc_get_nbobjs_inside_cpuset_by_type(topo, set, type);
  return n > 0 ? static_cast<uint32_t>(n) : 0;
}

std::string cpu_list(hwloc_const_cpuset_t set) {
  if (set == nullptr || hwloc_bitmap_iszero(set)) return "";
  char* text = nullptr;
  if (hwloc_bitmap_list_asprintf(&text, set) < 0 || text == nullptr) return "";
  std::string list = text;
  std::free(text);
  return list;
}

// The NUMA node of an I/O object: the one node of its nearest non-I/O ancestor, if just one.
int numa_of(hwloc_topology_t topo, hwloc_obj_t obj) {
  hwloc_obj_t cpu_side = hwloc_get_non_io_ancestor_obj(topo, obj);
  if (cpu_side == nullptr || cpu_side->nodeset == nullptr) return kNoNuma;
  if (hwloc_bitmap_weight(cpu_side->nodeset) != 1) return kNoNuma;
  return hwloc_bitmap_first(cpu_side->nodeset);
}

hwloc_obj_t pci_parent(hwloc_obj_t osdev) {
  hwloc_obj_t p = osdev->parent;
  return p != nullptr && p->type == HWLOC_OBJ_PCI_DEVICE ? p : nullptr;
}

std::string bus_id(hwloc_obj_t pci) {
  const auto& a = pci->attr->pcidev;
  return format_pci_bus_id(a.domain, a.bus, a.dev, a.func);
}

void read_cpus(hwloc_topology_t topo, HostTopology* host) {
  for (hwloc_obj_t p = nullptr; (p = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_PACKAGE, p));) {
    Package pkg;
    pkg.os_index = os_index_of(p);
    pkg.model = trimmed(hwloc_obj_get_info_by_name(p, "CPUModel"));
    pkg.cores = count_inside(topo, p->cpuset, HWLOC_OBJ_CORE);
    pkg.pus = count_inside(topo, p->cpuset, HWLOC_OBJ_PU);
    host->packages.push_back(pkg);
  }
  for (hwloc_obj_t n = nullptr; (n = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_NUMANODE, n));) {
    NumaNode node;
    node.os_index = os_index_of(n);
    hwloc_obj_t pkg = hwloc_get_ancestor_obj_by_type(topo, HWLOC_OBJ_PACKAGE, n);
    node.package = pkg ? os_index_of(pkg) : kNoNuma;
    node.memory_bytes = n->attr->numanode.local_memory;
    node.cores = count_inside(topo, n->cpuset, HWLOC_OBJ_CORE);
    node.pus = count_inside(topo, n->cpuset, HWLOC_OBJ_PU);
    node.cpus = cpu_list(n->cpuset);
    host->numa_nodes.push_back(node);
  }
  auto by_index = [](const auto& a, const auto& b) { return a.os_index < b.os_index; };
  std::sort(host->packages.begin(), host->packages.end(), by_index);
  std::sort(host->numa_nodes.begin(), host->numa_nodes.end(), by_index);
}

void read_caches(hwloc_topology_t topo, HostTopology* host) {
  std::map<std::tuple<uint32_t, int, uint64_t, uint32_t>, uint32_t> kinds;
  for (int t = HWLOC_OBJ_L1CACHE; t <= HWLOC_OBJ_L3ICACHE; ++t) {
    auto type = static_cast<hwloc_obj_type_t>(t);
    if (!hwloc_obj_type_is_cache(type)) continue;
    for (hwloc_obj_t c = nullptr; (c = hwloc_get_next_obj_by_type(topo, type, c));) {
      const auto& a = c->attr->cache;
      int kind = a.type == HWLOC_OBJ_CACHE_DATA          ? static_cast<int>(CacheType::Data)
                 : a.type == HWLOC_OBJ_CACHE_INSTRUCTION ? static_cast<int>(CacheType::Instruction)
                                                         : static_cast<int>(CacheType::Unified);
      ++kinds[{a.depth, kind, a.size, a.linesize}];
    }
  }
  for (const auto& [key, count] : kinds) {
    const auto& [level, kind, size, line] = key;
    host->caches.push_back({level, static_cast<CacheType>(kind), size, line, count});
  }
}

bool is_efa(hwloc_obj_t osdev, hwloc_obj_t pci) {
  if (std::string_view(osdev->name ? osdev->name : "").starts_with("efa")) return true;
  return pci != nullptr && pci->attr->pcidev.vendor_id == kVendorAmazon &&
         (pci->attr->pcidev.device_id & 0xfff0) == 0xefa0;
}

void read_devices(hwloc_topology_t topo, HostTopology* host) {
  std::map<std::string, Gpu> gpus;  // by bus id
  for (hwloc_obj_t p = nullptr; (p = hwloc_get_next_pcidev(topo, p));) {
    PciDevice dev;
    dev.bus_id = bus_id(p);
    dev.vendor_id = p->attr->pcidev.vendor_id;
    dev.device_id = p->attr->pcidev.device_id;
    dev.class_id = p->attr->pcidev.class_id;
    dev.numa_node = numa_of(topo, p);
    host->pci_devices.push_back(dev);
    if (dev.class_id == kClass3dController) {
      Gpu& gpu = gpus[dev.bus_id];
      gpu.pci_bus_id = dev.bus_id;
      gpu.numa_node = dev.numa_node;
      gpu.name = trimmed(hwloc_obj_get_info_by_name(p, "PCIDevice"));
    }
  }
  std::sort(host->pci_devices.begin(), host->pci_devices.end(),
            [](const PciDevice& a, const PciDevice& b) { return a.bus_id < b.bus_id; });
  for (hwloc_obj_t o = nullptr; (o = hwloc_get_next_osdev(topo, o));) {
    hwloc_obj_t pci = pci_parent(o);
    std::string name = o->name ? o->name : "";
    switch (o->attr->osdev.type) {
      case HWLOC_OBJ_OSDEV_GPU:
      case HWLOC_OBJ_OSDEV_COPROC: {
        if (pci == nullptr) break;  // not tied to a device we can place
        Gpu& gpu = gpus[bus_id(pci)];
        gpu.pci_bus_id = bus_id(pci);
        gpu.numa_node = numa_of(topo, pci);
        gpu.os_devices.push_back(name);
        std::string model = trimmed(hwloc_obj_get_info_by_name(o, "GPUModel"));
        if (model.empty()) model = trimmed(hwloc_obj_get_info_by_name(pci, "PCIDevice"));
        if (gpu.name.empty()) gpu.name = model;
        break;
      }
      case HWLOC_OBJ_OSDEV_NETWORK:
      case HWLOC_OBJ_OSDEV_OPENFABRICS: {
        Nic nic;
        nic.name = name;
        nic.kind = o->attr->osdev.type == HWLOC_OBJ_OSDEV_NETWORK ? NicKind::Network
                   : is_efa(o, pci)                               ? NicKind::Efa
                                                                  : NicKind::OpenFabrics;
        nic.pci_bus_id = pci ? bus_id(pci) : "";
        nic.numa_node = pci ? numa_of(topo, pci) : numa_of(topo, o);
        host->nics.push_back(nic);
        break;
      }
      default:
        break;
    }
  }
  for (auto& [id, gpu] : gpus) {
    std::sort(gpu.os_devices.begin(), gpu.os_devices.end());
    host->gpus.push_back(std::move(gpu));
  }
  std::sort(host->nics.begin(), host->nics.end(), [](const Nic& a, const Nic& b) {
    return std::tie(a.pci_bus_id, a.name) < std::tie(b.pci_bus_id, b.name);
  });
}

}  // namespace

void set_discovery_filters(hwloc_topology_t topo) {
  hwloc_topology_set_flags(topo, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED);
  hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  hwloc_topology_set_type_filter(topo, HWLOC_OBJ_PCI_DEVICE, HWLOC_TYPE_FILTER_KEEP_ALL);
  hwloc_topology_set_cache_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_ALL);
  hwloc_topology_set_icache_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_ALL);
}

HostTopology from_hwloc(hwloc_topology_t topo) {
  HostTopology host;
  host.hostname = trimmed(hwloc_obj_get_info_by_name(hwloc_get_root_obj(topo), "HostName"));
  read_cpus(topo, &host);
  read_caches(topo, &host);
  read_devices(topo, &host);
  return host;
}

}  // namespace plexus::topology
