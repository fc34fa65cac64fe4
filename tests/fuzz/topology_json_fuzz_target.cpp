// topology_json_fuzz_target.cpp - the fuzzing entry point for the topology file's JSON reader
// (topology/topology_json.h: parse_topology_json, what PLEXUS_TOPO_FILE and plexus-topo read).
// hwloc XML is hwloc's to parse and is not fuzzed here.
//
// Input bytes: the document. The properties checked (a failure aborts, which the fuzzer
// reports):
//  - parse_topology_json returns PLX_SUCCESS, or PLX_ERROR_INVALID_ARGUMENT / PLX_ERROR_SYSTEM
//    with a message that starts with the file's name, and leaves *out alone; it never crashes,
//    throws, hangs or overflows (ASan and UBSan), and what it builds stays within the fuzzer's
//    memory limit (-rss_limit_mb, -malloc_limit_mb);
//  - an accepted cluster has 1..65536 hosts with distinct, non-empty ids, the first 64 each
//    consistent (check_host finds nothing; a count's copies differ only in their ids); counts
//    expand a document to at most 2^22 objects, whatever the bytes ask for;
//  - written again (to_json_text; its first 64 hosts) it reads back equal, and that writes the
//    same text; each host written as a host document reads back as itself.
// The same entry point replays tests/fuzz/corpus/topology_json/ in ctest
// (corpus_replay_test.cpp).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <string_view>

#include "topology/host_check.h"
#include "topology/topology_json.h"
#include "tests/fuzz/fuzz_require.h"

namespace {

using namespace plexus::topology;

constexpr char kName[] = "fuzz.json";

using plexus::fuzz::require;

ClusterTopology read_back(const std::string& text) {
  ClusterTopology back;
  std::string error;
  const plx_result_t rc = parse_topology_json(text, kName, &back, &error);
  require(rc == PLX_SUCCESS, "a document written by to_json_text does not read back:", error);
  return back;
}

void check_cluster(const ClusterTopology& cluster) {
  require(!cluster.hosts.empty() && cluster.hosts.size() <= 65536, "host count out of 1..65536");
  std::set<std::string> ids;
  size_t objects = 0;  // hosts and the entries of their lists
  for (size_t i = 0; i < cluster.hosts.size(); ++i) {
    const HostTopology& host = cluster.hosts[i];
    objects += 1 + host.packages.size() + host.numa_nodes.size() + host.caches.size() +
               host.pci_devices.size() + host.gpus.size() + host.nics.size();
    for (const Gpu& g : host.gpus) objects += g.nvlinks.size() + g.os_devices.size();
    require(objects <= (size_t{1} << 22), "a cluster of more than 2^22 objects");
    require(!host.host_id.empty(), "a host without an id");
    require(ids.insert(host.host_id).second, "two hosts with one id:", host.host_id);
    if (i >= 64) continue;  // a count's copies differ only in their id
    require(!check_host(host), "an accepted host fails check_host:", host.host_id);
    (void)host.core_count(), (void)host.pu_count(), (void)host.memory_bytes();
    (void)host.network_mbit_per_s();
  }
  // The first hosts (a cluster may hold 65536: too slow to write out for every input).
  ClusterTopology some{cluster.description, {}};
  some.hosts.assign(cluster.hosts.begin(),
                    cluster.hosts.begin() + std::min<size_t>(cluster.hosts.size(), 64));
  const std::string text = to_json_text(some);
  const ClusterTopology back = read_back(text);
  require(back == some, "the cluster written and read back differs");
  require(to_json_text(back) == text, "the cluster read back writes other text");
  // Host documents, for the first few hosts (a cluster may hold 65536).
  for (size_t i = 0; i < cluster.hosts.size() && i < 4; ++i) {
    const ClusterTopology one = read_back(to_json_text(cluster.hosts[i]));
    require(one.hosts.size() == 1 && one.hosts[0] == cluster.hosts[i],
            "a host written as a host document reads back differently");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  ClusterTopology cluster;
  cluster.description = "untouched";
  std::string error;
  const plx_result_t rc = parse_topology_json(text, kName, &cluster, &error);
  if (rc != PLX_SUCCESS) {
    require(rc == PLX_ERROR_INVALID_ARGUMENT || rc == PLX_ERROR_SYSTEM,
            "a refused document returned an unexpected code");
    require(error.starts_with(std::string(kName) + ": ") && error.size() > sizeof(kName) + 1,
            "a refused document's message does not start with the file name:", error);
    require(cluster.description == "untouched" && cluster.hosts.empty(),
            "a refused document changed *out");
    return 0;
  }
  check_cluster(cluster);
  return 0;
}
