// Topology files: the example files load with the figures their sources give, writing and
// reading give back the same value, and each kind of malformed file gets its exact message.
#include "topology/topology_file.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>

#include <sys/stat.h>
#include <unistd.h>

#include "tests/support/temp_dir.h"
#include "topology/cpu_list.h"
#include "topology/json_depth.h"
#include "topology/output_path.h"
#include "topology/pci_bus_id.h"
#include "topology/topology_json.h"

namespace plexus::topology {
namespace {

using test::TempDir;

constexpr uint64_t kGiB = 1ull << 30;
const std::string kExamples = PLEXUS_TOPO_EXAMPLES_DIR;

ClusterTopology load(const std::string& path) {
  ClusterTopology cluster;
  std::string error;
  EXPECT_EQ(read_topology_file(path, &cluster, &error), PLX_SUCCESS) << error;
  return cluster;
}

// parse_topology_json's message for `text`, or "" if it parses.
std::string parse_error(const std::string& text) {
  ClusterTopology cluster;
  std::string error;
  plx_result_t rc = parse_topology_json(text, "t.json", &cluster, &error);
  EXPECT_EQ(rc, rc == PLX_SUCCESS ? PLX_SUCCESS : PLX_ERROR_INVALID_ARGUMENT);
  return rc == PLX_SUCCESS ? "" : error;
}

void expect_all_gpus_nvlinked(const HostTopology& host) {
  for (const Gpu& a : host.gpus)
    for (const Gpu& b : host.gpus)
      EXPECT_EQ(nvlink_connected(host, a.pci_bus_id, b.pci_bus_id), &a != &b)
          << a.pci_bus_id << " " << b.pci_bus_id;
}

TEST(Examples, P4d24xlarge) {
  ClusterTopology c = load(kExamples + "/p4d.24xlarge.json");
  ASSERT_EQ(c.hosts.size(), 1u);
  const HostTopology& h = c.hosts[0];
  EXPECT_EQ(h.host_id, "p4d");
  EXPECT_EQ(h.packages.size(), 2u);
  EXPECT_EQ(h.numa_nodes.size(), 2u);
  EXPECT_EQ(h.pu_count(), 96u);
  EXPECT_EQ(h.core_count(), 48u);
  EXPECT_EQ(h.memory_bytes(), 1152 * kGiB);
  ASSERT_EQ(h.gpus.size(), 8u);
  for (size_t i = 0; i < h.gpus.size(); ++i) {
    EXPECT_EQ(h.gpus[i].name, "NVIDIA A100-SXM4-40GB");
    EXPECT_EQ(h.gpus[i].memory_bytes, 40 * kGiB);
    EXPECT_EQ(h.gpus[i].numa_node, i < 4 ? 0 : 1);
    EXPECT_EQ(h.gpus[i].nvlinks, (std::vector<NvLinkGroup>{{NvLinkRemote::Switch, "", 12, 3}}));
  }
  ASSERT_EQ(h.nics.size(), 4u);
  for (const Nic& nic : h.nics) EXPECT_EQ(nic.kind, NicKind::Efa);
  EXPECT_EQ(h.network_mbit_per_s(), 400'000u);
  EXPECT_TRUE(h.nvlink_known);
  expect_all_gpus_nvlinked(h);
  // 12 links x 25 GB/s = 300 GB/s each way, NVIDIA's 600 GB/s both ways for the A100.
  EXPECT_EQ(12 * nvlink_bytes_per_second_per_direction(3), 300'000'000'000u);
}

TEST(Examples, P548xlarge) {
  ClusterTopology c = load(kExamples + "/p5.48xlarge.json");
  ASSERT_EQ(c.hosts.size(), 1u);
  const HostTopology& h = c.hosts[0];
  EXPECT_EQ(h.packages.size(), 2u);
  EXPECT_EQ(h.numa_nodes.size(), 2u);
  EXPECT_EQ(h.pu_count(), 192u);
  EXPECT_EQ(h.core_count(), 96u);
  EXPECT_EQ(h.memory_bytes(), 2048 * kGiB);
  ASSERT_EQ(h.gpus.size(), 8u);
  for (const Gpu& gpu : h.gpus) {
    EXPECT_EQ(gpu.name, "NVIDIA H100 80GB HBM3");
    EXPECT_EQ(gpu.memory_bytes, 80 * kGiB);
    EXPECT_EQ(gpu.nvlinks, (std::vector<NvLinkGroup>{{NvLinkRemote::Switch, "", 18, 4}}));
  }
  ASSERT_EQ(h.nics.size(), 32u);
  size_t on_node0 = 0;
  for (const Nic& nic : h.nics) {
    EXPECT_EQ(nic.kind, NicKind::Efa);
    EXPECT_EQ(nic.speed_mbit_per_s, 100'000u);
    on_node0 += nic.numa_node == 0;
  }
  EXPECT_EQ(on_node0, 16u);
  EXPECT_EQ(h.network_mbit_per_s(), 3'200'000u);
  expect_all_gpus_nvlinked(h);
  EXPECT_EQ(18 * nvlink_bytes_per_second_per_direction(4), 450'000'000'000u);  // 900 GB/s both ways
}

TEST(Examples, ClusterOf128P5HostsIsTheP5FileRepeated) {
  ClusterTopology cluster = load(kExamples + "/p5.48xlarge-x128.json");
  HostTopology p5 = load(kExamples + "/p5.48xlarge.json").hosts[0];
  ASSERT_EQ(cluster.hosts.size(), 128u);
  for (size_t i = 0; i < cluster.hosts.size(); ++i) {
    EXPECT_EQ(cluster.hosts[i].host_id, "p5-" + std::to_string(i));
    EXPECT_TRUE(cluster.hosts[i].same_hardware(p5));
  }
  EXPECT_EQ(cluster.hosts[0].description, p5.description);
}

TEST(Examples, WritingAnExampleGivesItsText) {
  for (const char* name : {"p4d.24xlarge.json", "p5.48xlarge.json"}) {
    std::ifstream in(kExamples + "/" + name);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(to_json_text(load(kExamples + "/" + name).hosts[0]), text) << name;
  }
}

TEST(Json, ClusterRoundTrips) {
  ClusterTopology cluster = load(kExamples + "/p5.48xlarge-x128.json");
  cluster.hosts.resize(3);
  cluster.hosts[1].nics[0].speed_mbit_per_s.reset();
  cluster.hosts[2].gpus[0].nvlinks = {{NvLinkRemote::Gpu, "0000:60:00.0", 2, 4},
                                      {NvLinkRemote::Unknown, "", 1, 0}};
  cluster.hosts[2].caches = {{3, CacheType::Unified, 32 << 20, 64, 8},
                             {1, CacheType::Instruction, 32768, 64, 96}};
  cluster.hosts[2].pci_devices = {{"0000:4f:00.0", 0x10de, 0x2330, 0x0302, 0}};
  std::string text = to_json_text(cluster);
  ClusterTopology back;
  std::string error;
  ASSERT_EQ(parse_topology_json(text, "x", &back, &error), PLX_SUCCESS) << error;
  EXPECT_EQ(back, cluster);
  EXPECT_EQ(to_json_text(back), text);
}

TEST(Json, HostsWithoutIdsAreNumbered) {
  ClusterTopology c;
  std::string error;
  const char* numa = R"("numa_nodes": [{"os_index": 0, "memory_bytes": 1, "cores": 1, "pus": 1}])";
  std::string text = std::string(R"({"plexus_topology": 1, "hosts": [{"count": 2, )") + numa +
                     "}, {" + numa + R"(}, {"host_id": "x", )" + numa + "}]}";
  ASSERT_EQ(parse_topology_json(text, "t.json", &c, &error), PLX_SUCCESS) << error;
  ASSERT_EQ(c.hosts.size(), 4u);
  EXPECT_EQ(c.hosts[0].host_id, "host0");
  EXPECT_EQ(c.hosts[1].host_id, "host1");
  EXPECT_EQ(c.hosts[2].host_id, "host2");
  EXPECT_EQ(c.hosts[3].host_id, "x");
  ASSERT_EQ(parse_topology_json(std::string(R"({"plexus_topology": 1, )") + numa + "}", "t.json",
                                &c, &error),
            PLX_SUCCESS)
      << error;
  EXPECT_EQ(c.hosts[0].host_id, "host0");
}

// A one-host cluster document with `numa` as its numa_nodes, for the malformed-field cases.
std::string cluster_with(const std::string& host_fields) {
  return R"({"plexus_topology": 1, "hosts": [{"host_id": "a", )" + host_fields + "}]}";
}
const std::string kNuma =
    R"("numa_nodes": [{"os_index": 0, "memory_bytes": 1, "cores": 1, "pus": 1}])";

TEST(JsonDepth, CountsNestingOutsideStringsAndStopsPastTheLimit) {
  EXPECT_EQ(json_nesting_depth("5"), 0);
  EXPECT_EQ(json_nesting_depth(R"({"a": [1, {"b": []}], "c": {}})"), 4);
  // Brackets inside strings, escaped quotes included, do not count.
  EXPECT_EQ(json_nesting_depth(R"({"a": "[[[{\"[[["})"), 1);
  EXPECT_EQ(json_nesting_depth(R"(["\\", [[]]])"), 3);
  // Unbalanced text is counted as far as it goes; closing brackets never go below zero.
  EXPECT_EQ(json_nesting_depth("]]]][["), 2);
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  EXPECT_EQ(json_nesting_depth(deep), kMaxJsonDepth + 1);
  EXPECT_EQ(json_nesting_depth(deep, 5), 6);
  EXPECT_EQ(json_nesting_depth(std::string(64, '[') + std::string(64, ']')), 64);
}

TEST(Malformed, DeepNestingIsRefusedBeforeParsing) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  EXPECT_EQ(parse_error(R"({"plexus_topology": 1, "hosts": )" + deep + "}"),
            "t.json: arrays and objects nest deeper than 64 levels");
}

TEST(Malformed, SyntaxErrorNamesLineAndColumn) {
  EXPECT_EQ(
      parse_error(
          "{\n  \"plexus_topology\": 1,\n  \"hosts\": [\n    {\"host_id\": \"a\",}\n  ]\n}\n"),
      "t.json: line 4, column 21: syntax error while parsing object key - unexpected '}'; "
      "expected string literal");
  EXPECT_EQ(parse_error(""),
            "t.json: line 1, column 1: syntax error while parsing value - unexpected end of "
            "input; expected '[', '{', or a literal");
  EXPECT_EQ(
      parse_error("{\n  \"plexus_topology\": 1\n  \"hosts\": []\n}"),
      "t.json: line 3, column 9: syntax error while parsing object - unexpected string literal; "
      "expected '}'");
}

TEST(Malformed, WrongTypeNamesTheJsonPath) {
  EXPECT_EQ(parse_error(cluster_with(
                R"("numa_nodes": [{"os_index": 0, "memory_bytes": 1, "cores": 1, "pus": 1},
                                                       {"os_index": 1, "memory_bytes": 1, "cores": "x", "pus": 1}])")),
            "t.json: hosts[0].numa_nodes[1].cores: expected a non-negative integer, got \"x\"");
  EXPECT_EQ(
      parse_error(cluster_with(
          kNuma + R"(, "nics": [{"name": "e", "kind": "network", "speed_mbit_per_s": 2.5}])")),
      "t.json: hosts[0].nics[0].speed_mbit_per_s: expected a positive integer, got 2.5");
  EXPECT_EQ(parse_error(cluster_with(kNuma + R"(, "nvlink_known": "yes")")),
            "t.json: hosts[0].nvlink_known: expected true or false, got \"yes\"");
  EXPECT_EQ(parse_error(cluster_with(kNuma + R"(, "gpus": {})")),
            "t.json: hosts[0].gpus: expected an array, got {}");
  EXPECT_EQ(parse_error(cluster_with(kNuma + R"(, "hostname": 7)")),
            "t.json: hosts[0].hostname: expected a string, got 7");
  EXPECT_EQ(parse_error(R"({"plexus_topology": 1, "hosts": [[]]})"),
            "t.json: hosts[0]: expected an object, got []");
  EXPECT_EQ(parse_error("[1, 2]"), "t.json: expected an object, got [1,2]");
}

TEST(Malformed, NegativeAndZeroCounts) {
  EXPECT_EQ(parse_error(cluster_with(
                R"("numa_nodes": [{"os_index": 0, "memory_bytes": -5, "cores": 1, "pus": 1}])")),
            "t.json: hosts[0].numa_nodes[0].memory_bytes: expected a non-negative integer, got -5");
  EXPECT_EQ(parse_error(cluster_with(R"("count": 0, )" + kNuma)),
            "t.json: hosts[0].count: expected a positive integer, got 0");
  EXPECT_EQ(parse_error(cluster_with(R"("count": 70000, )" + kNuma)),
            "t.json: hosts[0].count: expected a positive integer up to 65536, got 70000");
  EXPECT_EQ(
      parse_error(cluster_with(
          kNuma + R"(, "caches": [{"level": 1, "type": "data", "size_bytes": 1, "count": 0}])")),
      "t.json: hosts[0].caches[0].count: expected a positive integer, got 0");
  EXPECT_EQ(parse_error(cluster_with(
                R"("numa_nodes": [{"os_index": 0, "memory_bytes": 1, "cores": 4, "pus": 2}])")),
            "t.json: hosts[0].numa_nodes[0].pus: 2 is fewer than cores (4)");
  EXPECT_EQ(parse_error(cluster_with(R"("numa_nodes": [])")),
            "t.json: hosts[0].numa_nodes: expected at least one NUMA node, got []");
}

// "count" copies a host: a few kilobytes could ask for millions of objects (a host, and each entry
// of its lists), so the expanded document holds at most 2^22 of them (found by
// tests/fuzz/topology_json_fuzz_target.cpp).
TEST(Malformed, CountsExpandToAtMost2To22Objects) {
  const auto host_of = [](int numa_nodes, int count) {
    std::string text = R"({"host_id": "h)";
    text += std::to_string(numa_nodes);
    text += R"(", "count": )";
    text += std::to_string(count);
    text += R"(, "numa_nodes": [)";
    for (int i = 0; i < numa_nodes; ++i) {
      if (i > 0) text += ",";
      text += R"({"os_index": )";
      text += std::to_string(i);
      text += R"(, "memory_bytes": 1, "cores": 1, "pus": 1})";
    }
    return text + "]}";
  };
  // 65536 x (1 + 64) objects: one host's worth more than 2^22 = 65536 x 64.
  EXPECT_EQ(parse_error(R"({"plexus_topology": 1, "hosts": [)" + host_of(64, 65536) + "]}"),
            "t.json: hosts[0]: count 65536 x 65 objects (the host and the entries of its lists) "
            "makes 4259840 objects in all, more than 4194304");
  // The sum over the entries counts: 4096 + 64500 x 65 objects, though each alone would pass.
  EXPECT_EQ(parse_error(R"({"plexus_topology": 1, "hosts": [)" + host_of(4095, 1) + "," +
                        host_of(64, 64500) + "]}"),
            "t.json: hosts[1]: count 64500 x 65 objects (the host and the entries of its lists) "
            "makes 4196596 objects in all, more than 4194304");
  ClusterTopology cluster;
  std::string error;
  ASSERT_EQ(parse_topology_json(R"({"plexus_topology": 1, "hosts": [)" + host_of(255, 1024) +
                                    "]}",
                                "t.json", &cluster, &error),
            PLX_SUCCESS)
      << error;
  EXPECT_EQ(cluster.hosts.size(), 1024u);
  EXPECT_EQ(cluster.hosts[1023].host_id, "h255-1023");
}

TEST(Malformed, UnknownAndMissingKeysAreNamed) {
  EXPECT_EQ(parse_error(cluster_with(
                R"("numa_nodes": [{"os_index": 0, "memory_bytes": 1, "core": 1, "pus": 1}])")),
            "t.json: hosts[0].numa_nodes[0]: unknown key \"core\" (known keys: os_index, package, "
            "memory_bytes, "
            "cores, pus, cpus)");
  EXPECT_EQ(
      parse_error(cluster_with(R"("numa_nodes": [{"os_index": 0, "memory_bytes": 1, "pus": 1}])")),
      "t.json: hosts[0].numa_nodes[0]: missing key \"cores\" (a non-negative integer)");
  EXPECT_EQ(parse_error(R"({"plexus_topology": 1, "count": 2, )" + kNuma + "}"),
            "t.json: unknown key \"count\" (known keys: plexus_topology, host_id, hostname, "
            "description, packages, "
            "numa_nodes, caches, pci_devices, gpus, nics, nvlink_known, nvlink_note)");
  EXPECT_EQ(parse_error(R"({"hosts": []})"),
            "t.json: missing key \"plexus_topology\" (the format version, 1)");
  EXPECT_EQ(parse_error(R"({"plexus_topology": 2, "new_field": 1})"),
            "t.json: plexus_topology: version 2 is not supported (this build reads version 1)");
  EXPECT_EQ(parse_error(R"({"plexus_topology": 1, "hosts": []})"),
            "t.json: hosts: expected at least one host, got []");
}

TEST(Malformed, BadValuesAndReferences) {
  EXPECT_EQ(parse_error(cluster_with(kNuma + R"(, "nics": [{"name": "e", "kind": "ethernet"}])")),
            "t.json: hosts[0].nics[0].kind: expected one of \"network\", \"openfabrics\", \"efa\", "
            "got \"ethernet\"");
  EXPECT_EQ(parse_error(cluster_with(kNuma + R"(, "gpus": [{"pci_bus_id": "10:1c.0"}])")),
            "t.json: hosts[0].gpus[0].pci_bus_id: expected a PCI bus id like \"0000:10:1c.0\", got "
            "\"10:1c.0\"");
  EXPECT_EQ(parse_error(cluster_with(
                kNuma + R"(, "gpus": [{"pci_bus_id": "0000:10:1c.0", "numa_node": 5}])")),
            "t.json: hosts[0].gpus[0].numa_node: 5 is not the os_index of a NUMA node (0)");
  EXPECT_EQ(parse_error(cluster_with(
                kNuma + R"(, "gpus": [{"pci_bus_id": "0000:10:1c.0", "numa_node": -2}])")),
            "t.json: hosts[0].gpus[0].numa_node: expected an os_index (a non-negative integer) or "
            "-1, got -2");
  EXPECT_EQ(
      parse_error(
          cluster_with(kNuma + R"(, "pci_devices": [{"bus_id": "0000:00:00.0", "vendor_id": "10de",
                                               "device_id": "xyz", "class_id": "0302"}])")),
      "t.json: hosts[0].pci_devices[0].device_id: expected 4 hex digits (\"10de\"), got \"xyz\"");
  EXPECT_EQ(parse_error(cluster_with(kNuma + R"(, "gpus": [{"pci_bus_id": "0000:10:1c.0",
                                               "nvlinks": [{"remote": "gpu", "remote_pci_bus_id": "0000:99:00.0", "links": 2}]}])")),
            "t.json: hosts[0].gpus[0].nvlinks[0].remote_pci_bus_id: 0000:99:00.0 is not the "
            "pci_bus_id of a GPU of this host");
  EXPECT_EQ(parse_error(cluster_with(kNuma + R"(, "gpus": [{"pci_bus_id": "0000:10:1c.0",
                                               "nvlinks": [{"remote": "gpu", "links": 2}]}])")),
            "t.json: hosts[0].gpus[0].nvlinks[0].remote_pci_bus_id: expected the peer GPU's PCI "
            "bus id, got \"\"");
  EXPECT_EQ(
      parse_error(cluster_with(
          R"("numa_nodes": [{"os_index": 0, "package": 1, "memory_bytes": 1, "cores": 1, "pus": 1}])")),
      "t.json: hosts[0].numa_nodes[0].package: 1 is not the os_index of a package (none listed)");
  EXPECT_EQ(
      parse_error(cluster_with(
          R"("numa_nodes": [{"os_index": 0, "memory_bytes": 1, "cores": 2, "pus": 4, "cpus": "0-2"}])")),
      "t.json: hosts[0].numa_nodes[0].cpus: \"0-2\" lists 3 CPUs, but pus is 4");
  EXPECT_EQ(parse_error(cluster_with(
                R"("numa_nodes": [{"os_index": 0, "memory_bytes": 1, "cores": 1, "pus": 1},
                                                       {"os_index": 0, "memory_bytes": 1, "cores": 1, "pus": 1}])")),
            "t.json: hosts[0].numa_nodes[1].os_index: 0 is already used by numa_nodes[0]");
  EXPECT_EQ(parse_error(R"({"plexus_topology": 1, "hosts": [{"host_id": "a-1", )" + kNuma +
                        R"(}, {"host_id": "a", "count": 2, )" + kNuma + "}]}"),
            "t.json: hosts[1]: host id \"a-1\" is already used by hosts[0]");
}

TEST(Malformed, ACpuInTwoNumaNodesIsRefused) {
  // Node 1 lists cpu 3, which node 0 ("0-3") already has: the later node is named.
  EXPECT_EQ(parse_error(cluster_with(
                R"("numa_nodes": [{"os_index": 0, "memory_bytes": 1, "cores": 4, "pus": 4, "cpus": "0-3"},
                                  {"os_index": 1, "memory_bytes": 1, "cores": 2, "pus": 2, "cpus": "3-4"}])")),
            "t.json: hosts[0].numa_nodes[1].cpus: cpu 3 is also in numa_nodes[0].cpus (\"0-3\")");
  // Interleaved but disjoint lists are fine; an overlap inside a later range is found too.
  EXPECT_EQ(parse_error(cluster_with(
                R"("numa_nodes": [{"os_index": 0, "memory_bytes": 1, "cores": 2, "pus": 2, "cpus": "0,8"},
                                  {"os_index": 1, "memory_bytes": 1, "cores": 4, "pus": 7, "cpus": "1-3,6-9"}])")),
            "t.json: hosts[0].numa_nodes[1].cpus: cpu 8 is also in numa_nodes[0].cpus (\"0,8\")");
  ClusterTopology ok;
  std::string error;
  EXPECT_EQ(parse_topology_json(cluster_with(
                R"("numa_nodes": [{"os_index": 0, "memory_bytes": 1, "cores": 2, "pus": 2, "cpus": "0,8"},
                                  {"os_index": 1, "memory_bytes": 1, "cores": 2, "pus": 2, "cpus": "1-2"}])"),
                "t.json", &ok, &error),
            PLX_SUCCESS)
      << error;
}

TEST(NetworkTotal, SaturatesInsteadOfOverflowing) {
  HostTopology h;
  h.nics.push_back(Nic{"a", NicKind::Efa, "0000:01:00.0", kNoNuma, UINT64_MAX - 5});
  h.nics.push_back(Nic{"b", NicKind::Efa, "0000:02:00.0", kNoNuma, 100});
  h.nics.push_back(Nic{"c", NicKind::Network, "", kNoNuma, 100});
  EXPECT_EQ(h.network_mbit_per_s(), UINT64_MAX);
  h.nics[0].speed_mbit_per_s = 1000;
  EXPECT_EQ(h.network_mbit_per_s(), 1200u);  // a bus id counted once, off-PCI NICs added
}

TEST(Malformed, NicSpeedIsBounded) {
  const auto nic = [](const std::string& speed) {
    return cluster_with(kNuma + R"(, "nics": [{"name": "e", "kind": "efa", "speed_mbit_per_s": )" +
                        speed + "}]");
  };
  EXPECT_EQ(parse_error(nic("0")),
            "t.json: hosts[0].nics[0].speed_mbit_per_s: expected a positive integer, got 0");
  EXPECT_EQ(parse_error(nic("18446744073709551615")),
            "t.json: hosts[0].nics[0].speed_mbit_per_s: expected a positive integer up to "
            "10000000, got 18446744073709551615");
  EXPECT_EQ(parse_error(nic("10000001")),
            "t.json: hosts[0].nics[0].speed_mbit_per_s: expected a positive integer up to "
            "10000000, got 10000001");
  EXPECT_EQ(parse_error(nic("10000000")), "");
  EXPECT_EQ(parse_error(nic("null")), "");
}

TEST(Malformed, HostIdWithAControlCharacterIsRefused) {
  const std::string doc = R"({"plexus_topology": 1, "hosts": [{"host_id": "a\u0000b", )" + kNuma +
                          "}]}";
  EXPECT_EQ(parse_error(doc),
            "t.json: hosts[0].host_id: contains the control character 0x00 at byte 1 (host ids "
            "are printed and compared as text)");
  EXPECT_EQ(parse_error(R"({"plexus_topology": 1, "host_id": "x\ty", )" + kNuma + "}"),
            "t.json: host_id: contains the control character 0x09 at byte 1 (host ids are "
            "printed and compared as text)");
}

TEST(MemoryTotal, SaturatesInsteadOfWrapping) {
  HostTopology h;
  h.numa_nodes.push_back(NumaNode{});
  h.numa_nodes.push_back(NumaNode{});
  h.numa_nodes[0].memory_bytes = UINT64_MAX;
  h.numa_nodes[1].memory_bytes = UINT64_MAX;
  EXPECT_EQ(h.memory_bytes(), UINT64_MAX);
  h.numa_nodes[0].memory_bytes = 5;
  h.numa_nodes[1].memory_bytes = 7;
  EXPECT_EQ(h.memory_bytes(), 12u);
  // Through the reader: two nodes of 2^64-1 bytes.
  ClusterTopology c;
  std::string error;
  ASSERT_EQ(parse_topology_json(
                R"({"plexus_topology": 1, "numa_nodes": [
                    {"os_index": 0, "memory_bytes": 18446744073709551615, "cores": 1, "pus": 1},
                    {"os_index": 1, "memory_bytes": 18446744073709551615, "cores": 1, "pus": 1}]})",
                "t.json", &c, &error),
            PLX_SUCCESS)
      << error;
  EXPECT_EQ(c.hosts[0].memory_bytes(), UINT64_MAX);
}

// write_text_file writes through a temporary file and a rename: whatever is at the path must be
// a regular file (or nothing), or it is refused and left as it was.
TEST(WriteTextFile, RefusesToReplaceWhatIsNotARegularFile) {
  TempDir dir("plexus-topo-write");
  ASSERT_FALSE(dir.path().empty());
  std::string error;
  const std::string plain = dir.path() + "/plain.json";
  ASSERT_EQ(write_text_file(plain, "one\n", &error), PLX_SUCCESS) << error;
  ASSERT_EQ(write_text_file(plain, "two\n", &error), PLX_SUCCESS) << error;  // replaced
  std::ifstream in(plain);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "two");

  const std::string link = dir.path() + "/link.json";
  ASSERT_EQ(::symlink(plain.c_str(), link.c_str()), 0);
  EXPECT_EQ(write_text_file(link, "x", &error), PLX_ERROR_SYSTEM);
  EXPECT_EQ(error, link + ": cannot be written: '" + link +
                       "' exists and is a symbolic link (give the file it points to); refusing "
                       "to replace it");
  struct stat st {};
  ASSERT_EQ(::lstat(link.c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));  // still the link

  const std::string fifo = dir.path() + "/fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(write_text_file(fifo, "x", &error), PLX_ERROR_SYSTEM);
  EXPECT_EQ(error, fifo + ": cannot be written: '" + fifo +
                       "' exists and is a FIFO; refusing to replace it");
  ASSERT_EQ(::lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));

  EXPECT_EQ(write_text_file(dir.path(), "x", &error), PLX_ERROR_SYSTEM);
  EXPECT_EQ(error, dir.path() + ": cannot be written: '" + dir.path() +
                       "' exists and is a folder; refusing to replace it");

  // A character device (refused before anything is created or written).
  EXPECT_EQ(write_text_file("/dev/null", "x", &error), PLX_ERROR_SYSTEM);
  EXPECT_EQ(error, "/dev/null: cannot be written: '/dev/null' exists and is a character device; "
                   "refusing to replace it");
  ASSERT_EQ(::lstat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
}

TEST(OutputPath, FolderChecks) {
  TempDir dir("plexus-output-path");
  ASSERT_FALSE(dir.path().empty());
  const std::string file = dir.path() + "/file";
  std::ofstream(file) << "x";
  EXPECT_EQ(output_file_problem(dir.path() + "/new.json"), "");
  EXPECT_EQ(output_file_problem(file), "");  // a regular file is replaced
  EXPECT_EQ(output_file_problem(dir.path() + "/missing/new.json"),
            "'" + dir.path() + "/missing/new.json': folder '" + dir.path() +
                "/missing' cannot be used: No such file or directory");
  EXPECT_EQ(output_file_problem(dir.path() + "/missing/deeper/new.json", true), "");
  EXPECT_EQ(output_file_problem(file + "/new.json"),
            "'" + file + "/new.json': a part of its folder is not a folder");
  EXPECT_EQ(output_file_problem(file + "/sub/new.json", true),
            "'" + file + "/sub/new.json': a part of its folder is not a folder");
  EXPECT_EQ(output_file_problem(dir.path()),
            "'" + dir.path() + "' exists and is a folder; refusing to replace it");
  EXPECT_EQ(output_file_problem(dir.path() + "/"),
            "'" + dir.path() + "/' names a folder, not a file");
}

TEST(Malformed, LongAndDeepValuesAreCut) {
  // As deep as a topology may nest (deeper is refused before parsing: DeepNestingIsRefused...).
  std::string deep = std::string(62, '[') + std::string(62, ']');
  EXPECT_EQ(parse_error(R"({"plexus_topology": 1, "hosts": [)" + deep + "]}"),
            "t.json: hosts[0]: expected an object, got [[[[...]]]]");
  std::string key(1000, 'k');
  EXPECT_EQ(parse_error(R"({"plexus_topology": 1, ")" + key + R"(": 1})"),
            "t.json: unknown key \"" + std::string(36, 'k') +
                "... (known keys: plexus_topology, host_id, "
                "hostname, description, packages, numa_nodes, caches, pci_devices, gpus, nics, "
                "nvlink_known, "
                "nvlink_note)");
}

TEST(Malformed, FilesThatAreNotTopologies) {
  TempDir dir("plexus-topo-test");
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir.path() + "/" + name) << text;
    return dir.path() + "/" + name;
  };
  ClusterTopology c;
  std::string error;
  std::string bogus =
      write("bogus.xml", "<topology version=\"2.0\"><object type=\"Bogus\"/></topology>\n");
  EXPECT_EQ(read_topology_file(bogus, &c, &error), PLX_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(error,
            bogus +
                ": not a valid hwloc XML topology (hwloc: Invalid argument; HWLOC_XML_VERBOSE=1 "
                "lstopo -i " +
                bogus + " says why)");
  std::string cut = write(
      "cut.xml",
      "<?xml version=\"1.0\"?>\n<topology version=\"2.0\">\n<object type=\"Machine\" os_index=");
  EXPECT_EQ(read_topology_file(cut, &c, &error), PLX_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(error,
            cut +
                ": not a valid hwloc XML topology (hwloc: Invalid argument; HWLOC_XML_VERBOSE=1 "
                "lstopo -i " +
                cut + " says why)");
  std::string nccl = write("nccl.xml", "  <system version=\"1\">\n</system>\n");
  EXPECT_EQ(read_topology_file(nccl, &c, &error), PLX_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(
      error,
      nccl +
          ": XML that is not an hwloc topology (it starts with \"<system\"; expected \"<?xml\" "
          "or \"<topology\")");
  EXPECT_EQ(read_topology_file(dir.path() + "/missing.json", &c, &error),
            PLX_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(error, dir.path() + "/missing.json: cannot be read: No such file or directory");
  EXPECT_EQ(read_topology_file(dir.path(), &c, &error), PLX_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(error, dir.path() + ": is not a regular file");
  EXPECT_EQ(read_topology_file("/dev/null", &c, &error), PLX_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(error, "/dev/null: is not a regular file");
  std::string bad = write("bad.json", "{\"plexus_topology\": 1, \"numa_nodes\": 3}");
  EXPECT_EQ(read_topology_file(bad, &c, &error), PLX_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(error, bad + ": numa_nodes: expected an array, got 3");
}

TEST(SelectHost, ByIdOrTheOnlyOne) {
  ClusterTopology cluster = load(kExamples + "/p5.48xlarge-x128.json");
  HostTopology host;
  std::string error;
  ASSERT_EQ(select_host(cluster, "p5-77", "f.json", &host, &error), PLX_SUCCESS);
  EXPECT_EQ(host.host_id, "p5-77");
  EXPECT_EQ(select_host(cluster, "vm/1234", "f.json", &host, &error), PLX_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(
      error,
      "f.json: no host has host_id \"vm/1234\" (this host's id; the file has 128 hosts: \"p5-0\", "
      "\"p5-1\", \"p5-2\", \"p5-3\", ...); set PLEXUS_HOST_ID to one of them");
  ClusterTopology one = load(kExamples + "/p4d.24xlarge.json");
  ASSERT_EQ(select_host(one, "vm/1234", "f.json", &host, &error), PLX_SUCCESS);
  EXPECT_EQ(host.host_id, "p4d");
}

TEST(PciBusId, Normalized) {
  EXPECT_EQ(normalize_pci_bus_id("00000000:C1:00.0"), "0000:c1:00.0");
  EXPECT_EQ(normalize_pci_bus_id("0000:10:1c.0"), "0000:10:1c.0");
  EXPECT_EQ(normalize_pci_bus_id("10001:0:1.7"), "10001:00:01.7");
  EXPECT_EQ(normalize_pci_bus_id("0000:10:1c.8"), std::nullopt);
  EXPECT_EQ(normalize_pci_bus_id("0000:10:20.0"), std::nullopt);
  EXPECT_EQ(normalize_pci_bus_id("000000000:10:1c.0"), std::nullopt);
  EXPECT_EQ(normalize_pci_bus_id("0000:10:1c.0 "), std::nullopt);
  EXPECT_EQ(normalize_pci_bus_id(""), std::nullopt);
}

TEST(CpuList, Sizes) {
  EXPECT_EQ(cpu_list_size(""), 0u);
  EXPECT_EQ(cpu_list_size("0"), 1u);
  EXPECT_EQ(cpu_list_size("0-23,48-71"), 48u);
  EXPECT_EQ(cpu_list_size("0,2,4-5"), 4u);
  EXPECT_EQ(cpu_list_size("3-1"), std::nullopt);
  EXPECT_EQ(cpu_list_size("0-3,2"), std::nullopt);
  EXPECT_EQ(cpu_list_size("0,"), std::nullopt);
  EXPECT_EQ(cpu_list_size("a"), std::nullopt);
  using Ranges = std::vector<std::pair<uint32_t, uint32_t>>;
  EXPECT_EQ(cpu_list_ranges("0-23,48-71"), (Ranges{{0, 23}, {48, 71}}));
  EXPECT_EQ(cpu_list_ranges("5"), (Ranges{{5, 5}}));
  EXPECT_EQ(cpu_list_ranges("0-3,2"), std::nullopt);
}

}  // namespace
}  // namespace plexus::topology
