// host_topology.h - what one host is made of: packages, NUMA nodes, caches, PCI devices, GPUs
// (with their NVLinks) and NICs, each device with the NUMA node it sits on.
//
// A plain value type: discover_host() (discover.h) fills it through hwloc and NVML, the JSON
// reader (topology_json.h) from a topology file, and == compares two field by field. The JSON
// form is the topology file format; docs/topology.md gives every field and its unit.
//
//   host "p5-0"
//   +- packages[]     os_index, CPU model, cores, PUs
//   +- numa_nodes[]   os_index, package, memory_bytes, cores, PUs, cpus ("0-47,96-143")
//   +- caches[]       one entry per kind (level, type, size, line) with how many the host has
//   +- pci_devices[]  bus id, vendor/device/class ids, NUMA node
//   +- gpus[]         name, PCI bus id, NUMA node, memory, NVLinks grouped by what they reach
//   +- nics[]         name, kind (network, openfabrics, efa), PCI bus id, NUMA node, speed
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace plexus::topology {

// A NUMA node os_index for "not known" (a device whose locality hwloc cannot tell, a NUMA node
// spanning packages, a rank not bound to one node).
inline constexpr int kNoNuma = -1;

// Fastest NIC link speed accepted (Mbit/s): 10 Tbit/s. A topology file's speed_mbit_per_s must
// be 1..kMaxNicMbitPerS (null: unknown); a discovered speed above it counts as unknown. Keeps
// every sum of NIC speeds far from overflowing.
inline constexpr uint64_t kMaxNicMbitPerS = 10'000'000;

struct Package {
  int os_index = 0;
  std::string model;   // CPU model as the processor reports it ("" if unknown)
  uint32_t cores = 0;  // physical cores
  uint32_t pus = 0;    // processing units (hardware threads)
  bool operator==(const Package&) const = default;
};

struct NumaNode {
  int os_index = 0;
  int package = kNoNuma;  // os_index of the package holding all its CPUs, kNoNuma if none/several
  uint64_t memory_bytes = 0;  // local memory
  uint32_t cores = 0;
  uint32_t pus = 0;
  std::string cpus;  // Linux cpulist of its PUs ("0-23,48-71"); "" when not described
  bool operator==(const NumaNode&) const = default;
};

enum class CacheType { Unified, Data, Instruction };

// One kind of cache and how many of it the host has (2 x L2 1 MiB, ...).
struct Cache {
  uint32_t level = 0;  // 1, 2, 3, ...
  CacheType type = CacheType::Unified;
  uint64_t size_bytes = 0;
  uint32_t line_bytes = 0;  // 0 if unknown
  uint32_t count = 0;       // instances on the host
  bool operator==(const Cache&) const = default;
};

struct PciDevice {
  std::string bus_id;  // "0000:10:1c.0" (domain:bus:device.function, lower-case hex)
  uint16_t vendor_id = 0;
  uint16_t device_id = 0;
  uint16_t class_id = 0;  // base class << 8 | subclass (0x0302: 3D controller)
  int numa_node = kNoNuma;
  bool operator==(const PciDevice&) const = default;
};

// What the far end of an NVLink is.
enum class NvLinkRemote { Gpu, Switch, Cpu, Unknown };

// Links of one GPU that reach the same remote end (a peer GPU, an NVSwitch, ...).
struct NvLinkGroup {
  NvLinkRemote remote = NvLinkRemote::Unknown;
  std::string remote_pci_bus_id;  // the peer's bus id ("" when not known, as for switches)
  uint32_t links = 0;             // number of active links
  uint32_t version = 0;           // NVLink version (3 on A100, 4 on H100); 0 if unknown
  bool operator==(const NvLinkGroup&) const = default;
};

struct Gpu {
  std::string name;        // "NVIDIA H100 80GB HBM3"; "" if unknown
  std::string pci_bus_id;  // normalized as PciDevice::bus_id
  int numa_node = kNoNuma;
  uint64_t memory_bytes = 0;            // device memory; 0 if unknown
  std::vector<std::string> os_devices;  // hwloc OS device names ("card0", "nvml0", ...)
  std::vector<NvLinkGroup> nvlinks;
  bool operator==(const Gpu&) const = default;
};

enum class NicKind {
  Network,      // a kernel network interface (eth0, ens5)
  OpenFabrics,  // an RDMA verbs device (mlx5_0)
  Efa,          // an AWS Elastic Fabric Adapter verbs device (efa_0, rdmap79s0)
};

struct Nic {
  std::string name;
  NicKind kind = NicKind::Network;
  std::string pci_bus_id;  // "" if not on PCI
  int numa_node = kNoNuma;
  std::optional<uint64_t> speed_mbit_per_s;  // link speed in 10^6 bit/s; nullopt if unknown
  bool operator==(const Nic&) const = default;
};

struct HostTopology {
  std::string host_id;                 // as topology::host_id() gives it on that host
  std::string hostname;                // "" if unknown
  std::string description;             // free text ("AWS p5.48xlarge"); "" for a discovered host
  std::vector<Package> packages;       // ordered by os_index
  std::vector<NumaNode> numa_nodes;    // ordered by os_index
  std::vector<Cache> caches;           // ordered by level, then type
  std::vector<PciDevice> pci_devices;  // ordered by bus id
  std::vector<Gpu> gpus;               // ordered by PCI bus id
  std::vector<Nic> nics;               // ordered by PCI bus id, then name
  // Whether gpus[].nvlinks is the whole story (NVML answered, or a file says so). When false
  // there may be NVLinks nobody could see; nvlink_note says why ("libnvidia-ml.so.1: cannot
  // open shared object file ...").
  bool nvlink_known = false;
  std::string nvlink_note;

  bool operator==(const HostTopology&) const = default;

  uint32_t core_count() const;                             // sum over NUMA nodes
  uint32_t pu_count() const;                               // sum over NUMA nodes
  uint64_t memory_bytes() const;  // sum over NUMA nodes, saturating at UINT64_MAX
  const NumaNode* find_numa_node(int os_index) const;      // nullptr if none
  const Gpu* find_gpu(std::string_view pci_bus_id) const;  // nullptr if none
  // Sum of the NICs' known speeds, counting each PCI device once (a NIC seen both as a network
  // interface and as a verbs device is one link), in 10^6 bit/s. Saturates at UINT64_MAX rather
  // than overflow (a file may give any speed).
  uint64_t network_mbit_per_s() const;
  // The same hardware: equal in everything but host_id, hostname and description.
  bool same_hardware(const HostTopology& other) const;
};

// Several hosts (a cluster file). Host ids are unique.
struct ClusterTopology {
  std::string description;
  std::vector<HostTopology> hosts;
  bool operator==(const ClusterTopology&) const = default;
};

// Whether GPUs a and b (PCI bus ids) of `host` have an NVLink between them: a link of one that
// reaches the other directly, or both with links to NVSwitches (an NVSwitch system connects all
// its GPUs, as NCCL assumes). False if either is not a GPU of the host.
bool nvlink_connected(const HostTopology& host, std::string_view gpu_a, std::string_view gpu_b);

// Bytes per second one NVLink of this version carries in each direction (NVIDIA's figures:
// NVLink 1: 20 GB/s; 2, 3 and 4: 25 GB/s; 5: 50 GB/s, with GB = 10^9 bytes); 0 if unknown.
uint64_t nvlink_bytes_per_second_per_direction(uint32_t version);

// Names as the JSON form writes them.
std::string_view to_string(CacheType type);       // "unified", "data", "instruction"
std::string_view to_string(NvLinkRemote remote);  // "gpu", "switch", "cpu", "unknown"
std::string_view to_string(NicKind kind);         // "network", "openfabrics", "efa"

}  // namespace plexus::topology
