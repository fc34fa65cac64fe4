#include "tools/plexus-topo/print_tree.h"

#include <cstdio>
#include <set>
#include <string>

#include "tools/plexus-topo/format.h"

namespace plexus::topo_tool {

using namespace plexus::topology;

namespace {

std::string plural(uint64_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

std::string cache_name(const Cache& c) {
  std::string name = std::string("L").append(std::to_string(c.level));
  if (c.type == CacheType::Data) name += "d";
  if (c.type == CacheType::Instruction) name += "i";
  return name + " " + format_bytes(c.size_bytes) + " x" + std::to_string(c.count);
}

std::string nvlink_text(const NvLinkGroup& g) {
  std::string to = g.remote == NvLinkRemote::Switch ? "NVSwitch"
                   : g.remote == NvLinkRemote::Gpu  ? "GPU " + printable(g.remote_pci_bus_id)
                   : g.remote == NvLinkRemote::Cpu  ? "CPU"
                                                    : "unknown " + printable(g.remote_pci_bus_id);
  std::string version = g.version ? " NVLink " + std::to_string(g.version) : " NVLink";
  return plural(g.links, "link", "links") + version + " to " + to;
}

void print_gpu(FILE* out, const Gpu& g, const char* indent) {
  std::string line =
      std::string(indent) + "GPU " + printable(g.pci_bus_id) + " " + (g.name.empty() ? "(unnamed)" : printable(g.name));
  if (g.memory_bytes) line += ", " + format_bytes(g.memory_bytes);
  for (const NvLinkGroup& group : g.nvlinks) line += "; " + nvlink_text(group);
  std::fprintf(out, "%s\n", line.c_str());
}

void print_nic(FILE* out, const Nic& n, const char* indent) {
  std::string speed = n.speed_mbit_per_s ? format_mbit(*n.speed_mbit_per_s) : "speed unknown";
  std::string bus = n.pci_bus_id.empty() ? "" : ", " + printable(n.pci_bus_id);
  std::fprintf(out, "%sNIC %s (%s%s, %s)\n", indent, printable(n.name).c_str(),
               std::string(to_string(n.kind)).c_str(), bus.c_str(), speed.c_str());
}

// The devices placed on NUMA node `numa` (kNoNuma: those with no known node).
void print_devices(FILE* out, const HostTopology& host, int numa, const char* indent,
                   const TreeOptions& options) {
  std::set<std::string> named;  // bus ids shown as a GPU or a NIC
  for (const Gpu& g : host.gpus) {
    named.insert(g.pci_bus_id);
    if (g.numa_node == numa) print_gpu(out, g, indent);
  }
  for (const Nic& n : host.nics) {
    if (!n.pci_bus_id.empty()) named.insert(n.pci_bus_id);
    if (n.numa_node == numa) print_nic(out, n, indent);
  }
  size_t others = 0;
  for (const PciDevice& d : host.pci_devices) {
    if (d.numa_node != numa || named.count(d.bus_id)) continue;
    ++others;
    if (!options.list_pci) continue;
    std::string name = pci_class_name(d.class_id);
    std::fprintf(out, "%sPCI %s %04x:%04x class %04x%s%s%s\n", indent, printable(d.bus_id).c_str(),
                 d.vendor_id, d.device_id, d.class_id, name.empty() ? "" : " (", name.c_str(),
                 name.empty() ? "" : ")");
  }
  if (others && !options.list_pci)
    std::fprintf(out, "%s%s (--pci lists them)\n", indent,
                 plural(others, "other PCI device", "other PCI devices").c_str());
}

void print_numa(FILE* out, const HostTopology& host, const NumaNode& n, const char* indent,
                const std::string& child_indent, const TreeOptions& options) {
  std::fprintf(out, "%sNUMA node %d: %s, %s, %s%s%s\n", indent, n.os_index,
               format_bytes(n.memory_bytes).c_str(), plural(n.cores, "core", "cores").c_str(),
               plural(n.pus, "PU", "PUs").c_str(), n.cpus.empty() ? "" : ", cpus ", printable(n.cpus).c_str());
  print_devices(out, host, n.os_index, child_indent.c_str(), options);
}

}  // namespace

void print_host_tree(FILE* out, const HostTopology& host, const TreeOptions& options) {
  bool show_name = !host.hostname.empty() && host.hostname != host.host_id;
  std::string name = show_name ? " (hostname " + printable(host.hostname) + ")" : "";
  std::fprintf(out, "host %s%s\n", printable(host.host_id).c_str(), name.c_str());
  if (!host.description.empty()) std::fprintf(out, "  %s\n", printable(host.description).c_str());
  std::fprintf(
      out, "  %s, %s, %s in %s; %s, %s\n", plural(host.core_count(), "core", "cores").c_str(),
      plural(host.pu_count(), "PU", "PUs").c_str(), format_bytes(host.memory_bytes()).c_str(),
      plural(host.numa_nodes.size(), "NUMA node", "NUMA nodes").c_str(),
      plural(host.gpus.size(), "GPU", "GPUs").c_str(),
      plural(host.nics.size(), "NIC", "NICs").c_str());
  if (!host.caches.empty()) {
    std::string line;
    for (const Cache& c : host.caches) line.append(line.empty() ? "" : ", ").append(cache_name(c));
    std::fprintf(out, "  caches: %s\n", line.c_str());
  }
  for (const Package& p : host.packages) {
    std::fprintf(out, "  package %d: %s (%s, %s)\n", p.os_index,
                 p.model.empty() ? "(model unknown)" : printable(p.model).c_str(),
                 plural(p.cores, "core", "cores").c_str(), plural(p.pus, "PU", "PUs").c_str());
    for (const NumaNode& n : host.numa_nodes)
      if (n.package == p.os_index) print_numa(out, host, n, "    ", "      ", options);
  }
  for (const NumaNode& n : host.numa_nodes)
    if (n.package == kNoNuma) print_numa(out, host, n, "  ", "    ", options);
  bool any = false;  // devices with no known NUMA node get a heading of their own
  for (const Gpu& g : host.gpus) any = any || g.numa_node == kNoNuma;
  for (const Nic& n : host.nics) any = any || n.numa_node == kNoNuma;
  for (const PciDevice& d : host.pci_devices) any = any || d.numa_node == kNoNuma;
  if (any) {
    std::fprintf(out, "  devices with no known NUMA node:\n");
    print_devices(out, host, kNoNuma, "    ", options);
  }
  if (!host.gpus.empty() || !host.nvlink_note.empty()) {
    std::string note = host.nvlink_note.empty() ? "" : " (" + printable(host.nvlink_note) + ")";
    std::fprintf(out, "  NVLink: %s%s\n", host.nvlink_known ? "known" : "not known", note.c_str());
  }
}

void print_cluster_tree(FILE* out, const ClusterTopology& cluster, const TreeOptions& options) {
  if (!cluster.description.empty()) std::fprintf(out, "%s\n", printable(cluster.description).c_str());
  for (size_t i = 0; i < cluster.hosts.size();) {
    size_t end = i + 1;
    while (end < cluster.hosts.size() && cluster.hosts[end].same_hardware(cluster.hosts[i])) ++end;
    if (end - i > 1)
      std::fprintf(out, "hosts %s .. %s: %zu hosts with the same hardware; the first:\n",
                   printable(cluster.hosts[i].host_id).c_str(),
                   printable(cluster.hosts[end - 1].host_id).c_str(),
                   end - i);
    print_host_tree(out, cluster.hosts[i], options);
    i = end;
  }
}

}  // namespace plexus::topo_tool
