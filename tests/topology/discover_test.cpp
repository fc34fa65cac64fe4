// Discovery on this machine, checked against what the kernel says (/proc/cpuinfo,
// /sys/devices/system/node), hwloc XML import, the JSON round trip, PLEXUS_HOST_ID,
// PLEXUS_TOPO_FILE / PLEXUS_TOPO_DUMP_FILE, NVML through a fake library, NIC speeds from a fake
// sysfs.
#include "topology/discover.h"

#include <gtest/gtest.h>
#include <hwloc.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "tests/support/temp_dir.h"
#include "tests/topology/scoped_env.h"
#include "topology/host.h"
#include "topology/host_check.h"
#include "topology/nic_speed.h"
#include "topology/nvml.h"
#include "topology/topology_file.h"
#include "topology/topology_json.h"

namespace plexus::topology {
namespace {

using test::ScopedEnv;
using test::TempDir;

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream all;
  all << in.rdbuf();
  return all.str();
}

void write_file(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

HostTopology discover(const DiscoverOptions& options = {}) {
  HostTopology host;
  std::string error;
  EXPECT_EQ(discover_host(&host, &error, options), PLX_SUCCESS) << error;
  return host;
}

TEST(Discover, CountsMatchProcCpuinfo) {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  uint32_t processors = 0;
  std::set<std::string> packages, cores;
  std::string package;
  while (std::getline(cpuinfo, line)) {
    auto value = [&] { return line.substr(line.find(':') + 1); };
    if (line.rfind("processor", 0) == 0) ++processors;
    if (line.rfind("physical id", 0) == 0) packages.insert(package = value());
    if (line.rfind("core id", 0) == 0) cores.insert(package + "/" + value());
  }
  HostTopology host = discover();
  EXPECT_EQ(host.pu_count(), processors);
  uint32_t package_pus = 0;
  for (const Package& p : host.packages) package_pus += p.pus;
  EXPECT_EQ(package_pus, processors);
  if (!packages.empty()) {  // x86 names packages and cores; not every architecture does
    EXPECT_EQ(host.packages.size(), packages.size());
    EXPECT_EQ(host.core_count(), cores.size());
  }
}

TEST(Discover, NumaNodesMatchSysfs) {
  std::set<int> sys_nodes;
  for (const auto& entry : std::filesystem::directory_iterator("/sys/devices/system/node")) {
    std::string name = entry.path().filename();
    if (name.rfind("node", 0) == 0 && name.size() > 4 && isdigit(name[4]))
      sys_nodes.insert(std::stoi(name.substr(4)));
  }
  HostTopology host = discover();
  ASSERT_EQ(host.numa_nodes.size(), sys_nodes.size());
  for (const NumaNode& node : host.numa_nodes) {
    SCOPED_TRACE("NUMA node " + std::to_string(node.os_index));
    ASSERT_TRUE(sys_nodes.count(node.os_index));
    std::string dir = "/sys/devices/system/node/node" + std::to_string(node.os_index);
    std::string cpulist = read_file(dir + "/cpulist");
    cpulist.erase(cpulist.find_last_not_of("\n") + 1);
    EXPECT_EQ(node.cpus, cpulist);
    std::istringstream meminfo(read_file(dir + "/meminfo"));
    std::string line;
    uint64_t total_kb = 0;
    while (std::getline(meminfo, line))
      if (line.find("MemTotal:") != std::string::npos)
        total_kb = std::stoull(line.substr(line.find("MemTotal:") + 9));
    EXPECT_EQ(node.memory_bytes, total_kb * 1024);
  }
}

TEST(Discover, DevicesSitOnKnownNumaNodes) {
  HostTopology host = discover();
  std::optional<HostProblem> problem = check_host(host);
  EXPECT_FALSE(problem) << problem->path << ": " << problem->what;
  for (const PciDevice& d : host.pci_devices)
    EXPECT_TRUE(d.numa_node == kNoNuma || host.find_numa_node(d.numa_node)) << d.bus_id;
  for (const Nic& n : host.nics) {
    EXPECT_TRUE(n.numa_node == kNoNuma || host.find_numa_node(n.numa_node)) << n.name;
    if (n.kind == NicKind::Network) {
      EXPECT_TRUE(std::filesystem::exists("/sys/class/net/" + n.name)) << n.name;
    }
  }
}

TEST(Discover, JsonRoundTripsExactly) {
  HostTopology host = discover();
  std::string text = to_json_text(host);
  ClusterTopology back;
  std::string error;
  ASSERT_EQ(parse_topology_json(text, "discovered", &back, &error), PLX_SUCCESS) << error;
  ASSERT_EQ(back.hosts.size(), 1u);
  EXPECT_EQ(back.hosts[0], host);
  EXPECT_EQ(to_json_text(back.hosts[0]), text);
}

TEST(Discover, HostIdHonoursPlexusHostId) {
  ScopedEnv id("PLEXUS_HOST_ID", "emulated-host-7");
  EXPECT_EQ(host_id(), "emulated-host-7");
  EXPECT_EQ(discover().host_id, "emulated-host-7");
}

TEST(Discover, HostIdIsHostnameAndBootId) {
  ScopedEnv id("PLEXUS_HOST_ID", std::nullopt);
  std::string boot = read_file("/proc/sys/kernel/random/boot_id");
  boot.erase(boot.find_last_not_of("\n") + 1);
  char name[256] = {};
  gethostname(name, sizeof(name) - 1);
  EXPECT_EQ(discover().host_id, std::string(name) + "/" + boot);
}

TEST(Discover, HwlocXmlExportReadsBackAsTheSameHardware) {
  TempDir dir("plexus-topo-test");
  std::string xml = dir.path() + "/host.xml";
  hwloc_topology_t topo;
  ASSERT_EQ(hwloc_topology_init(&topo), 0);
  hwloc_topology_set_flags(topo, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED);
  hwloc_topology_set_all_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_ALL);
  ASSERT_EQ(hwloc_topology_load(topo), 0);
  ASSERT_EQ(hwloc_topology_export_xml(topo, xml.c_str(), 0), 0);
  hwloc_topology_destroy(topo);

  ClusterTopology from_xml;
  std::string error;
  ASSERT_EQ(read_topology_file(xml, &from_xml, &error), PLX_SUCCESS) << error;
  ASSERT_EQ(from_xml.hosts.size(), 1u);
  HostTopology live = discover();
  HostTopology read = from_xml.hosts[0];
  EXPECT_EQ(read.host_id, read.hostname.empty() ? "host0" : read.hostname);
  EXPECT_FALSE(read.nvlink_known);
  EXPECT_EQ(read.nvlink_note, "read from hwloc XML, which has no NVLink information");
  // The live host adds what XML cannot carry: NIC speeds and NVML's view.
  for (Nic& nic : live.nics) nic.speed_mbit_per_s.reset();
  read.nvlink_known = live.nvlink_known;
  read.nvlink_note = live.nvlink_note;
  EXPECT_TRUE(read.same_hardware(live)) << to_json_text(read) << "\nvs\n" << to_json_text(live);
}

TEST(Discover, DumpThenLoadGivesTheDiscoveredHost) {
  TempDir dir("plexus-topo-test");
  std::string dump = dir.path() + "/dump.json";
  HostTopology discovered, loaded;
  std::string error, origin;
  {
    ScopedEnv file("PLEXUS_TOPO_FILE", std::nullopt);
    ScopedEnv out("PLEXUS_TOPO_DUMP_FILE", dump);
    ASSERT_EQ(this_host_topology(&discovered, &error, &origin), PLX_SUCCESS) << error;
    EXPECT_EQ(origin, "discovered through hwloc");
  }
  EXPECT_EQ(read_file(dump), to_json_text(discovered));
  {
    ScopedEnv file("PLEXUS_TOPO_FILE", dump);
    ScopedEnv out("PLEXUS_TOPO_DUMP_FILE", std::nullopt);
    ASSERT_EQ(this_host_topology(&loaded, &error, &origin), PLX_SUCCESS) << error;
    EXPECT_EQ(origin, "PLEXUS_TOPO_FILE=" + dump);
  }
  EXPECT_EQ(loaded, discovered);
}

TEST(Discover, TopoFileSelectsTheHostNamedByPlexusHostId) {
  TempDir dir("plexus-topo-test");
  std::string path = dir.path() + "/cluster.json";
  write_file(path, R"({"plexus_topology": 1, "hosts": [
    {"host_id": "a", "numa_nodes": [{"os_index": 0, "memory_bytes": 1, "cores": 1, "pus": 1}]},
    {"host_id": "b", "numa_nodes": [{"os_index": 0, "memory_bytes": 2, "cores": 2, "pus": 2}]}]})");
  ScopedEnv file("PLEXUS_TOPO_FILE", path);
  HostTopology host;
  std::string error;
  {
    ScopedEnv id("PLEXUS_HOST_ID", "b");
    ASSERT_EQ(this_host_topology(&host, &error), PLX_SUCCESS) << error;
    EXPECT_EQ(host.host_id, "b");
    EXPECT_EQ(host.core_count(), 2u);
  }
  ScopedEnv id("PLEXUS_HOST_ID", "c");
  EXPECT_EQ(this_host_topology(&host, &error), PLX_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(error, "PLEXUS_TOPO_FILE=" + path +
                       ": no host has host_id \"c\" (this host's id; the file "
                       "has 2 hosts: \"a\", \"b\"); set PLEXUS_HOST_ID to one of them");
}

TEST(Discover, MalformedTopoFileNamesTheVariable) {
  TempDir dir("plexus-topo-test");
  std::string path = dir.path() + "/bad.json";
  write_file(path, "{\n  \"plexus_topology\": 1,\n  \"numa_nodes\": [}\n");
  ScopedEnv file("PLEXUS_TOPO_FILE", path);
  HostTopology host;
  std::string error;
  EXPECT_EQ(this_host_topology(&host, &error), PLX_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(error, "PLEXUS_TOPO_FILE=" + path +
                       ": line 3, column 18: syntax error while parsing value - unexpected '}'; "
                       "expected '[', '{', or a literal");
}

TEST(Discover, UnwritableDumpFileIsAnError) {
  ScopedEnv file("PLEXUS_TOPO_FILE", std::nullopt);
  ScopedEnv out("PLEXUS_TOPO_DUMP_FILE", "/nonexistent-dir/dump.json");
  HostTopology host;
  std::string error;
  EXPECT_EQ(this_host_topology(&host, &error), PLX_ERROR_SYSTEM);
  EXPECT_EQ(error,
            "PLEXUS_TOPO_DUMP_FILE=/nonexistent-dir/dump.json: cannot be written: No such file or "
            "directory");
}

TEST(Nvml, AbsentLibraryMeansNoNvlinkInformationAndSaysWhy) {
  NvmlReport report = query_nvml("libplexus-no-such-nvml.so.1");
  EXPECT_FALSE(report.loaded);
  EXPECT_TRUE(report.gpus.empty());
  EXPECT_EQ(
      report.note,
      "libplexus-no-such-nvml.so.1: cannot open shared object file: No such file or directory");
  HostTopology host = discover({"libplexus-no-such-nvml.so.1", "/sys"});
  EXPECT_FALSE(host.nvlink_known);
  EXPECT_EQ(host.nvlink_note, report.note);
}

TEST(Nvml, FakeLibraryGpusAndLinks) {
  NvmlReport report = query_nvml(PLEXUS_FAKE_NVML);
  ASSERT_TRUE(report.loaded) << report.note;
  EXPECT_EQ(report.note, std::string("NVML (") + PLEXUS_FAKE_NVML + "): 4 GPUs");
  ASSERT_EQ(report.gpus.size(), 4u);
  EXPECT_EQ(report.gpus[2].name, "Fake GPU 2");
  EXPECT_EQ(report.gpus[2].pci_bus_id, "0000:c1:00.0");
  EXPECT_EQ(report.gpus[2].memory_bytes, 3ull << 30);
  EXPECT_EQ(report.gpus[0].nvlinks,
            (std::vector<NvLinkGroup>{{NvLinkRemote::Gpu, "0000:82:00.0", 4, 3}}));
  EXPECT_EQ(report.gpus[2].nvlinks,
            (std::vector<NvLinkGroup>{{NvLinkRemote::Switch, "0000:e0:00.0", 6, 4}}));

  HostTopology host = discover({PLEXUS_FAKE_NVML, "/sys"});
  EXPECT_TRUE(host.nvlink_known);
  ASSERT_EQ(host.gpus.size(), 4u);  // none of them is on this machine's PCI bus
  EXPECT_EQ(host.gpus[3].pci_bus_id, "0000:c2:00.0");
  EXPECT_EQ(host.gpus[3].numa_node, kNoNuma);
  EXPECT_TRUE(nvlink_connected(host, "0000:81:00.0", "0000:82:00.0"));
  EXPECT_TRUE(nvlink_connected(host, "0000:c1:00.0", "0000:c2:00.0"));
  EXPECT_FALSE(nvlink_connected(host, "0000:81:00.0", "0000:c1:00.0"));
  EXPECT_FALSE(nvlink_connected(host, "0000:81:00.0", "0000:81:00.0"));
  ClusterTopology back;
  std::string error;
  ASSERT_EQ(parse_topology_json(to_json_text(host), "fake", &back, &error), PLX_SUCCESS) << error;
  EXPECT_EQ(back.hosts[0], host);
}

TEST(Nvml, WithoutRemoteTypeAPeerGpuIsRecognisedByBusId) {
  NvmlReport report = query_nvml(PLEXUS_FAKE_NVML_OLD);
  ASSERT_TRUE(report.loaded) << report.note;
  EXPECT_EQ(report.gpus[1].nvlinks,
            (std::vector<NvLinkGroup>{{NvLinkRemote::Gpu, "0000:81:00.0", 4, 3}}));
  EXPECT_EQ(report.gpus[3].nvlinks,
            (std::vector<NvLinkGroup>{{NvLinkRemote::Unknown, "0000:e0:00.0", 6, 4}}));
}

TEST(NicSpeed, ReadFromSysfs) {
  TempDir dir("plexus-topo-sysfs");
  std::filesystem::create_directories(dir.path() + "/class/net/eth9");
  std::filesystem::create_directories(dir.path() + "/class/net/eth8");
  std::filesystem::create_directories(dir.path() + "/class/infiniband/efa_0/ports/1");
  write_file(dir.path() + "/class/net/eth9/speed", "25000\n");
  write_file(dir.path() + "/class/net/eth8/speed", "-1\n");
  write_file(dir.path() + "/class/infiniband/efa_0/ports/1/rate", "100 Gb/sec (4X EDR)\n");
  EXPECT_EQ(nic_speed_mbit_per_s({"eth9", NicKind::Network, "", kNoNuma, {}}, dir.path()), 25000u);
  EXPECT_EQ(nic_speed_mbit_per_s({"eth8", NicKind::Network, "", kNoNuma, {}}, dir.path()),
            std::nullopt);
  EXPECT_EQ(nic_speed_mbit_per_s({"eth7", NicKind::Network, "", kNoNuma, {}}, dir.path()),
            std::nullopt);
  EXPECT_EQ(nic_speed_mbit_per_s({"efa_0", NicKind::Efa, "", kNoNuma, {}}, dir.path()), 100000u);
  EXPECT_EQ(nic_speed_mbit_per_s({"../x", NicKind::Network, "", kNoNuma, {}}, dir.path()),
            std::nullopt);
}

}  // namespace
}  // namespace plexus::topology
