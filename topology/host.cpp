#include "topology/host.h"

#include <hwloc.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>

#include "topology/settings/config_read.h"

namespace plexus::topology {

std::string host_id() {
  if (std::optional<std::string> forced = config_text("PLEXUS_HOST_ID")) return *forced;
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) name[0] = '\0';
  std::string boot;
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::getline(in, boot);
  return std::string(name) + "/" + boot;
}

namespace {
int count_objects(hwloc_obj_type_t type) {
  hwloc_topology_t topo;
  if (hwloc_topology_init(&topo) != 0) return 0;
  int n = 0;
  if (hwloc_topology_load(topo) == 0) n = hwloc_get_nbobjs_by_type(topo, type);
  hwloc_topology_destroy(topo);
  return n;
}
}  // namespace

int physical_core_count() {
  int cores = count_objects(HWLOC_OBJ_CORE);
  if (cores < 1) cores = allowed_pu_count();
  return cores < 1 ? 1 : cores;
}

int threads_per_rank(int ranks_on_host) {
  return std::max(1, physical_core_count() / std::max(1, ranks_on_host));
}

int allowed_pu_count() {
  int pus = count_objects(HWLOC_OBJ_PU);
  if (pus < 1) pus = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  return pus < 1 ? 1 : pus;
}

}  // namespace plexus::topology
