// plexus-topo's cost model output, run as a process: the parameters it derives from a topology,
// the collective table and --simulate, each checked against the alpha-beta-gamma formulas of
// comm/tuning/cost_model.cpp worked by hand for small shapes; and the validation gaps of issue 7
// (escaped names, PLEXUS_TOPO_DUMP_FILE with a file, bad --sizes).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/support/subprocess.h"
#include "tests/support/temp_dir.h"
#include "topology/topology_file.h"
#include "topology/topology_json.h"

namespace plexus::topology {
namespace {

using test::ProcessResult;
using test::run_process;

const std::string kTool = PLEXUS_TOPO_PATH;
const std::string kExamples = PLEXUS_TOPO_EXAMPLES_DIR;
constexpr double kMiB = 1048576.0;

ProcessResult topo(std::vector<std::string> args, const std::vector<std::string>& env = {}) {
  args.insert(args.begin(), kTool);
  std::vector<std::string> full_env = {"PLEXUS_COST_MODEL=", "PLEXUS_TOPO_FILE=",
                                       "PLEXUS_TOPO_DUMP_FILE="};
  full_env.insert(full_env.end(), env.begin(), env.end());
  return run_process(args, 60.0, full_env);
}

bool has_line(const std::string& out, const std::string& line) {
  for (const std::string& l : test::split_lines(out))
    if (l == line) return true;
  return false;
}

// A host of `cpus` CPUs, no GPUs, one NIC of `nic_mbit` (0: none).
HostTopology cpu_host(const std::string& id, uint64_t nic_mbit) {
  HostTopology h;
  h.host_id = id;
  h.numa_nodes.push_back(NumaNode{0, kNoNuma, 1ull << 30, 4, 4, "0-3"});
  if (nic_mbit) h.nics.push_back(Nic{"eth0", NicKind::Network, "", 0, nic_mbit});
  return h;
}

std::string write(const test::TempDir& dir, const std::string& name, const std::string& text) {
  std::string path = dir.path() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

// seconds of `algorithm` at row `row` of a --simulate JSON document.
double seconds_of(const nlohmann::json& doc, size_t row, const std::string& algorithm) {
  return doc.at("rows").at(row).at("algorithms").at(algorithm).at("seconds").get<double>();
}

TEST(PlexusTopoCost, SimulateOneCpuHostMatchesTheOneLevelFormulas) {
  test::TempDir dir("plexus-topo-cost");
  std::string file = write(dir, "cpu.json", to_json_text(cpu_host("cpu0", 0)));
  // Without peer memory (PLEXUS_SHM=0) the transport algorithms alone; with it, below.
  ProcessResult r = topo({"--topo-file", file, "--simulate", "--ranks-per-host", "4", "--sizes",
                          "4M", "--format", "json"},
                         {"PLEXUS_SHM=0"});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << r.out << r.err;
  nlohmann::json doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["nranks"], 4);
  EXPECT_EQ(doc["hosts"], 1);
  EXPECT_DOUBLE_EQ(doc["bus_factor"].get<double>(), 1.5);
  // No GPUs: the library's defaults alpha 5 us, beta 0.1 ns/B, gamma 0.1 ns/B; one host.
  EXPECT_DOUBLE_EQ(doc["cost"]["alpha_s"].get<double>(), 5e-6);
  EXPECT_DOUBLE_EQ(doc["cost"]["beta_s_per_byte"].get<double>(), 1e-10);
  EXPECT_DOUBLE_EQ(doc["cost"]["inter_beta_s_per_byte"].get<double>(), 0);
  EXPECT_EQ(doc["cost"]["peer_memory"], false);
  EXPECT_FALSE(doc["rows"][0]["algorithms"].contains("shm"));
  const double a = 5e-6, b = 1e-10, g = 1e-10, m = 4 * kMiB;
  // p = 4, slices of 1 MiB:
  //   ring          2(p-1) slices(m/p) a + 2(p-1)/p m b + (p-1)/p m g = 6a + 1.5mb + 0.75mg
  //   rabenseifner  2 log2(p) a + 2(p-1)/p m b + (p-1)/p m g         = 4a + 1.5mb + 0.75mg
  //   rec. doubling log2(p) (slices(m) a + m b + m g)                 = 2(4a + mb + mg)
  //   double tree   2H (a + xb + xg) + (S - 1)(4a + 4xb + 2xg), H = 2, S = 2, x = m/4
  //                 = 8a + 2mb + 1.5mg
  const double ring = 6 * a + 1.5 * m * b + 0.75 * m * g;
  const double rabenseifner = 4 * a + 1.5 * m * b + 0.75 * m * g;
  const double doubling = 2 * (4 * a + m * b + m * g);
  const double tree = 8 * a + 2 * m * b + 1.5 * m * g;
  EXPECT_NEAR(seconds_of(doc, 0, "ring"), ring, ring * 1e-12);
  EXPECT_NEAR(seconds_of(doc, 0, "rabenseifner"), rabenseifner, rabenseifner * 1e-12);
  EXPECT_NEAR(seconds_of(doc, 0, "recursive_doubling"), doubling, doubling * 1e-12);
  EXPECT_NEAR(seconds_of(doc, 0, "double_binary_tree"), tree, tree * 1e-12);
  EXPECT_EQ(doc["rows"][0]["chosen"], "rabenseifner");  // 963.7 us against the ring's 973.7 us
  const double busbw = m / rabenseifner * 1.5 / 1e9;
  EXPECT_NEAR(doc["rows"][0]["algorithms"]["rabenseifner"]["busbw_gbs"].get<double>(), busbw,
              busbw * 1e-12);
}

// One host of CPU ranks maps a peer-memory segment in a communicator, so the shm algorithms
// are priced (comm/tuning/shm_cost.h) and chosen, as the communicator itself would.
TEST(PlexusTopoCost, OneCpuHostPricesTheSharedMemoryAlgorithms) {
  test::TempDir dir("plexus-topo-cost");
  std::string file = write(dir, "cpu.json", to_json_text(cpu_host("cpu0", 0)));
  ProcessResult r = topo({"--topo-file", file, "--simulate", "--ranks-per-host", "4", "--sizes",
                          "4M", "--format", "json"});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << r.out << r.err;
  nlohmann::json doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["cost"]["peer_memory"], true);
  // shm allreduce, p = 4, k = 4 pieces of 1 MiB: 2k a + (2/3 (p-1)/p + 2/3 + (p-1)/p) m g.
  const double a = 5e-6, g = 1e-10, m = 4 * kMiB;
  const double shm = 8 * a + (0.5 + 2.0 / 3.0 + 0.75) * m * g;
  EXPECT_NEAR(seconds_of(doc, 0, "shm"), shm, shm * 1e-12);
  EXPECT_EQ(doc["rows"][0]["chosen"], "shm");  // 844 us against rabenseifner's 964 us

  r = topo({"--topo-file", file, "--ranks", "4", "--ranks-per-host", "4", "--sizes", "4M"});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << r.out << r.err;
  EXPECT_TRUE(has_line(r.out, "  peer memory: the ranks share one segment; the shm algorithms "
                              "are priced (PLEXUS_SHM=0 turns them off)"))
      << r.out;
  EXPECT_TRUE(has_line(r.out, "         4 MiB  shm                      844 us        7.46  "
                              "rabenseifner (964 us)"))
      << r.out;

  r = topo({"--topo-file", file, "--simulate", "--ranks-per-host", "4"}, {"PLEXUS_SHM=2"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("PLEXUS_SHM"), std::string::npos) << r.err;
}

// A cost model of zeros predicts no time: no busbw follows, printed "-" and null in JSON.
TEST(PlexusTopoCost, ZeroCostModelShowsNoBandwidth) {
  test::TempDir dir("plexus-topo-cost");
  std::string file = write(dir, "cpu.json", to_json_text(cpu_host("cpu0", 0)));
  ProcessResult r = topo({"--topo-file", file, "--ranks", "2", "--ranks-per-host", "2",
                          "--sizes", "1M"},
                         {"PLEXUS_COST_MODEL=0,0,0", "PLEXUS_SHM=0"});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << r.out << r.err;
  EXPECT_NE(r.out.find("beta 0 ns/B (no limit)"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("0.00 GB/s"), std::string::npos) << r.out;
  EXPECT_TRUE(has_line(r.out, "         1 MiB  ring                    0.00 us           -  "
                              "rabenseifner (0.00 us)"))
      << r.out;
  r = topo({"--topo-file", file, "--simulate", "--ranks-per-host", "2", "--sizes", "1M",
            "--format", "json"},
           {"PLEXUS_COST_MODEL=0,0,0", "PLEXUS_SHM=0"});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << r.out << r.err;
  nlohmann::json doc = nlohmann::json::parse(r.out);
  EXPECT_TRUE(doc["rows"][0]["algorithms"]["ring"]["busbw_gbs"].is_null()) << r.out;
  EXPECT_EQ(doc["rows"][0]["algorithms"]["ring"]["seconds"].get<double>(), 0);
}

// --simulate's default (a rank per GPU, or --ranks-per-host, on every host) past --ranks's
// limit of 65536 is a usage error naming both counts, not an allocation of millions of ranks.
TEST(PlexusTopoCost, DefaultRanksPastTheLimitAreRefused) {
  test::TempDir dir("plexus-topo-cost");
  nlohmann::json host = nlohmann::json::parse(to_json_text(cpu_host("cpu", 10000)));
  host.erase("plexus_topology");
  host["count"] = 9000;
  const nlohmann::json cluster = {{"plexus_topology", 1}, {"hosts", {host}}};
  const std::string file = write(dir, "many.json", cluster.dump());
  ProcessResult r = topo({"--topo-file", file, "--simulate", "--ranks-per-host", "8"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("--simulate: 8 ranks on each of 9000 hosts make 72000 ranks, more than "
                       "65536; give --ranks N (at most 65536)"),
            std::string::npos)
      << r.err;
  // Within the limit it simulates.
  r = topo({"--topo-file", file, "--simulate", "--ranks-per-host", "7", "--sizes", "1M"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

TEST(PlexusTopoCost, PlexusCostModelReplacesTheTopologysParameters) {
  test::TempDir dir("plexus-topo-cost");
  std::string file = write(dir, "cpu.json", to_json_text(cpu_host("cpu0", 0)));
  ProcessResult r = topo({"--topo-file", file, "--simulate", "--ranks-per-host", "4", "--sizes",
                          "4M", "--format", "json"},
                         {"PLEXUS_COST_MODEL=2,0.5,0"});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << r.out << r.err;
  nlohmann::json doc = nlohmann::json::parse(r.out);
  // ring: 6a + 1.5 m b with a = 2 us, b = 0.5 ns/B, g = 0.
  const double ring = 6 * 2e-6 + 1.5 * 4 * kMiB * 0.5e-9;
  EXPECT_NEAR(seconds_of(doc, 0, "ring"), ring, ring * 1e-12);
  EXPECT_EQ(doc["cost"]["intra"], "PLEXUS_COST_MODEL=2,0.5,0");

  r = topo({"--topo-file", file, "--simulate", "--ranks-per-host", "4"},
           {"PLEXUS_COST_MODEL=2;0.5"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("plexus-topo: PLEXUS_COST_MODEL=\"2;0.5\": rank 0: "), std::string::npos)
      << r.err;
  // Five values with no inter-host bandwidth, or a value past 1e6: refused before the tree is
  // printed.
  r = topo({"--topo-file", file, "--ranks", "4", "--ranks-per-host", "4"},
           {"PLEXUS_COST_MODEL=2,0.5,0,0,0"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("inter_beta_ns_per_byte is 0, but five values"), std::string::npos)
      << r.err;
  r = topo({"--topo-file", file, "--ranks", "4", "--ranks-per-host", "4"},
           {"PLEXUS_COST_MODEL=1e300,0.5,0"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("alpha_us '1e300' is more than 1e+06"), std::string::npos) << r.err;
}

TEST(PlexusTopoCost, TwoHostsChargeTheRingAtTheNicRate) {
  test::TempDir dir("plexus-topo-cost");
  ClusterTopology cluster{"two CPU hosts", {cpu_host("a", 10000), cpu_host("b", 10000)}};
  std::string file = write(dir, "two.json", to_json_text(cluster));
  ProcessResult r = topo({"--topo-file", file, "--simulate", "--ranks-per-host", "1", "--sizes",
                          "1M", "--format", "json"});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << r.out << r.err;
  nlohmann::json doc = nlohmann::json::parse(r.out);
  // One 10 Gbit/s NIC per host: inter beta 8 / 10^10 s/B = 0.8 ns/B, alpha 10 us, one link.
  EXPECT_DOUBLE_EQ(doc["cost"]["inter_beta_s_per_byte"].get<double>(), 0.8e-9);
  EXPECT_DOUBLE_EQ(doc["cost"]["inter_alpha_s"].get<double>(), 10e-6);
  EXPECT_EQ(doc["cost"]["links_per_host"], 1);
  // Ring on p = 2 ranks, one per host (every step crosses, load 1), sliced across hosts at
  // what the link moves in 1 ms (flat_slice_bytes): 1 ms / 0.8 ns = 1.25 MB, above the 1 MiB
  // chunk, so the 512 KiB segment is one slice:
  //   2(p-1) slices(m/2) a_e + 2(p-1)/p m b_e + (p-1)/p m g = 2 a_e + m b_e + 0.5 m g.
  const double m = kMiB;
  const double ring = 2 * 10e-6 + m * 0.8e-9 + 0.5 * m * 1e-10;
  EXPECT_NEAR(seconds_of(doc, 0, "ring"), ring, ring * 1e-12);
  EXPECT_EQ(doc["cost"]["peer_memory"], false);  // one rank per host: no segment to share
}

// The header names the slice the flat algorithms use across hosts when it is not the chunk, and
// hosts of one rank each price the hierarchical allreduce as the ring it runs.
TEST(PlexusTopoCost, SlowLinksShowTheFlatSliceAndOneRankPerHostIsTheRing) {
  test::TempDir dir("plexus-topo-cost");
  ClusterTopology slow{"two CPU hosts", {cpu_host("a", 1000), cpu_host("b", 1000)}};
  const std::string slow_file = write(dir, "slow.json", to_json_text(slow));
  ProcessResult r = topo({"--topo-file", slow_file, "--simulate", "--ranks-per-host", "1",
                          "--sizes", "4M"});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << r.out << r.err;
  // 1 Gbit/s: 1 ms moves 125000 B = 122.1 KiB.
  EXPECT_NE(r.out.find("slices of 1 MiB (122.1 KiB for the flat algorithms across hosts: 1 ms "
                       "on the network"),
            std::string::npos)
      << r.out;
  r = topo({"--topo-file", slow_file, "--simulate", "--ranks-per-host", "1", "--sizes", "4M",
            "--format", "json", "--explain"});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << r.out << r.err;
  const nlohmann::json doc = nlohmann::json::parse(r.out);
  EXPECT_DOUBLE_EQ(seconds_of(doc, 0, "hierarchical"), seconds_of(doc, 0, "ring"));
  // --explain: no phases to show (it is the ring), and the ring's bound.
  EXPECT_FALSE(doc["rows"][0].contains("hierarchical_phases")) << doc["rows"][0].dump();
  EXPECT_DOUBLE_EQ(doc["rows"][0]["algorithms"]["hierarchical"]["bound_seconds"].get<double>(),
                   doc["rows"][0]["algorithms"]["ring"]["bound_seconds"].get<double>());

  ClusterTopology fast{"two CPU hosts", {cpu_host("a", 10000), cpu_host("b", 10000)}};
  const std::string fast_file = write(dir, "fast.json", to_json_text(fast));
  r = topo({"--topo-file", fast_file, "--simulate", "--ranks-per-host", "1", "--sizes", "4M"});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << r.out << r.err;
  EXPECT_NE(r.out.find("slices of 1 MiB\n"), std::string::npos) << r.out;
}

// PLEXUS_HIERARCHICAL_LANES reaches the simulator as it reaches a communicator: on 3 hosts of 2
// ranks the forced halving lanes fold one pair of hosts, a lone segment paying the folded block
// in and back out (3 y with the halving's y) and the steady stage one (its network_return_s),
// and the forced ring returns nothing; a value that is no schedule fails before anything is
// printed.
TEST(PlexusTopoCost, LanesForcedByTheEnvironment) {
  test::TempDir dir("plexus-topo-cost");
  ClusterTopology cluster{"three CPU hosts",
                          {cpu_host("a", 10000), cpu_host("b", 10000), cpu_host("c", 10000)}};
  std::string file = write(dir, "three.json", to_json_text(cluster));
  const std::vector<std::string> args = {"--topo-file", file, "--simulate", "--ranks-per-host",
                                         "2", "--sizes", "64M", "--format", "json", "--explain"};
  for (const std::string lanes : {"ring", "halving"}) {
    ProcessResult r = topo(args, {"PLEXUS_HIERARCHICAL_LANES=" + lanes});
    ASSERT_TRUE(r.exited && r.exit_code == 0) << r.out << r.err;
    const nlohmann::json h =
        nlohmann::json::parse(r.out).at("rows").at(0).at("hierarchical_phases");
    EXPECT_EQ(h["lane_schedule"], lanes) << h;
    const double net = h["network"]["bytes_s"].get<double>();
    const double back = h["network_return_s"].get<double>();
    EXPECT_NEAR(back, lanes == "halving" ? net / 3 : 0.0, 1e-12 * net) << h;
    const double net_total = h["network"]["latency_s"].get<double>() + net +
                             h["network"]["reduction_s"].get<double>();
    const double in_flight = std::min(h["segments"].get<double>(), 3.0);
    EXPECT_DOUBLE_EQ(h["network_stage_s"].get<double>(),
                     std::max(net - back, net_total / in_flight))
        << h;
  }
  ProcessResult bad = topo(args, {"PLEXUS_HIERARCHICAL_LANES=tree"});
  EXPECT_TRUE(bad.exited && bad.exit_code == 2) << bad.out << bad.err;
  EXPECT_EQ(bad.out, "");
  EXPECT_NE(bad.err.find("PLEXUS_HIERARCHICAL_LANES=\"tree\": not one of auto, ring, halving"),
            std::string::npos)
      << bad.err;
}

// Two ranks on each of two CPU hosts: each host's ranks share a segment, as in a communicator,
// so the hierarchical allreduce's intra-host phases are priced as memory copies instead of
// messages; the one-host shm algorithms stay out of the table.
TEST(PlexusTopoCost, HostsOfSeveralRanksShareASegmentEach) {
  test::TempDir dir("plexus-topo-cost");
  ClusterTopology cluster{"two CPU hosts", {cpu_host("a", 10000), cpu_host("b", 10000)}};
  std::string file = write(dir, "two.json", to_json_text(cluster));
  const std::vector<std::string> args = {"--topo-file", file, "--simulate", "--ranks-per-host",
                                         "2", "--sizes", "64M", "--format", "json"};
  ProcessResult with = topo(args);
  ProcessResult without = topo(args, {"PLEXUS_SHM=0"});
  ASSERT_TRUE(with.exited && with.exit_code == 0) << with.out << with.err;
  ASSERT_TRUE(without.exited && without.exit_code == 0) << without.out << without.err;
  nlohmann::json a = nlohmann::json::parse(with.out), b = nlohmann::json::parse(without.out);
  EXPECT_EQ(a["cost"]["peer_memory"], true);
  EXPECT_EQ(b["cost"]["peer_memory"], false);
  EXPECT_FALSE(a["rows"][0]["algorithms"].contains("shm"));
  // The intra-host phases are priced as memory copies with the segment, as messages without it.
  EXPECT_NE(seconds_of(a, 0, "hierarchical"), seconds_of(b, 0, "hierarchical"))
      << seconds_of(a, 0, "hierarchical");
  EXPECT_EQ(seconds_of(a, 0, "ring"), seconds_of(b, 0, "ring"));  // flat: no segment used

  // --explain's bound counts the copies through the segment as bytes (they are the host
  // stage's data movement), only latency and reduction dropped: the pipeline of the phases'
  // bytes terms, the same segments as the prediction.
  std::vector<std::string> explain = args;
  explain.push_back("--explain");
  ProcessResult e = topo(explain);
  ASSERT_TRUE(e.exited && e.exit_code == 0) << e.out << e.err;
  const nlohmann::json row = nlohmann::json::parse(e.out).at("rows").at(0);
  const nlohmann::json& h = row.at("hierarchical_phases");
  const double host = h["reduce_scatter"]["bytes_s"].get<double>() +
                      h["allgather"]["bytes_s"].get<double>();
  const double net = h["network"]["bytes_s"].get<double>();
  EXPECT_GT(host, 0) << h;
  EXPECT_EQ(h["network_return_s"].get<double>(), 0) << h;  // ring lanes return nothing
  // The network stage: its bytes, or its whole time shared by the min(S, 3) segments in flight.
  const double net_total = h["network"]["latency_s"].get<double>() + net +
                           h["network"]["reduction_s"].get<double>();
  const double in_flight = std::min(h["segments"].get<double>(), 3.0);
  EXPECT_DOUBLE_EQ(h["network_stage_s"].get<double>(), std::max(net, net_total / in_flight)) << h;
  const double bound = host + net + (h["segments"].get<double>() - 1) * std::max(host, net);
  EXPECT_NEAR(row["algorithms"]["hierarchical"]["bound_seconds"].get<double>(), bound,
              1e-9 * bound)
      << row;

  ProcessResult table = topo({"--topo-file", file, "--ranks", "4", "--ranks-per-host", "2",
                              "--sizes", "64M"});
  ASSERT_TRUE(table.exited && table.exit_code == 0) << table.out << table.err;
  EXPECT_TRUE(has_line(table.out, "  peer memory: the ranks of each host share one segment; the "
                                  "hierarchical algorithms' intra-host phases are priced at "
                                  "memory speed (PLEXUS_SHM=0 turns it off)"))
      << table.out;
}

TEST(PlexusTopoCost, P5ParametersComeFromNvlinkAndTheNics) {
  ProcessResult r = topo({"--topo-file", kExamples + "/p5.48xlarge-x128.json", "--ranks", "16",
                          "--sizes", "1G"});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << r.out << r.err;
  // 18 NVLink 4 links x 25 GB/s = 450 GB/s; 32 x 100 Gbit/s NICs pooled into 8 links (one per
  // rank of a host) of 400 Gbit/s = 50 GB/s each.
  EXPECT_TRUE(has_line(r.out,
                       "  cost model within a host: NVLink: 18 links, 450 GB/s per GPU each way; "
                       "alpha 2.00 us, beta 0.002222 ns/B (450.00 GB/s), gamma 0.001 ns/B"))
      << r.out;
  EXPECT_TRUE(has_line(r.out,
                       "  cost model between hosts: 32 NICs, 3200 Gbit/s per host, as 8 links of "
                       "400 Gbit/s; alpha 10.0 us, beta 0.02 ns/B (50.00 GB/s) per link"))
      << r.out;
  EXPECT_TRUE(has_line(r.out, "  allreduce (bus factor 1.875)")) << r.out;
  EXPECT_TRUE(has_line(r.out, "  reduce_scatter (bus factor 0.938)")) << r.out;
  EXPECT_TRUE(has_line(r.out, "  broadcast (bus factor 1.000)")) << r.out;

  r = topo({"--topo-file", kExamples + "/p4d.24xlarge.json", "--ranks", "8", "--sizes", "1K"});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << r.out << r.err;
  // 12 NVLink 3 links x 25 GB/s = 300 GB/s; one host, so no network level.
  EXPECT_TRUE(has_line(r.out,
                       "  cost model within a host: NVLink: 12 links, 300 GB/s per GPU each way; "
                       "alpha 2.00 us, beta 0.003333 ns/B (300.00 GB/s), gamma 0.001 ns/B"))
      << r.out;
  EXPECT_TRUE(has_line(r.out, "  cost model between hosts: none (one host)")) << r.out;
}

TEST(PlexusTopoCost, TableRowsNameTheChoiceAndTheRunnerUp) {
  test::TempDir dir("plexus-topo-cost");
  std::string file = write(dir, "cpu.json", to_json_text(cpu_host("cpu0", 0)));
  ProcessResult r = topo({"--topo-file", file, "--ranks", "4", "--ranks-per-host", "4",
                          "--sizes", "4M"},
                         {"PLEXUS_SHM=0"});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << r.out << r.err;
  // From the formulas above: rabenseifner 963.7184 us, ring 973.7184 us; busbw
  // 4 MiB / 963.7184 us x 1.5 = 6.528 GB/s.
  EXPECT_TRUE(has_line(r.out, "  allreduce (bus factor 1.500)")) << r.out;
  EXPECT_TRUE(has_line(r.out, "         4 MiB  rabenseifner             964 us        6.53  "
                              "ring (974 us)"))
      << r.out;
  // reduce_scatter of 4 MiB is a 1 MiB block per rank; allgather likewise.
  EXPECT_TRUE(has_line(r.out, "  reduce_scatter (bus factor 0.750)")) << r.out;
}

TEST(PlexusTopoCost, ControlCharactersInNamesAreEscaped) {
  test::TempDir dir("plexus-topo-cost");
  // Host ids may not hold control characters (the reader refuses them); hostnames and
  // descriptions may, and are printed escaped.
  HostTopology h = cpu_host("evil", 0);
  // + U+202E (RLO), U+009B (CSI), U+2028 (line separator), U+E0041 (tag A)
  h.hostname = "evil\x1b[2Jhost\nline\xe2\x80\xae\xc2\x9b\xe2\x80\xa8\xf3\xa0\x81\x81";
  h.description = "tab\there\\";
  std::string file = write(dir, "evil.json", to_json_text(h));
  ProcessResult r = topo({"--topo-file", file});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << r.out << r.err;
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("\xe2\x80\xae"), std::string::npos) << r.out;
  EXPECT_TRUE(has_line(r.out, "host evil (hostname evil\\x1b[2Jhost\\nline\\u202e\\u009b\\u2028"
                              "\\U000e0041)"))
      << r.out;
  EXPECT_TRUE(has_line(r.out, "  tab\\there\\\\")) << r.out;
}

TEST(PlexusTopoCost, DumpFileIsWrittenForALoadedFileToo) {
  test::TempDir dir("plexus-topo-cost");
  std::string dump = dir.path() + "/dump.json";
  std::string file = kExamples + "/p4d.24xlarge.json";
  ProcessResult r = topo({"--topo-file", file}, {"PLEXUS_TOPO_DUMP_FILE=" + dump});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << r.out << r.err;
  ClusterTopology dumped, original;
  std::string error;
  ASSERT_EQ(read_topology_file(dump, &dumped, &error), PLX_SUCCESS) << error;
  ASSERT_EQ(read_topology_file(file, &original, &error), PLX_SUCCESS) << error;
  EXPECT_EQ(dumped, original);
}

TEST(PlexusTopoCost, BadSizesAndFormatsExitWithTwo) {
  std::string file = kExamples + "/p4d.24xlarge.json";
  ProcessResult r = topo({"--topo-file", file, "--ranks", "8", "--sizes", "1K,12Q"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "plexus-topo: --sizes: \"12Q\" is not a byte count in 1..1T (suffixes K, M, "
                   "G, T)\n");
  r = topo({"--topo-file", file, "--ranks", "8", "--sizes", "1T"});  // the top of the range
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = topo({"--topo-file", file, "--ranks", "8", "--sizes", "2T"});
  EXPECT_EQ(r.exit_code, 2);
  r = topo({"--topo-file", file, "--format", "json"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "plexus-topo: --format json needs --simulate\n");
  r = topo({"--topo-file", "/dev/null"});  // a device, not a topology file
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "plexus-topo: /dev/null: is not a regular file\n");
  r = topo({"--topo-file", "/nonexistent-plexus/topology.json"});  // no such file: exit 2 too
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "plexus-topo: /nonexistent-plexus/topology.json: cannot be read: No such file "
                   "or directory\n");
  r = topo({"--topo-file", file, "--simulate", "--ranks", "1"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "plexus-topo: --simulate: a communicator of 1 rank has nothing to simulate "
                   "(give --ranks 2 or more)\n");
}

// --explain on 2 p5 hosts (16 ranks), 8 GiB: the hierarchical allreduce's phases per segment
// and each algorithm's bound, worked by hand from the p5 parameters (NVLink 450 GB/s, alpha
// 2 us, gamma 1e-12 s/B; 8 links of 50 GB/s, alpha 10 us) and hierarchical_cost.cpp.
TEST(PlexusTopoCost, ExplainTakesTheHierarchicalAllreduceApart) {
  const std::vector<std::string> args = {"--topo-file", kExamples + "/p5.48xlarge-x128.json",
                                         "--simulate", "--ranks", "16", "--sizes", "8G",
                                         "--explain"};
  std::vector<std::string> json_args = args;
  json_args.insert(json_args.end(), {"--format", "json"});
  ProcessResult r = topo(json_args);
  ASSERT_TRUE(r.exited && r.exit_code == 0) << r.out << r.err;
  const nlohmann::json doc = nlohmann::json::parse(r.out);
  const nlohmann::json& row = doc.at("rows").at(0);
  const nlohmann::json& h = row.at("hierarchical_phases");
  const double m = 8.0 * 1024 * kMiB;
  const double beta_i = 1 / 450e9, gamma = 1e-12, beta_link = 1 / 50e9;
  // The lane step: the 1 MiB chunk caps the rule's (8 alpha_e / beta_e is 4 MB), so the plan
  // tries 1, 2, 4, 8 and 16 MiB (hierarchical_lane_step_limit) and takes 16 MiB: segments of
  // M K s = 256 MiB, 32 of them.
  EXPECT_EQ(h.at("lane_step_bytes").get<double>(), 16 * kMiB);
  EXPECT_EQ(h.at("segments").get<double>(), 32);
  EXPECT_EQ(h.at("segment_bytes").get<double>(), 256 * kMiB);
  const double y = 32 * kMiB;  // one lane's block of a segment
  const auto near = [](double got, double want) { return std::fabs(got - want) <= 1e-9 * want; };
  // Ring reduce-scatter over 8 GPUs: 7 steps of one 32 MiB block in 5 slices (the intra-host
  // slice is 8 alpha_i / beta_i = 8 x 2 us x 450 GB/s = 7.2 MB, hierarchical_segments.h).
  EXPECT_TRUE(near(h["reduce_scatter"]["latency_s"], 7 * 5 * 2e-6)) << h;
  EXPECT_TRUE(near(h["reduce_scatter"]["bytes_s"], 7 * y * beta_i)) << h;
  EXPECT_TRUE(near(h["reduce_scatter"]["reduction_s"], 7 * y * gamma)) << h;
  EXPECT_TRUE(near(h["allgather"]["latency_s"], 7 * 5 * 2e-6)) << h;
  EXPECT_TRUE(near(h["allgather"]["bytes_s"], 7 * y * beta_i)) << h;
  EXPECT_EQ(h["allgather"]["reduction_s"].get<double>(), 0) << h;
  // The lanes' ring allreduce between 2 hosts: 2 steps of y/2, each one message (the step is
  // past the chunk, not sliced by it), each lane on its own link.
  EXPECT_TRUE(near(h["network"]["latency_s"], 2 * 10e-6)) << h;
  EXPECT_TRUE(near(h["network"]["bytes_s"], y * beta_link)) << h;
  EXPECT_TRUE(near(h["network"]["reduction_s"], y / 2 * gamma)) << h;
  EXPECT_TRUE(near(h["boundaries_s"], 2 * 2e-6)) << h;
  // The host stage is the slower: fill and drain, then 31 more host stages.
  const double host = 2 * (7 * 5 * 2e-6 + 7 * y * beta_i) + 7 * y * gamma;
  const double net = 2 * 10e-6 + y * beta_link + y / 2 * gamma;
  const double total = host + net + 4e-6 + 31 * host;
  EXPECT_TRUE(near(h["seconds"], total)) << h;
  EXPECT_TRUE(near(seconds_of(doc, 0, "hierarchical"), total));
  // The bound: the same 32 segments with each phase's bytes only (no latency, no reduction, no
  // boundaries): 2 x 7/8 of the vector over NVLink and one segment's network, about 473 GB/s.
  const double host_bound = 2 * 7 * y * beta_i, net_bound = y * beta_link;
  const double bound = host_bound + net_bound + 31 * host_bound;
  const nlohmann::json& hier = row.at("algorithms").at("hierarchical");
  EXPECT_TRUE(near(hier.at("bound_seconds"), bound)) << hier;
  EXPECT_NEAR(hier.at("bound_busbw_gbs").get<double>(), m / bound * 1.875 / 1e9, 1e-6);
  EXPECT_GT(hier.at("bound_busbw_gbs").get<double>(), 472);
  EXPECT_LT(hier.at("bound_busbw_gbs").get<double>(), 474);
  // The flat ring's bytes cross one 50 GB/s link per step: 2(n-1)/n of the vector at 50 GB/s.
  const nlohmann::json& ring = row.at("algorithms").at("ring");
  EXPECT_NEAR(ring.at("bound_busbw_gbs").get<double>(), 50, 0.5) << ring;
  for (const auto& [name, a] : row.at("algorithms").items())
    EXPECT_GE(a.at("seconds").get<double>(), a.at("bound_seconds").get<double>()) << name;

  // At 64 MiB the plan takes 2 MiB lane steps: 2 segments of 32 MiB (y = 4 MiB), 486 us,
  // against 499 us for 4 segments of 1 MiB steps and 572 us for one segment of 4 MiB steps
  // (each worked as above). The bound keeps the schedule's 2 segments (a latency-free lane step
  // would cut it finer and bound a schedule that does not run).
  std::vector<std::string> small = json_args;
  small[6] = "64M";
  r = topo(small);
  ASSERT_TRUE(r.exited && r.exit_code == 0) << r.out << r.err;
  const nlohmann::json small_doc = nlohmann::json::parse(r.out);
  const nlohmann::json& small_row = small_doc.at("rows").at(0);
  const nlohmann::json& sh = small_row.at("hierarchical_phases");
  EXPECT_EQ(sh.at("lane_step_bytes").get<double>(), 2 * kMiB);
  EXPECT_EQ(sh.at("segments").get<double>(), 2);
  const double ys = 4 * kMiB;
  const double small_host = 2 * (7 * 2e-6 + 7 * ys * beta_i) + 7 * ys * gamma;
  const double small_net = 2 * 10e-6 + ys * beta_link + ys / 2 * gamma;
  EXPECT_TRUE(near(sh.at("seconds"), small_host + small_net + 4e-6 + small_host)) << sh;
  EXPECT_TRUE(near(small_row.at("algorithms").at("hierarchical").at("bound_seconds"),
                   2 * (2 * 7 * ys * beta_i) + ys * beta_link))
      << small_row;

  r = topo(args);
  ASSERT_TRUE(r.exited && r.exit_code == 0) << r.out << r.err;
  EXPECT_NE(r.out.find("bounds (bytes only), busbw GB/s: ring "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("hierarchical: 32 segments of 256 MiB (lane steps of 16 MiB); per segment "
                       "reduce-scatter "),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("the host stage bounds the pipeline"), std::string::npos) << r.out;

  r = topo({"--topo-file", kExamples + "/p5.48xlarge-x128.json", "--explain"});
  EXPECT_TRUE(r.exited && r.exit_code == 2) << r.out << r.err;
  EXPECT_EQ(r.err, "plexus-topo: --explain needs --simulate\n");
}

TEST(PlexusTopoCost, SimulatesTheExampleClusterOfAThousandRanks) {
  ProcessResult r = topo({"--topo-file", kExamples + "/p5.48xlarge-x128.json", "--simulate",
                          "--format", "json"});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << r.err;
  nlohmann::json doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["nranks"], 1024);
  EXPECT_EQ(doc["hosts"], 128);
  ASSERT_EQ(doc["rows"].size(), 24u);  // 1 KiB .. 8 GiB by 2x
  EXPECT_EQ(doc["rows"][0]["bytes"], 1024);
  EXPECT_EQ(doc["rows"][23]["bytes"], 8ull << 30);
  for (const auto& row : doc["rows"])
    for (const char* name :
         {"ring", "double_binary_tree", "rabenseifner", "recursive_doubling", "hierarchical"})
      EXPECT_GT(row["algorithms"][name]["seconds"].get<double>(), 0) << name;
  // A large vector on 8 ranks per host with a network 9x slower than NVLink: hierarchical.
  EXPECT_EQ(doc["rows"][23]["chosen"], "hierarchical");
}

}  // namespace
}  // namespace plexus::topology
