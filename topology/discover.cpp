#include "topology/discover.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>

#include "topology/host.h"
#include "topology/hwloc_convert.h"
#include "topology/nic_speed.h"
#include "topology/nvml.h"

namespace plexus::topology {

namespace {

constexpr uint16_t kVendorNvidia = 0x10de;
constexpr uint16_t kClassBridgeOther = 0x0680;  // how NVSwitches appear on PCI

struct TopologyDeleter {
  void operator()(hwloc_topology* t) const { hwloc_topology_destroy(t); }
};
using TopologyPtr = std::unique_ptr<hwloc_topology, TopologyDeleter>;

// A topology object with discovery's filters, or nullptr (errno set).
TopologyPtr new_topology() {
  hwloc_topology_t t = nullptr;
  if (hwloc_topology_init(&t) != 0) return nullptr;
  set_discovery_filters(t);
  return TopologyPtr(t);
}

plx_result_t hwloc_failure(const char* call, int err, std::string* error) {
  if (error) *error = std::string(call) + " failed: " + std::strerror(err);
  return PLX_ERROR_SYSTEM;
}

void merge_nvml(const NvmlReport& report, HostTopology* host) {
  host->nvlink_known = report.loaded;
  host->nvlink_note = report.note;
  for (const NvmlGpu& from : report.gpus) {
    Gpu* gpu = nullptr;
    for (Gpu& g : host->gpus)
      if (g.pci_bus_id == from.pci_bus_id) gpu = &g;
    if (gpu == nullptr) {
      host->gpus.push_back({});
      gpu = &host->gpus.back();
      gpu->pci_bus_id = from.pci_bus_id;
      for (const PciDevice& dev : host->pci_devices)
        if (dev.bus_id == from.pci_bus_id) gpu->numa_node = dev.numa_node;
    }
    if (!from.name.empty()) gpu->name = from.name;
    gpu->memory_bytes = from.memory_bytes;
    gpu->nvlinks = from.nvlinks;
    for (NvLinkGroup& group : gpu->nvlinks) {
      if (group.remote != NvLinkRemote::Unknown) continue;
      for (const PciDevice& dev : host->pci_devices)
        if (dev.bus_id == group.remote_pci_bus_id && dev.vendor_id == kVendorNvidia &&
            dev.class_id == kClassBridgeOther)
          group.remote = NvLinkRemote::Switch;
    }
  }
  std::sort(host->gpus.begin(), host->gpus.end(),
            [](const Gpu& a, const Gpu& b) { return a.pci_bus_id < b.pci_bus_id; });
}

}  // namespace

plx_result_t discover_host(HostTopology* out, std::string* error, const DiscoverOptions& options) {
  TopologyPtr topo = new_topology();
  if (!topo) return hwloc_failure("hwloc_topology_init", errno, error);
  if (hwloc_topology_load(topo.get()) != 0)
    return hwloc_failure("hwloc_topology_load", errno, error);
  HostTopology host = from_hwloc(topo.get());
  host.host_id = host_id();
  for (Nic& nic : host.nics) nic.speed_mbit_per_s = nic_speed_mbit_per_s(nic, options.sysfs_root);
  merge_nvml(query_nvml(options.nvml_library), &host);
  *out = std::move(host);
  return PLX_SUCCESS;
}

plx_result_t read_hwloc_xml(const std::string& path, HostTopology* out, std::string* error) {
  if (!std::ifstream(path)) {
    if (error) *error = path + ": cannot be read: " + std::strerror(errno);
    return PLX_ERROR_SYSTEM;
  }
  TopologyPtr topo = new_topology();
  if (!topo) return hwloc_failure("hwloc_topology_init", errno, error);
  // hwloc's libxml2 importer refuses a malformed file in set_xml, its own parser only in load.
  if (hwloc_topology_set_xml(topo.get(), path.c_str()) != 0 ||
      hwloc_topology_load(topo.get()) != 0) {
    if (error)
      *error = path + ": not a valid hwloc XML topology (hwloc: " + std::strerror(errno) +
               "; HWLOC_XML_VERBOSE=1 lstopo -i " + path + " says why)";
    return PLX_ERROR_INVALID_ARGUMENT;
  }
  HostTopology host = from_hwloc(topo.get());
  host.host_id = host.hostname.empty() ? "host0" : host.hostname;
  host.nvlink_known = false;
  host.nvlink_note = "read from hwloc XML, which has no NVLink information";
  *out = std::move(host);
  return PLX_SUCCESS;
}

}  // namespace plexus::topology
