#include "topology/topology_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "topology/settings/config_read.h"
#include "topology/host.h"
#include "topology/output_path.h"
#include "topology/topology_json.h"

namespace plexus::topology {

namespace {

plx_result_t system_error(const std::string& what, std::string* error) {
  if (error) *error = what + ": " + std::strerror(errno);
  return PLX_ERROR_SYSTEM;
}

plx_result_t read_text(const std::string& path, std::string* text, std::string* error) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    // No such file (or a path through a non-folder): the name is wrong, not the system.
    const bool missing = errno == ENOENT || errno == ENOTDIR;
    const plx_result_t rc = system_error(path + ": cannot be read", error);
    return missing ? PLX_ERROR_INVALID_ARGUMENT : rc;
  }
  if (!S_ISREG(st.st_mode)) {
    if (error) *error = path + ": is not a regular file";
    return PLX_ERROR_INVALID_ARGUMENT;  // a folder, FIFO or device: the argument is wrong
  }
  if (static_cast<uint64_t>(st.st_size) > kMaxTopologyFileBytes) {
    if (error)
      *error = path + ": is " + std::to_string(st.st_size) + " bytes, more than the " +
               std::to_string(kMaxTopologyFileBytes) + " a topology file may have";
    return PLX_ERROR_INVALID_ARGUMENT;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return system_error(path + ": cannot be read", error);
  std::ostringstream all;
  all << in.rdbuf();
  *text = all.str();
  return PLX_SUCCESS;
}

// The text after blanks and a UTF-8 byte order mark.
std::string_view content_start(std::string_view text) {
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);
  size_t first = text.find_first_not_of(" \t\r\n");
  return first == std::string_view::npos ? std::string_view() : text.substr(first);
}

}  // namespace

plx_result_t read_topology_file(const std::string& path, ClusterTopology* out, std::string* error) {
  std::string text;
  if (plx_result_t rc = read_text(path, &text, error); rc != PLX_SUCCESS) return rc;
  std::string_view start = content_start(text);
  if (start.starts_with("<?xml") || start.starts_with("<topology")) {
    HostTopology host;
    if (plx_result_t rc = read_hwloc_xml(path, &host, error); rc != PLX_SUCCESS) return rc;
    *out = ClusterTopology{"", {std::move(host)}};
    return PLX_SUCCESS;
  }
  if (start.starts_with("<")) {
    std::string_view tag = start.substr(0, std::min(start.find_first_of(" \t\r\n>"), size_t{20}));
    if (error)
      *error = path + ": XML that is not an hwloc topology (it starts with \"" + std::string(tag) +
               "\"; expected \"<?xml\" or \"<topology\")";
    return PLX_ERROR_INVALID_ARGUMENT;
  }
  return parse_topology_json(text, path, out, error);
}

plx_result_t write_text_file(const std::string& path, const std::string& text, std::string* error) {
  if (std::string why = replace_target_problem(path); !why.empty()) {
    if (error) *error = path + ": cannot be written: " + why;
    return PLX_ERROR_SYSTEM;
  }
  std::string temporary = path + ".tmp." + std::to_string(getpid());
  FILE* f = std::fopen(temporary.c_str(), "wb");
  if (f == nullptr) return system_error(path + ": cannot be written", error);
  bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  ok = std::fclose(f) == 0 && ok;
  if (!ok || std::rename(temporary.c_str(), path.c_str()) != 0) {
    int saved = errno;
    std::remove(temporary.c_str());
    errno = saved;
    return system_error(path + ": cannot be written", error);
  }
  return PLX_SUCCESS;
}

plx_result_t select_host(const ClusterTopology& cluster, const std::string& id,
                         const std::string& source, HostTopology* out, std::string* error) {
  for (const HostTopology& host : cluster.hosts)
    if (host.host_id == id) {
      *out = host;
      return PLX_SUCCESS;
    }
  if (cluster.hosts.size() == 1) {
    *out = cluster.hosts[0];
    return PLX_SUCCESS;
  }
  std::string some;
  for (size_t i = 0; i < cluster.hosts.size() && i < 4; ++i)
    some += (i ? ", \"" : "\"") + cluster.hosts[i].host_id + "\"";
  if (cluster.hosts.size() > 4) some += ", ...";
  if (error)
    *error = source + ": no host has host_id \"" + id + "\" (this host's id; the file has " +
             std::to_string(cluster.hosts.size()) + " hosts: " + some +
             "); set PLEXUS_HOST_ID to one of them";
  return PLX_ERROR_INVALID_ARGUMENT;
}

plx_result_t this_host_topology(HostTopology* out, std::string* error, std::string* origin,
                                const DiscoverOptions& options) {
  HostTopology host;
  std::string from;
  if (const std::optional<std::string> file = config_text("PLEXUS_TOPO_FILE")) {
    std::string prefix = std::string("PLEXUS_TOPO_FILE=");
    std::string why;
    ClusterTopology cluster;
    plx_result_t rc = read_topology_file(*file, &cluster, &why);
    if (rc == PLX_SUCCESS) rc = select_host(cluster, host_id(), *file, &host, &why);
    if (rc != PLX_SUCCESS) {
      if (error) *error = prefix + why;
      return rc;
    }
    from = prefix + *file;
  } else {
    if (plx_result_t rc = discover_host(&host, error, options); rc != PLX_SUCCESS) return rc;
    from = "discovered through hwloc";
  }
  if (const std::optional<std::string> dump = config_text("PLEXUS_TOPO_DUMP_FILE")) {
    std::string why;
    if (write_text_file(*dump, to_json_text(host), &why) != PLX_SUCCESS) {
      if (error) *error = std::string("PLEXUS_TOPO_DUMP_FILE=") + why;
      return PLX_ERROR_SYSTEM;
    }
  }
  if (origin) *origin = from;
  *out = std::move(host);
  return PLX_SUCCESS;
}

}  // namespace plexus::topology
