// plexus-topo: what a host (or a described cluster) is made of, and how a communicator's ranks
// would group on it.
//   plexus-topo                           this host, discovered (or PLEXUS_TOPO_FILE)
//   plexus-topo --topo-file p5.json       a topology file: our JSON, or hwloc XML
//   plexus-topo --json                    the same as a topology document
//   plexus-topo --ranks 16 --ranks-per-host 8   the grouping of a 16-rank communicator, and
//                                         the cost model's choice per collective and size
//   plexus-topo --topo-file p5-x128.json --simulate [--format json]
//                                         every allreduce algorithm's predicted time and busbw
// With PLEXUS_TOPO_DUMP_FILE set, the topology read or discovered is also written there (as
// --json prints it).
// Exit status: 0 done, 2 bad arguments or a malformed file, 1 anything else.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "comm/topology_bridge.h"
#include "topology/settings/config_read.h"
#include "tools/plexus-topo/print_collectives.h"
#include "tools/plexus-topo/print_groups.h"
#include "tools/plexus-topo/print_tree.h"
#include "tools/plexus-topo/simulate.h"
#include "tools/plexus-topo/size_list.h"
#include "topology/rank_fill.h"
#include "topology/rank_groups.h"
#include "topology/topology_file.h"
#include "topology/topology_json.h"

namespace {

using namespace plexus::topology;

// The most ranks --ranks takes, and --simulate's default (a rank per GPU on every host) may make.
constexpr uint64_t kMaxRanks = 65536;

int fail(plx_result_t code, const std::string& message) {
  std::fprintf(stderr, "plexus-topo: %s\n", message.c_str());
  return code == PLX_ERROR_INVALID_ARGUMENT ? 2 : 1;
}

// The file named by --topo-file, else PLEXUS_TOPO_FILE, whole; else this host.
plx_result_t load(const std::string& file, ClusterTopology* cluster, std::string* origin,
                  std::string* error) {
  const std::string path =
      !file.empty() ? file : plexus::config_text("PLEXUS_TOPO_FILE").value_or("");
  if (!path.empty()) {
    *origin = file.empty() ? "PLEXUS_TOPO_FILE=" + path : path;
    plx_result_t rc = read_topology_file(path, cluster, error);
    if (rc != PLX_SUCCESS && file.empty()) *error = "PLEXUS_TOPO_FILE=" + *error;
    return rc;
  }
  HostTopology host;
  plx_result_t rc = this_host_topology(&host, error, origin);
  if (rc == PLX_SUCCESS) *cluster = ClusterTopology{"", {std::move(host)}};
  return rc;
}

std::string json_text(const ClusterTopology& cluster) {
  return cluster.hosts.size() == 1 && cluster.description.empty() ? to_json_text(cluster.hosts[0])
                                                                  : to_json_text(cluster);
}

}  // namespace

int main(int argc, char** argv) {
  std::string file;
  bool json = false;
  bool list_pci = false;
  int nranks = 0;
  int per_host = 0;
  bool simulate = false;
  bool explain = false;
  std::string format = "text";
  std::string sizes_text;
  std::string chunk_text = "1M";
  CLI::App app{
      "plexus-topo: the topology of this host or of a topology file, and how a "
      "communicator's ranks group on it"};
  app.add_option("--topo-file", file,
                 "read this topology file (JSON or hwloc XML) instead of "
                 "discovering this host (default: PLEXUS_TOPO_FILE)");
  app.add_flag("--json", json, "print the topology as a JSON topology document");
  app.add_flag("--pci", list_pci, "list every PCI device in the tree");
  app.add_option("--ranks", nranks, "show the grouping of a communicator of this many ranks")
      ->check(CLI::Range(1, static_cast<int>(kMaxRanks)));
  app.add_option("--ranks-per-host", per_host,
                 "ranks on each host, filled in order (default: the first host's GPU count)")
      ->check(CLI::Range(1, 1024));
  app.add_flag("--simulate", simulate,
               "predict every allreduce algorithm's time and busbw (default: one rank per GPU "
               "on every host of the topology, sizes 1K to 8G by 2x)");
  app.add_flag("--explain", explain,
               "with --simulate: each algorithm's bandwidth bound (its bytes alone, no latency "
               "or reduction) and the hierarchical allreduce's phases per segment");
  app.add_option("--format", format, "--simulate's output: text or json")
      ->check(CLI::IsMember({"text", "json"}));
  app.add_option("--sizes", sizes_text,
                 "sizes in bytes, comma-separated, K/M/G suffixes (default: 1K to 1G by 4x; "
                 "with --simulate 1K to 8G by 2x)");
  app.add_option("--chunk-bytes", chunk_text,
                 "the cost model's pipelining slice, as PLEXUS_CHUNK_BYTES (default 1M)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }

  if (per_host != 0 && nranks == 0 && !simulate)
    return fail(PLX_ERROR_INVALID_ARGUMENT, "--ranks-per-host needs --ranks");

  if (explain && !simulate)
    return fail(PLX_ERROR_INVALID_ARGUMENT, "--explain needs --simulate");
  if (format != "text" && !simulate)
    return fail(PLX_ERROR_INVALID_ARGUMENT, "--format " + format + " needs --simulate");
  std::string error;
  std::vector<uint64_t> sizes =
      simulate ? plexus::topo_tool::geometric_sizes(1024, uint64_t{8} << 30, 2)
               : plexus::topo_tool::geometric_sizes(1024, uint64_t{1} << 30, 4);
  if (!sizes_text.empty() && !plexus::topo_tool::parse_size_list(sizes_text, &sizes, &error))
    return fail(PLX_ERROR_INVALID_ARGUMENT, error);
  std::vector<uint64_t> chunk;
  if (!plexus::topo_tool::parse_size_list(chunk_text, &chunk, &error) || chunk.size() != 1)
    return fail(PLX_ERROR_INVALID_ARGUMENT,
                "--chunk-bytes: \"" + chunk_text + "\" is not one byte count in 1..1T");
  const std::string cost_model = plexus::config_text("PLEXUS_COST_MODEL").value_or("");
  if (!cost_model.empty() &&
      plexus::comm::TopologyCostModel::check_cost_model_text(cost_model, &error) != PLX_SUCCESS) {
    return fail(PLX_ERROR_INVALID_ARGUMENT, error);  // before anything is printed
  }
  if (plexus::comm::TopologyCostModel::check_lane_schedule(&error) != PLX_SUCCESS) {
    return fail(PLX_ERROR_INVALID_ARGUMENT, error);
  }

  ClusterTopology cluster;
  std::string origin;
  if (plx_result_t rc = load(file, &cluster, &origin, &error); rc != PLX_SUCCESS)
    return fail(rc, error);
  if (const std::optional<std::string> dump = plexus::config_text("PLEXUS_TOPO_DUMP_FILE");
      dump && origin.rfind("discovered", 0) != 0) {
    // A discovered host was dumped by this_host_topology(); a file read is dumped here.
    if (plx_result_t rc = write_text_file(*dump, json_text(cluster), &error); rc != PLX_SUCCESS)
      return fail(rc, "PLEXUS_TOPO_DUMP_FILE=" + *dump + ": " + error);
  }
  if (json) {
    std::fputs(json_text(cluster).c_str(), stdout);
    return 0;
  }
  if (simulate && nranks == 0) {
    if (per_host == 0) per_host = static_cast<int>(cluster.hosts.front().gpus.size());
    if (per_host == 0)
      return fail(PLX_ERROR_INVALID_ARGUMENT, "--simulate needs --ranks-per-host: host " +
                                                  cluster.hosts.front().host_id +
                                                  " has no GPUs to count ranks by");
    // The default, one rank per GPU on every host, within --ranks's own limit.
    const uint64_t all = static_cast<uint64_t>(per_host) * cluster.hosts.size();
    if (all > kMaxRanks)
      return fail(PLX_ERROR_INVALID_ARGUMENT,
                  "--simulate: " + std::to_string(per_host) + " ranks on each of " +
                      std::to_string(cluster.hosts.size()) + " hosts make " +
                      std::to_string(all) + " ranks, more than " + std::to_string(kMaxRanks) +
                      "; give --ranks N (at most " + std::to_string(kMaxRanks) + ")");
    nranks = static_cast<int>(all);
  }
  std::vector<RankLocation> ranks;
  if (nranks > 0) {
    if (per_host == 0) per_host = static_cast<int>(cluster.hosts.front().gpus.size());
    if (per_host == 0)
      return fail(PLX_ERROR_INVALID_ARGUMENT, "--ranks-per-host is needed: host " +
                                                  cluster.hosts.front().host_id +
                                                  " has no GPUs to count ranks by");
    if (plx_result_t rc = fill_hosts(cluster, nranks, per_host, &ranks, &error); rc != PLX_SUCCESS)
      return fail(rc, error);
  }

  if (simulate) {
    RankGroups groups = group_ranks(ranks);
    plexus::topo_tool::SimulateOptions options{sizes, static_cast<size_t>(chunk[0]), cost_model,
                                               format == "json", explain};
    if (plx_result_t rc = plexus::topo_tool::print_simulation(stdout, cluster, groups, options,
                                                              &error);
        rc != PLX_SUCCESS)
      return fail(rc, error);
    return 0;
  }
  std::printf("source: %s\n", origin.c_str());
  plexus::topo_tool::print_cluster_tree(stdout, cluster, {list_pci});
  if (ranks.empty()) return 0;
  RankGroups groups = group_ranks(ranks);
  std::printf("\n");
  plexus::topo_tool::print_rank_groups(stdout, cluster, ranks, groups);
  std::printf("\n");
  plexus::topo_tool::CollectiveTableOptions options{sizes, static_cast<size_t>(chunk[0]),
                                                    cost_model};
  if (plx_result_t rc =
          plexus::topo_tool::print_collective_choices(stdout, cluster, groups, options, &error);
      rc != PLX_SUCCESS)
    return fail(rc, error);
  return 0;
}
