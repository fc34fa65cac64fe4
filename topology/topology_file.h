// topology_file.h - topology files: reading one (our JSON, or hwloc XML), writing one, and this
// host's topology as PLEXUS_TOPO_FILE and PLEXUS_TOPO_DUMP_FILE ask.
#pragma once

#include <string>

#include "plexus/plexus.h"
#include "topology/discover.h"
#include "topology/host_topology.h"

namespace plexus::topology {

// Largest topology file read (a cluster document of 65536 hosts fits).
inline constexpr size_t kMaxTopologyFileBytes = 256u << 20;

// Reads `path`: hwloc XML when it starts (after blanks and a UTF-8 byte order mark) with "<?xml"
// or "<topology", read through hwloc as one host (read_hwloc_xml); other XML ("<system", NCCL's
// format) is refused; anything else is a JSON document (parse_topology_json).
// Returns PLX_ERROR_INVALID_ARGUMENT if it does not exist (ENOENT, ENOTDIR), is not a regular
// file (a folder, FIFO or device), is larger than kMaxTopologyFileBytes or is malformed;
// PLX_ERROR_SYSTEM if it exists but cannot be read (no permission, an I/O error). Messages start with the path. *out is written
// only on success.
plx_result_t read_topology_file(const std::string& path, ClusterTopology* out, std::string* error);

// Writes `text` to `path` through a temporary file and a rename, so that a reader (or another
// rank dumping the same file) never sees half a file. PLX_ERROR_SYSTEM naming the path and errno
// on failure.
plx_result_t write_text_file(const std::string& path, const std::string& text, std::string* error);

// The host of `cluster` that `id` names: the one with that host_id, else the only one if the
// cluster has a single host. PLX_ERROR_INVALID_ARGUMENT otherwise, naming `source`, the id and
// some of the ids the cluster has.
plx_result_t select_host(const ClusterTopology& cluster, const std::string& id,
                         const std::string& source, HostTopology* out, std::string* error);

// This host's topology:
//   PLEXUS_TOPO_FILE set (non-empty): read that file and select_host() by host_id() (which
//     honours PLEXUS_HOST_ID); messages start with "PLEXUS_TOPO_FILE=<path>: ";
//   else discover_host(options).
// Then, with PLEXUS_TOPO_DUMP_FILE set, writes the result there as a host document
// (write_text_file; a failure is PLX_ERROR_SYSTEM "PLEXUS_TOPO_DUMP_FILE=<path>: ...").
// *origin (if given) says where it came from ("discovered through hwloc",
// "PLEXUS_TOPO_FILE=<path>"). *out is written only on success. Thread-safe.
plx_result_t this_host_topology(HostTopology* out, std::string* error,
                                std::string* origin = nullptr, const DiscoverOptions& options = {});

}  // namespace plexus::topology
