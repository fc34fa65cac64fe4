// nvml.h - NVIDIA GPUs and their NVLinks through NVML, loaded with dlopen at run time, so that
// building Plexus needs no driver and a host without one just reports "no NVML".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "topology/host_topology.h"

namespace plexus::topology {

struct NvmlGpu {
  std::string name;
  std::string pci_bus_id;  // normalized (pci_bus_id.h)
  uint64_t memory_bytes = 0;
  // Active links grouped by remote end. A remote whose type NVML cannot tell (drivers before
  // nvmlDeviceGetNvLinkRemoteDeviceType) is Gpu when its bus id is one of the GPUs listed
  // here, else Unknown.
  std::vector<NvLinkGroup> nvlinks;
};

struct NvmlReport {
  bool loaded = false;        // the library opened and nvmlInit_v2 succeeded
  std::string note;           // why not ("libnvidia-ml.so.1: cannot open shared object file: ..."),
                              // or what answered ("NVML (libnvidia-ml.so.1): 8 GPUs")
  std::vector<NvmlGpu> gpus;  // in NVML's index order
};

// Opens `library` (a name dlopen searches for, or a path), initializes NVML, reads every GPU's
// name, PCI bus id, memory and the state, version and remote end of links 0..17, then shuts
// NVML down and closes the library. A GPU whose handle or PCI information NVML refuses is left
// out and named in the note. Never throws. Thread safety: NVML's own (its init is reference
// counted).
NvmlReport query_nvml(const char* library = "libnvidia-ml.so.1");

}  // namespace plexus::topology
