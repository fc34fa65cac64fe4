// json_write.cpp - HostTopology and ClusterTopology as JSON (topology_json.h).
#include <cstdio>
#include <nlohmann/json.hpp>

#include "topology/topology_json.h"

namespace plexus::topology {

namespace {

using Json = nlohmann::ordered_json;

std::string hex4(uint16_t value) {
  char buf[8];
  std::snprintf(buf, sizeof(buf), "%04x", value);
  return buf;
}

Json nvlink_json(const NvLinkGroup& g) {
  return Json{{"remote", to_string(g.remote)},
              {"remote_pci_bus_id", g.remote_pci_bus_id},
              {"links", g.links},
              {"version", g.version}};
}

Json host_json(const HostTopology& host, bool with_version) {
  Json j = Json::object();
  if (with_version) j["plexus_topology"] = kTopologyFormatVersion;
  j["host_id"] = host.host_id;
  j["hostname"] = host.hostname;
  j["description"] = host.description;
  j["packages"] = Json::array();
  for (const Package& p : host.packages)
    j["packages"].push_back(
        {{"os_index", p.os_index}, {"model", p.model}, {"cores", p.cores}, {"pus", p.pus}});
  j["numa_nodes"] = Json::array();
  for (const NumaNode& n : host.numa_nodes)
    j["numa_nodes"].push_back({{"os_index", n.os_index},
                               {"package", n.package},
                               {"memory_bytes", n.memory_bytes},
                               {"cores", n.cores},
                               {"pus", n.pus},
                               {"cpus", n.cpus}});
  j["caches"] = Json::array();
  for (const Cache& c : host.caches)
    j["caches"].push_back({{"level", c.level},
                           {"type", to_string(c.type)},
                           {"size_bytes", c.size_bytes},
                           {"line_bytes", c.line_bytes},
                           {"count", c.count}});
  j["pci_devices"] = Json::array();
  for (const PciDevice& d : host.pci_devices)
    j["pci_devices"].push_back({{"bus_id", d.bus_id},
                                {"vendor_id", hex4(d.vendor_id)},
                                {"device_id", hex4(d.device_id)},
                                {"class_id", hex4(d.class_id)},
                                {"numa_node", d.numa_node}});
  j["gpus"] = Json::array();
  for (const Gpu& g : host.gpus) {
    Json links = Json::array();
    for (const NvLinkGroup& group : g.nvlinks) links.push_back(nvlink_json(group));
    j["gpus"].push_back({{"name", g.name},
                         {"pci_bus_id", g.pci_bus_id},
                         {"numa_node", g.numa_node},
                         {"memory_bytes", g.memory_bytes},
                         {"os_devices", g.os_devices},
                         {"nvlinks", links}});
  }
  j["nics"] = Json::array();
  for (const Nic& n : host.nics) {
    Json nic = {{"name", n.name},
                {"kind", to_string(n.kind)},
                {"pci_bus_id", n.pci_bus_id},
                {"numa_node", n.numa_node}};
    nic["speed_mbit_per_s"] = n.speed_mbit_per_s ? Json(*n.speed_mbit_per_s) : Json(nullptr);
    j["nics"].push_back(nic);
  }
  j["nvlink_known"] = host.nvlink_known;
  j["nvlink_note"] = host.nvlink_note;
  return j;
}

// Scalars as nlohmann writes them; objects and arrays on one line with ", " and ": ".
std::string compact(const Json& j) {
  std::string s;
  if (j.is_object()) {
    for (const auto& [key, value] : j.items())
      s.append(s.empty() ? "{" : ", ").append(Json(key).dump()).append(": ").append(compact(value));
    return s.empty() ? "{}" : s + "}";
  }
  if (j.is_array()) {
    for (const Json& value : j) s.append(s.empty() ? "[" : ", ").append(compact(value));
    return s.empty() ? "[]" : s + "]";
  }
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

// A document or host object: one key per line; an array of objects one element per line (the
// hosts of a cluster written the same way, one level deeper).
std::string pretty(const Json& j, size_t indent) {
  const std::string pad(indent, ' ');
  std::string s = "{\n";
  size_t i = 0;
  for (const auto& [key, value] : j.items()) {
    s.append(pad).append("  ").append(Json(key).dump()).append(": ");
    if (value.is_array() && !value.empty() && value.front().is_object()) {
      s.append("[\n");
      for (size_t e = 0; e < value.size(); ++e) {
        s.append(pad).append("    ");
        s.append(key == "hosts" ? pretty(value[e], indent + 4) : compact(value[e]));
        s.append(e + 1 < value.size() ? ",\n" : "\n");
      }
      s.append(pad).append("  ]");
    } else {
      s.append(compact(value));
    }
    s.append(++i < j.size() ? ",\n" : "\n");
  }
  return s.append(pad).append("}");
}

}  // namespace

std::string to_json_text(const HostTopology& host) {
  return pretty(host_json(host, true), 0) + "\n";
}

std::string to_json_text(const ClusterTopology& cluster) {
  Json j = {{"plexus_topology", kTopologyFormatVersion}, {"description", cluster.description}};
  j["hosts"] = Json::array();
  for (const HostTopology& host : cluster.hosts) j["hosts"].push_back(host_json(host, false));
  return pretty(j, 0) + "\n";
}

}  // namespace plexus::topology
