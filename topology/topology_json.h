// topology_json.h - the JSON form of HostTopology and ClusterTopology, which is also the
// topology file format (docs/topology.md gives every field and its unit).
//
//   host document:     {"plexus_topology": 1, "host_id": "a", "numa_nodes": [...], ...}
//   cluster document:  {"plexus_topology": 1, "description": "...",
//                       "hosts": [{"host_id": "p5", "count": 128, "numa_nodes": [...], ...}]}
//
// Writing then reading gives back an equal value (==), and writing that again the same text.
#pragma once

#include <string>
#include <string_view>

#include "plexus/plexus.h"
#include "topology/host_topology.h"

namespace plexus::topology {

// The current (and only) value of "plexus_topology".
inline constexpr int kTopologyFormatVersion = 1;

// A host document: one key per line, each element of a list of objects on a line of its own,
// and a final newline. Every field is
// written, an unknown NIC speed as null.
std::string to_json_text(const HostTopology& host);

// A cluster document: one "hosts" entry per host (no "count").
std::string to_json_text(const ClusterTopology& cluster);

// Reads a host document (as a cluster of one host) or a cluster document. A "hosts" entry with
// "count": N stands for N hosts with ids "<host_id>-0" .. "<host_id>-<N-1>" (a host with no
// host_id is "host<i>", i its position in the expanded list; a host document's is "host0").
// Unknown keys are errors. `name` (a file path, usually) starts every message:
//   "<name>: line 3, column 5: syntax error while parsing object - unexpected '}'; ..."
//   "<name>: hosts[0].numa_nodes[1].cores: expected a non-negative integer, got \"x\""
//   "<name>: hosts[0].numa_nodes[1]: unknown key \"core\" (known keys: os_index, ...)"
// Returns PLX_SUCCESS, PLX_ERROR_INVALID_ARGUMENT for a malformed document (the message says
// where and what was expected) or PLX_ERROR_SYSTEM when memory runs out. *out is written only on
// success. Thread-safe.
plx_result_t parse_topology_json(std::string_view text, const std::string& name,
                                 ClusterTopology* out, std::string* error);

}  // namespace plexus::topology
