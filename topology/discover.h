// discover.h - this host's topology from hwloc (and NVML for NVIDIA GPUs), or a host's from an
// hwloc XML file.
#pragma once

#include <string>

#include "plexus/plexus.h"
#include "topology/host_topology.h"

namespace plexus::topology {

struct DiscoverOptions {
  const char* nvml_library = "libnvidia-ml.so.1";  // a name for dlopen, or a path (tests)
  std::string sysfs_root = "/sys";                 // where NIC speeds are read (nic_speed.h)
};

// Discovers this host: hwloc's view (hwloc_convert.h), host_id() (so PLEXUS_HOST_ID applies),
// NIC speeds from sysfs, and NVML's GPUs merged by PCI bus id (name, memory, NVLinks; a GPU
// only NVML sees is added with the NUMA node of its PCI device, if hwloc lists it).
// nvlink_known says whether NVML answered, nvlink_note what it said.
// Returns PLX_SUCCESS, or PLX_ERROR_SYSTEM when hwloc cannot load the topology (the message
// names the hwloc call and errno). *out is written only on success. Thread-safe.
plx_result_t discover_host(HostTopology* out, std::string* error,
                           const DiscoverOptions& options = {});

// Reads an hwloc XML topology (lstopo --of xml, hwloc_topology_export_xml) through hwloc, with
// the same filters as discovery. host_id and hostname are the file's HostName ("host0" if it has
// none); nothing is read from this host (no NIC speeds, no NVML: nvlink_known is false).
// Returns PLX_ERROR_SYSTEM if the file cannot be read, PLX_ERROR_INVALID_ARGUMENT if hwloc
// cannot parse it ("<path>: not a valid hwloc XML topology ..."). *out is written only on
// success.
plx_result_t read_hwloc_xml(const std::string& path, HostTopology* out, std::string* error);

}  // namespace plexus::topology
