// json_read.cpp - reads a topology document (topology_json.h): every field's type and range,
// unknown and missing keys, then check_host() (host_check.h); the first problem names its path.
#include <algorithm>
#include <climits>
#include <cstdio>
#include <map>
#include <new>
#include <nlohmann/json.hpp>

#include "topology/host_check.h"
#include "topology/json_depth.h"
#include "topology/pci_bus_id.h"
#include "topology/topology_json.h"

namespace plexus::topology {

namespace {

using Json = nlohmann::ordered_json;

constexpr uint64_t kMaxHosts = 65536;  // hosts in one cluster document, counts expanded
// Objects (a host, and each entry of its lists) in one cluster document, counts expanded: 65536
// hosts of 52 (an 8-GPU p5.48xlarge) fit, and a few kilobytes of "count" can no longer ask for
// gigabytes (65536 copies of a host of 100 NUMA nodes: 6.5 million objects).
constexpr uint64_t kMaxObjects = uint64_t{1} << 22;

struct SchemaError {
  std::string path;  // "" for the document itself
  std::string what;
};

[[noreturn]] void fail(const std::string& path, std::string what) {
  throw SchemaError{path, std::move(what)};
}

// Compact JSON of `v`, stopping once `out` is long enough; nesting below 3 levels is "...", so a
// hostile document of a million nested arrays costs no deep recursion.
void show(const Json& v, int depth, std::string* out) {
  if (out->size() > 40) return;
  if (!v.is_structured()) {
    std::string s = v.dump(-1, ' ', false, Json::error_handler_t::replace);
    out->append(s.substr(0, 41));
    return;
  }
  out->append(v.is_array() ? "[" : "{");
  if (depth >= 3 && !v.empty()) out->append("...");
  size_t i = 0;
  for (auto it = v.begin(); depth < 3 && it != v.end() && out->size() <= 40; ++it, ++i) {
    if (i) out->append(",");
    if (v.is_object())
      out->append(Json(it.key()).dump(-1, ' ', false, Json::error_handler_t::replace)).append(":");
    show(*it, depth + 1, out);
  }
  out->append(v.is_array() ? "]" : "}");
}

// A value as the message shows it: compact JSON, cut at 40 characters.
std::string shown(const Json& v) {
  std::string s;
  show(v, 0, &s);
  return s.size() > 40 ? s.substr(0, 37) + "..." : s;
}

std::string item(const std::string& path, size_t i) { return path + "[" + std::to_string(i) + "]"; }

// One JSON object being read. Its keys are checked against the known ones when it is made.
class Object {
 public:
  Object(const Json& j, std::string path, std::vector<std::string_view> known)
      : j_(j), path_(std::move(path)) {
    if (!j.is_object()) fail(path_, "expected an object, got " + shown(j));
    for (const auto& [key, value] : j.items()) {
      bool ok = false;
      for (std::string_view k : known) ok = ok || key == k;
      if (ok) continue;
      std::string list;
      for (std::string_view k : known) list += (list.empty() ? "" : ", ") + std::string(k);
      fail(path_, "unknown key " + shown(Json(key)) + " (known keys: " + list + ")");
    }
  }
  const std::string& path() const { return path_; }
  std::string path(std::string_view key) const {
    return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
  }
  const Json* find(std::string_view key) const {
    auto it = j_.find(key);
    return it == j_.end() ? nullptr : &*it;
  }
  const Json& need(std::string_view key, std::string_view what) const {
    const Json* v = find(key);
    if (v == nullptr)
      fail(path_, "missing key \"" + std::string(key) + "\" (" + std::string(what) + ")");
    return *v;
  }

 private:
  const Json& j_;
  std::string path_;
};

uint64_t to_uint(const Json& v, const std::string& path, uint64_t min, uint64_t max) {
  bool integer = v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0);
  std::string kind = min > 0 ? "a positive integer" : "a non-negative integer";
  if (!integer) fail(path, "expected " + kind + ", got " + shown(v));
  uint64_t value = v.get<uint64_t>();
  if (value < min) fail(path, "expected " + kind + ", got " + shown(v));
  if (value > max)
    fail(path, "expected " + kind + " up to " + std::to_string(max) + ", got " + shown(v));
  return value;
}

uint64_t get_uint(const Object& o, std::string_view key, uint64_t min = 0,
                  uint64_t max = UINT64_MAX) {
  const char* what = min > 0 ? "a positive integer" : "a non-negative integer";
  return to_uint(o.need(key, what), o.path(key), min, max);
}

uint64_t opt_uint(const Object& o, std::string_view key, uint64_t fallback,
                  uint64_t max = UINT64_MAX) {
  const Json* v = o.find(key);
  return v ? to_uint(*v, o.path(key), 0, max) : fallback;
}

int get_index(const Object& o, std::string_view key) {
  return static_cast<int>(get_uint(o, key, 0, INT_MAX));
}

// A NUMA node or package reference: an os_index, or -1 for none; -1 when absent.
int opt_ref(const Object& o, std::string_view key) {
  const Json* v = o.find(key);
  if (v == nullptr) return kNoNuma;
  if (v->is_number_integer() && !v->is_number_unsigned() && v->get<int64_t>() == -1) return kNoNuma;
  if (!v->is_number_unsigned() || v->get<uint64_t>() > INT_MAX)
    fail(o.path(key), "expected an os_index (a non-negative integer) or -1, got " + shown(*v));
  return static_cast<int>(v->get<uint64_t>());
}

std::string to_string_value(const Json& v, const std::string& path) {
  if (!v.is_string()) fail(path, "expected a string, got " + shown(v));
  return v.get<std::string>();
}

std::string get_string(const Object& o, std::string_view key) {
  return to_string_value(o.need(key, "a string"), o.path(key));
}

std::string opt_string(const Object& o, std::string_view key) {
  const Json* v = o.find(key);
  return v ? to_string_value(*v, o.path(key)) : "";
}

bool opt_bool(const Object& o, std::string_view key) {
  const Json* v = o.find(key);
  if (v == nullptr) return false;
  if (!v->is_boolean()) fail(o.path(key), "expected true or false, got " + shown(*v));
  return v->get<bool>();
}

// The array at `key` (an empty one when absent and not required).
const Json& get_array(const Object& o, std::string_view key, bool required) {
  static const Json empty = Json::array();
  const Json* v = required ? &o.need(key, "an array") : o.find(key);
  if (v == nullptr) return empty;
  if (!v->is_array()) fail(o.path(key), "expected an array, got " + shown(*v));
  return *v;
}

template <typename E>
E get_enum(const Object& o, std::string_view key,
           std::initializer_list<std::pair<const char*, E>> names) {
  std::string list;
  for (const auto& [name, value] : names)
    list += (list.empty() ? "\"" : ", \"") + std::string(name) + "\"";
  const Json& v = o.need(key, "one of " + list);
  if (v.is_string())
    for (const auto& [name, value] : names)
      if (v.get<std::string>() == name) return value;
  fail(o.path(key), "expected one of " + list + ", got " + shown(v));
}

uint16_t get_hex16(const Object& o, std::string_view key) {
  const Json& v = o.need(key, "4 hex digits");
  std::string s = v.is_string() ? v.get<std::string>() : "";
  bool ok = s.size() == 4 && s.find_first_not_of("0123456789abcdefABCDEF") == std::string::npos;
  if (!ok) fail(o.path(key), "expected 4 hex digits (\"10de\"), got " + shown(v));
  return static_cast<uint16_t>(std::stoul(s, nullptr, 16));
}

std::string bus_id_value(const Json& v, const std::string& path, bool may_be_empty) {
  if (v.is_string() && may_be_empty && v.get<std::string>().empty()) return "";
  auto id = v.is_string() ? normalize_pci_bus_id(v.get<std::string>()) : std::nullopt;
  if (!id)
    fail(path, std::string("expected a PCI bus id like \"0000:10:1c.0\"") +
                   (may_be_empty ? " or \"\"" : "") + ", got " + shown(v));
  return *id;
}

std::string get_bus_id(const Object& o, std::string_view key) {
  return bus_id_value(o.need(key, "a PCI bus id"), o.path(key), false);
}

std::string opt_bus_id(const Object& o, std::string_view key) {
  const Json* v = o.find(key);
  return v ? bus_id_value(*v, o.path(key), true) : "";
}

Package read_package(const Json& j, const std::string& path) {
  Object o(j, path, {"os_index", "model", "cores", "pus"});
  Package p;
  p.os_index = get_index(o, "os_index");
  p.model = opt_string(o, "model");
  p.cores = static_cast<uint32_t>(get_uint(o, "cores", 0, UINT32_MAX));
  p.pus = static_cast<uint32_t>(get_uint(o, "pus", 0, UINT32_MAX));
  return p;
}

NumaNode read_numa_node(const Json& j, const std::string& path) {
  Object o(j, path, {"os_index", "package", "memory_bytes", "cores", "pus", "cpus"});
  NumaNode n;
  n.os_index = get_index(o, "os_index");
  n.package = opt_ref(o, "package");
  n.memory_bytes = get_uint(o, "memory_bytes");
  n.cores = static_cast<uint32_t>(get_uint(o, "cores", 0, UINT32_MAX));
  n.pus = static_cast<uint32_t>(get_uint(o, "pus", 0, UINT32_MAX));
  n.cpus = opt_string(o, "cpus");
  return n;
}

Cache read_cache(const Json& j, const std::string& path) {
  Object o(j, path, {"level", "type", "size_bytes", "line_bytes", "count"});
  Cache c;
  c.level = static_cast<uint32_t>(get_uint(o, "level", 1, 16));
  c.type = get_enum<CacheType>(o, "type",
                               {{"unified", CacheType::Unified},
                                {"data", CacheType::Data},
                                {"instruction", CacheType::Instruction}});
  c.size_bytes = get_uint(o, "size_bytes");
  c.line_bytes = static_cast<uint32_t>(opt_uint(o, "line_bytes", 0, UINT32_MAX));
  c.count = static_cast<uint32_t>(get_uint(o, "count", 1, UINT32_MAX));
  return c;
}

PciDevice read_pci_device(const Json& j, const std::string& path) {
  Object o(j, path, {"bus_id", "vendor_id", "device_id", "class_id", "numa_node"});
  PciDevice d;
  d.bus_id = get_bus_id(o, "bus_id");
  d.vendor_id = get_hex16(o, "vendor_id");
  d.device_id = get_hex16(o, "device_id");
  d.class_id = get_hex16(o, "class_id");
  d.numa_node = opt_ref(o, "numa_node");
  return d;
}

NvLinkGroup read_nvlink(const Json& j, const std::string& path) {
  Object o(j, path, {"remote", "remote_pci_bus_id", "links", "version"});
  NvLinkGroup g;
  g.remote = get_enum<NvLinkRemote>(o, "remote",
                                    {{"gpu", NvLinkRemote::Gpu},
                                     {"switch", NvLinkRemote::Switch},
                                     {"cpu", NvLinkRemote::Cpu},
                                     {"unknown", NvLinkRemote::Unknown}});
  g.remote_pci_bus_id = opt_bus_id(o, "remote_pci_bus_id");
  g.links = static_cast<uint32_t>(get_uint(o, "links", 1, UINT32_MAX));
  g.version = static_cast<uint32_t>(opt_uint(o, "version", 0, UINT32_MAX));
  return g;
}

Gpu read_gpu(const Json& j, const std::string& path) {
  Object o(j, path, {"name", "pci_bus_id", "numa_node", "memory_bytes", "os_devices", "nvlinks"});
  Gpu g;
  g.name = opt_string(o, "name");
  g.pci_bus_id = get_bus_id(o, "pci_bus_id");
  g.numa_node = opt_ref(o, "numa_node");
  g.memory_bytes = opt_uint(o, "memory_bytes", 0);
  const Json& names = get_array(o, "os_devices", false);
  for (size_t i = 0; i < names.size(); ++i)
    g.os_devices.push_back(to_string_value(names[i], item(o.path("os_devices"), i)));
  const Json& links = get_array(o, "nvlinks", false);
  for (size_t i = 0; i < links.size(); ++i)
    g.nvlinks.push_back(read_nvlink(links[i], item(o.path("nvlinks"), i)));
  return g;
}

Nic read_nic(const Json& j, const std::string& path) {
  Object o(j, path, {"name", "kind", "pci_bus_id", "numa_node", "speed_mbit_per_s"});
  Nic n;
  n.name = get_string(o, "name");
  if (n.name.empty()) fail(o.path("name"), "expected a non-empty string, got \"\"");
  n.kind = get_enum<NicKind>(o, "kind",
                             {{"network", NicKind::Network},
                              {"openfabrics", NicKind::OpenFabrics},
                              {"efa", NicKind::Efa}});
  n.pci_bus_id = opt_bus_id(o, "pci_bus_id");
  n.numa_node = opt_ref(o, "numa_node");
  const Json* speed = o.find("speed_mbit_per_s");
  if (speed != nullptr && !speed->is_null())
    n.speed_mbit_per_s = to_uint(*speed, o.path("speed_mbit_per_s"), 1, kMaxNicMbitPerS);
  return n;
}

// Reads every element of the array at `key` with `read`.
template <typename T, typename F>
std::vector<T> read_list(const Object& o, std::string_view key, bool required, F read) {
  const Json& list = get_array(o, key, required);
  std::vector<T> out;
  for (size_t i = 0; i < list.size(); ++i) out.push_back(read(list[i], item(o.path(key), i)));
  return out;
}

// Reads one host object. `count` is null for a host document, where "count" is unknown.
HostTopology read_host(const Json& j, const std::string& path, uint64_t* count) {
  std::vector<std::string_view> keys = {"host_id",    "hostname",     "description", "packages",
                                        "numa_nodes", "caches",       "pci_devices", "gpus",
                                        "nics",       "nvlink_known", "nvlink_note"};
  keys.insert(keys.begin(), count ? "count" : "plexus_topology");
  Object o(j, path, keys);
  HostTopology h;
  h.host_id = opt_string(o, "host_id");
  if (o.find("host_id") && h.host_id.empty())
    fail(o.path("host_id"), "expected a non-empty string, got \"\"");
  for (size_t i = 0; i < h.host_id.size(); ++i) {
    const auto c = static_cast<unsigned char>(h.host_id[i]);
    if (c < 0x20 || c == 0x7f) {
      char code[8];
      std::snprintf(code, sizeof code, "0x%02x", c);
      fail(o.path("host_id"), std::string("contains the control character ") + code +
                                  " at byte " + std::to_string(i) +
                                  " (host ids are printed and compared as text)");
    }
  }
  h.hostname = opt_string(o, "hostname");
  h.description = opt_string(o, "description");
  h.packages = read_list<Package>(o, "packages", false, read_package);
  h.numa_nodes = read_list<NumaNode>(o, "numa_nodes", true, read_numa_node);
  h.caches = read_list<Cache>(o, "caches", false, read_cache);
  h.pci_devices = read_list<PciDevice>(o, "pci_devices", false, read_pci_device);
  h.gpus = read_list<Gpu>(o, "gpus", false, read_gpu);
  h.nics = read_list<Nic>(o, "nics", false, read_nic);
  h.nvlink_known = opt_bool(o, "nvlink_known");
  h.nvlink_note = opt_string(o, "nvlink_note");
  if (count) {
    const Json* v = o.find("count");
    *count = v ? to_uint(*v, o.path("count"), 1, kMaxHosts) : 1;
  }
  if (std::optional<HostProblem> problem = check_host(h))
    fail(problem->path.empty() ? path
         : path.empty()        ? problem->path
                               : path + "." + problem->path,
         problem->what);
  return h;
}

// The host and each entry of its lists (a GPU's NVLinks and OS devices included).
uint64_t object_count(const HostTopology& h) {
  uint64_t n = 1 + h.packages.size() + h.numa_nodes.size() + h.caches.size() +
               h.pci_devices.size() + h.gpus.size() + h.nics.size();
  for (const Gpu& g : h.gpus) n += g.nvlinks.size() + g.os_devices.size();
  return n;
}

// The format version comes first, so that a newer file says so rather than "unknown key".
void check_version(const Json& doc) {
  auto it = doc.find("plexus_topology");
  if (it == doc.end()) fail("", "missing key \"plexus_topology\" (the format version, 1)");
  uint64_t version = to_uint(*it, "plexus_topology", 0, UINT64_MAX);
  if (version != kTopologyFormatVersion)
    fail("plexus_topology", "version " + std::to_string(version) +
                                " is not supported (this build reads version " +
                                std::to_string(kTopologyFormatVersion) + ")");
}

ClusterTopology read_document(const Json& doc) {
  if (!doc.is_object()) fail("", "expected an object, got " + shown(doc));
  check_version(doc);
  ClusterTopology cluster;
  if (!doc.contains("hosts")) {
    HostTopology host = read_host(doc, "", nullptr);
    if (host.host_id.empty()) host.host_id = "host0";
    cluster.hosts.push_back(std::move(host));
    return cluster;
  }
  Object top(doc, "", {"plexus_topology", "description", "hosts"});
  cluster.description = opt_string(top, "description");
  const Json& hosts = get_array(top, "hosts", true);
  if (hosts.empty()) fail("hosts", "expected at least one host, got []");
  std::map<std::string, size_t> entry_of_id;
  uint64_t objects = 0;
  for (size_t i = 0; i < hosts.size(); ++i) {
    uint64_t count = 1;
    HostTopology host = read_host(hosts[i], item("hosts", i), &count);
    if (cluster.hosts.size() + count > kMaxHosts)
      fail("hosts", "more than " + std::to_string(kMaxHosts) + " hosts in all");
    objects += count * object_count(host);  // at most 65536 x what a 256 MiB file holds
    if (objects > kMaxObjects)
      fail(item("hosts", i), "count " + std::to_string(count) + " x " +
                                 std::to_string(object_count(host)) +
                                 " objects (the host and the entries of its lists) makes " +
                                 std::to_string(objects) + " objects in all, more than " +
                                 std::to_string(kMaxObjects));
    std::string base = host.host_id;
    for (uint64_t k = 0; k < count; ++k) {
      HostTopology copy = host;
      if (base.empty())
        copy.host_id = "host" + std::to_string(cluster.hosts.size());
      else if (count > 1)
        copy.host_id = base + "-" + std::to_string(k);
      auto [it, fresh] = entry_of_id.emplace(copy.host_id, i);
      if (!fresh)
        fail(item("hosts", i), "host id \"" + copy.host_id + "\" is already used by hosts[" +
                                   std::to_string(it->second) + "]");
      cluster.hosts.push_back(std::move(copy));
    }
  }
  return cluster;
}

// "syntax error while parsing object - ..." out of nlohmann's "[json.exception.parse_error.101]
// parse error at line 3, column 5: syntax error while parsing object - ...".
std::string parse_reason(const std::string& what) {
  size_t column = what.find("column ");
  size_t colon = what.find(": ", column == std::string::npos ? 0 : column);
  return colon == std::string::npos ? what : what.substr(colon + 2);
}

// Line and column (1-based) of the byte nlohmann stopped at (`byte` bytes read).
std::string where(std::string_view text, size_t byte) {
  std::string_view read = text.substr(0, std::min(byte, text.size()));
  size_t line = 1 + static_cast<size_t>(std::count(read.begin(), read.end(), '\n'));
  size_t last_newline = read.rfind('\n');
  size_t column = last_newline == std::string_view::npos ? byte : byte - last_newline - 1;
  return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

}  // namespace

plx_result_t parse_topology_json(std::string_view text, const std::string& name,
                                 ClusterTopology* out, std::string* error) {
  std::string message;
  plx_result_t code = PLX_ERROR_INVALID_ARGUMENT;
  if (json_nesting_depth(text) > kMaxJsonDepth) {
    if (error) {
      *error = name + ": arrays and objects nest deeper than " + std::to_string(kMaxJsonDepth) +
               " levels";
    }
    return PLX_ERROR_INVALID_ARGUMENT;
  }
  try {
    Json doc = Json::parse(text.begin(), text.end());
    ClusterTopology cluster = read_document(doc);
    *out = std::move(cluster);
    return PLX_SUCCESS;
  } catch (const Json::parse_error& e) {
    message = name + ": " + where(text, e.byte) + ": " + parse_reason(e.what());
  } catch (const SchemaError& e) {
    message = name + ": " + (e.path.empty() ? "" : e.path + ": ") + e.what;
  } catch (const std::bad_alloc&) {
    code = PLX_ERROR_SYSTEM;
    message = name + ": out of memory while reading the topology";
  } catch (const std::exception& e) {
    message = name + ": " + e.what();
  }
  if (error) *error = message;
  return code;
}

}  // namespace plexus::topology
