// plexus-topo run as a process: the tree of an example file, its JSON, a communicator's
// grouping, this host's discovery, and its exit status and message on bad input.
#include <gtest/gtest.h>

#include <fstream>

#include <sys/stat.h>
#include <unistd.h>

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

ProcessResult topo(std::vector<std::string> args, const std::vector<std::string>& env = {}) {
  args.insert(args.begin(), kTool);
  return run_process(args, 60.0, env);
}

bool has_line(const std::string& out, const std::string& line) {
  for (const std::string& l : test::split_lines(out))
    if (l == line) return true;
  return false;
}

TEST(PlexusTopo, PrintsTheTreeOfAnExampleFile) {
  std::string file = kExamples + "/p4d.24xlarge.json";
  ProcessResult r = topo({"--topo-file", file});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << r.out << r.err;
  std::vector<std::string> lines = test::split_lines(r.out);
  ASSERT_GE(lines.size(), 20u) << r.out;
  EXPECT_EQ(lines[0], "source: " + file);
  EXPECT_EQ(lines[1], "host p4d");
  EXPECT_EQ(lines[3], "  48 cores, 96 PUs, 1.1 TiB in 2 NUMA nodes; 8 GPUs, 4 NICs");
  EXPECT_EQ(lines[4], "  package 0: Intel Xeon Platinum 8275CL (24 cores, 48 PUs)");
  EXPECT_EQ(lines[5], "    NUMA node 0: 576 GiB, 24 cores, 48 PUs, cpus 0-23,48-71");
  EXPECT_EQ(lines[6],
            "      GPU 0000:10:1c.0 NVIDIA A100-SXM4-40GB, 40 GiB; 12 links NVLink 3 to NVSwitch");
  EXPECT_EQ(lines[10], "      NIC efa_0 (efa, 0000:10:1b.0, 100 Gbit/s)");
  EXPECT_EQ(lines[12], "  package 1: Intel Xeon Platinum 8275CL (24 cores, 48 PUs)");
  EXPECT_EQ(lines[13], "    NUMA node 1: 576 GiB, 24 cores, 48 PUs, cpus 24-47,72-95");
  EXPECT_EQ(lines[19], "      NIC efa_3 (efa, 0000:a0:1b.0, 100 Gbit/s)");
  EXPECT_EQ(lines.back(),
            "  NVLink: known (NVSwitch, 12 NVLink 3 links per GPU, from AWS's p4d page "
            "(docs/topology.md))");
}

// PLEXUS_TOPO_DUMP_FILE is written through a temporary file and a rename: a device or a
// symbolic link there is refused (exit 1, naming it) and left as it is.
TEST(PlexusTopo, DumpFileRefusesDevicesAndLinks) {
  test::TempDir dir("plexus-topo-dump");
  ASSERT_FALSE(dir.path().empty());
  const std::string file = kExamples + "/p4d.24xlarge.json";
  const std::string link = dir.path() + "/dump.json";
  ASSERT_EQ(::symlink((dir.path() + "/target.json").c_str(), link.c_str()), 0);
  ProcessResult r = topo({"--topo-file", file}, {"PLEXUS_TOPO_DUMP_FILE=" + link});
  ASSERT_TRUE(r.exited) << r.err;
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "plexus-topo: PLEXUS_TOPO_DUMP_FILE=" + link + ": " + link +
                       ": cannot be written: '" + link +
                       "' exists and is a symbolic link (give the file it points to); refusing "
                       "to replace it\n");
  struct stat st {};
  ASSERT_EQ(::lstat(link.c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));

  r = topo({"--topo-file", file}, {"PLEXUS_TOPO_DUMP_FILE=/dev/null"});
  ASSERT_TRUE(r.exited) << r.err;
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "plexus-topo: PLEXUS_TOPO_DUMP_FILE=/dev/null: /dev/null: cannot be written: "
                   "'/dev/null' exists and is a character device; refusing to replace it\n");
  ASSERT_EQ(::lstat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));

  const std::string plain = dir.path() + "/plain.json";  // a new regular file is written
  r = topo({"--topo-file", file}, {"PLEXUS_TOPO_DUMP_FILE=" + plain});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << r.err;
  ASSERT_EQ(::lstat(plain.c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
}

TEST(PlexusTopo, JsonIsTheFileItRead) {
  std::string file = kExamples + "/p5.48xlarge.json";
  ProcessResult r = topo({"--topo-file", file, "--json"});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << r.err;
  std::ifstream in(file);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(r.out, text);
}

TEST(PlexusTopo, GroupsACommunicatorOverTheClusterFile) {
  ProcessResult r = topo({"--ranks", "16", "--ranks-per-host", "8"},
                         {"PLEXUS_TOPO_FILE=" + kExamples + "/p5.48xlarge-x128.json"});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << r.out << r.err;
  EXPECT_TRUE(has_line(r.out, "hosts p5-0 .. p5-127: 128 hosts with the same hardware; the first:"))
      << r.out;
  EXPECT_TRUE(has_line(r.out, "communicator: 16 ranks on 2 hosts, 8 per host")) << r.out;
  EXPECT_TRUE(has_line(r.out, "  host 1 p5-1: ranks 8-15")) << r.out;
  EXPECT_TRUE(has_line(r.out, "     9     1    1/8     0  0000:60:00.0")) << r.out;
  EXPECT_TRUE(has_line(r.out, "    rail 0: 0 8")) << r.out;
  EXPECT_TRUE(has_line(r.out, "    rail 7: 7 15")) << r.out;
  EXPECT_TRUE(has_line(r.out, "  NUMA domains: 4")) << r.out;
  // 2 x C(8,2) = 56 pairs on NVSwitch, 8 x 8 = 64 across the hosts.
  EXPECT_TRUE(has_line(
      r.out, "  rank pairs by closest path: nvlink 56, same-numa 0, same-host 0, network 64"))
      << r.out;
  EXPECT_TRUE(has_line(r.out, "  network per host (p5-0): 32 NICs, 3200 Gbit/s in all")) << r.out;
  EXPECT_TRUE(has_line(
      r.out,
      "  NVLink per GPU (0000:4f:00.0): 18 links, 450 GB/s each way (NVIDIA's per-link rate)"))
      << r.out;
  EXPECT_TRUE(
      has_line(r.out,
               "  allreduce bytes each host sends per byte of buffer: flat ring over 16 ranks "
               "2(n-1)/n = 1.875; hierarchical (8 rails over 2 hosts) 2(K-1)/K = 1.000"))
      << r.out;
}

TEST(PlexusTopo, DiscoversThisHost) {
  HostTopology host;
  std::string error;
  ASSERT_EQ(discover_host(&host, &error), PLX_SUCCESS) << error;
  ProcessResult r = topo({"--ranks", "2", "--ranks-per-host", "2"},
                         {"PLEXUS_TOPO_FILE=", "PLEXUS_HOST_ID=topo-test"});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << r.out << r.err;
  EXPECT_TRUE(has_line(r.out, "source: discovered through hwloc")) << r.out;
  EXPECT_TRUE(has_line(r.out, "host topo-test (hostname " + host.hostname + ")")) << r.out;
  std::string numa0 = "NUMA node 0: ";
  EXPECT_NE(r.out.find(numa0), std::string::npos) << r.out;
  EXPECT_TRUE(has_line(r.out, "communicator: 2 ranks on 1 host, 2 per host")) << r.out;
  EXPECT_TRUE(has_line(r.out, "    rail 1: 1")) << r.out;

  ProcessResult json = topo({"--json"}, {"PLEXUS_TOPO_FILE=", "PLEXUS_HOST_ID=topo-test"});
  ASSERT_TRUE(json.exited && json.exit_code == 0) << json.err;
  ClusterTopology printed;
  ASSERT_EQ(parse_topology_json(json.out, "stdout", &printed, &error), PLX_SUCCESS) << error;
  host.host_id = "topo-test";
  EXPECT_EQ(printed.hosts[0], host);
}

TEST(PlexusTopo, BadInputExitsWithTwoAndSaysWhy) {
  test::TempDir dir("plexus-topo-test");
  std::string bad = dir.path() + "/bad.json";
  std::ofstream(bad) << "{\"plexus_topology\": 1,\n \"numa_nodes\": [{\"os_index\": \"zero\"}]}\n";
  ProcessResult r = topo({"--topo-file", bad});
  ASSERT_TRUE(r.exited) << r.err;
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "plexus-topo: " + bad +
                       ": numa_nodes[0].os_index: expected a non-negative integer, got \"zero\"\n");

  r = topo({"--ranks", "3"}, {"PLEXUS_TOPO_FILE=" + bad});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "plexus-topo: PLEXUS_TOPO_FILE=" + bad +
                       ": numa_nodes[0].os_index: expected a non-negative integer, got \"zero\"\n");

  r = topo({"--topo-file", kExamples + "/p4d.24xlarge.json", "--ranks", "9"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err,
            "plexus-topo: fill_hosts: 9 ranks at 8 per host need 2 hosts; the topology has 1\n");

  r = topo({"--ranks-per-host", "4"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "plexus-topo: --ranks-per-host needs --ranks\n");

  r = topo({"--ranks", "0"});
  EXPECT_EQ(r.exit_code, 2);
}

}  // namespace
}  // namespace plexus::topology
